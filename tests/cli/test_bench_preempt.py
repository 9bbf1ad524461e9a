"""bench/preempt.py prints the documented JSON keys, and its cluster is full of takeable
work: the preemptors placed evict running jobs, elastic surplus first (its timings are not
tested)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "preempt.py"


def test_preempt_bench_prints_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    module = runpy.run_path(str(BENCH))
    assert module["main"](["--nodes", "20", "--waiting", "20", "--repeat", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("nodes", "waiting_jobs", "placements", "evictions", "surplus_evictions",
                "cycle_seconds", "default_cycle_seconds", "vs_default", "cycle_vs_calibration",
                "scaling_ratio"):
        assert key in out
    assert out["nodes"] == 20 and out["waiting_jobs"] == 20
    assert out["placements"] > 0 and out["evictions"] > 0
    assert 0 < out["surplus_evictions"] <= out["evictions"]
