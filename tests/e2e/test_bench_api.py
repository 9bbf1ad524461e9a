"""bench/api.py runs against a real `shoal up` and prints the documented JSON keys; every
submission it times was accepted (it exits otherwise). Its rates are not tested."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "api.py"


def test_api_bench_prints_one_json_object() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--submissions", "20",
                           "--latency-jobs", "2"], capture_output=True, text=True,
                          timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for key in ("submissions_per_second", "yaml_submissions_per_second",
                "client_submissions_per_second", "health_checks_per_second",
                "submission_vs_health", "submit_to_running_p50_ms",
                "submit_to_running_p99_ms"):
        assert out[key] > 0, key
    assert out["submissions"] == 20 and out["latency_jobs"] == 2
