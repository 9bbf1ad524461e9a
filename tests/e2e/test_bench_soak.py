"""bench/soak.py runs against a real `shoal up` (SQLite) with a few clients and prints the
documented JSON keys, with every request answered as expected (error rate 0). Its latencies
are not tested."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "soak.py"


def test_soak_bench_prints_one_json_object_without_errors() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--clients", "4", "--rounds", "3",
                           "--store", "sqlite"], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["store"] == "sqlite" and out["clients"] == 4
    assert out["requests"] == 4 * 3 * 3
    assert out["errors"] == 0 and out["error_rate"] == 0.0, out["error_kinds"]
    for key in ("submit_p50_ms", "list_p99_ms", "cancel_p99_ms", "healthz_p99_ms",
                "healthz_idle_p99_ms", "healthz_p99_ratio_to_idle", "requests_per_second",
                "wall_s", "server_cpu_s", "server_cpu_ms_per_request"):
        assert out[key] > 0, key
