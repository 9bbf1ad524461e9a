"""bench/api_path.py times submissions through the app in process and prints one JSON object;
every submission it times answered 201 (it exits otherwise). Its timings are not tested."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "api_path.py"


def test_api_path_bench_prints_one_json_object() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--jobs", "40", "--warmup", "10",
                           "--concurrency", "4"], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["benchmark"], out["jobs"], out["concurrency"]) == ("api_path", 40, 4)
    for key in ("cpu_s", "wall_s", "cpu_ms_per_submission"):
        assert out[key] > 0, key
