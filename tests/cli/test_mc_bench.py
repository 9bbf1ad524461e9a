"""bench/multicluster_spec.py prints the documented JSON keys (its timings are not tested)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "multicluster_spec.py"


def test_the_spec_bench_prints_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    module = runpy.run_path(str(BENCH))
    assert module["main"](["--clusters", "3", "--roles", "2", "--params", "2",
                           "--rounds", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["clusters"], out["roles"], out["params"]) == (3, 2, 2)
    for key in ("read", "specialise_per_copy", "shoal_copy", "load_job"):
        assert out[f"{key}_ms"] >= 0 and out[f"{key}_cpu_ms"] >= 0
    assert "specialise_cpu_ratio_to_load_job" in out
    assert "shoal_copy_cpu_ratio_to_load_job" in out
