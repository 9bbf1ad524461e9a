"""bench/cycle.py prints the documented JSON keys (its timings are not tested)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "cycle.py"


def test_cycle_bench_prints_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    module = runpy.run_path(str(BENCH))
    assert module["main"](["--nodes", "20", "--jobs", "100", "--repeat", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("nodes", "pending_jobs", "placements", "cycle_seconds",
                "placements_per_second", "cycle_vs_calibration", "scaling_ratio"):
        assert key in out
    assert out["nodes"] == 20 and out["pending_jobs"] == 100
    assert 0 < out["placements"] <= 20 * 8  # never more tasks than GPUs (all tasks use GPUs)
