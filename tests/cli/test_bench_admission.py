"""bench/admission.py runs in-process and prints the documented JSON keys; every request it
times answered 2xx (it exits otherwise). Its timings are not tested."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "admission.py"


def test_admission_bench_prints_one_json_object() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--tasks", "300", "--rounds", "1",
                           "--jobs", "120"], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for key in ("submit_ms", "list_ms", "get_ms", "tasks_page_ms", "delete_ms",
                "many_first_page_ms", "many_deep_page_ms", "many_state_page_ms",
                "many_get_ms", "list_bytes", "get_bytes", "submit_one_task_ms",
                "submit_cpu_ms", "submit_one_task_cpu_ms", "list_cpu_ms",
                "submit_cpu_ratio_to_one_task"):
        assert out[key] > 0, key
    assert (out["tasks"], out["jobs"]) == (300, 120)
