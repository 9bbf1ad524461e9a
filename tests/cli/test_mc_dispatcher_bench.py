"""bench/mc_dispatcher.py drives its jobs to a steady state and prints the documented JSON
keys (its timings are not tested)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "mc_dispatcher.py"


def test_the_dispatcher_bench_prints_one_json_object(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    module = runpy.run_path(str(BENCH))
    assert module["main"](["--jobs", "4", "--members", "2", "--passes", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["jobs"], out["members"], out["jobs_kept"]) == (4, 2, 4)
    for key in ("step_wall_s", "step_cpu_s", "decide_only_wall_s", "decide_only_cpu_s"):
        assert out[key] >= 0
    assert "step_cpu_ratio_to_decide" in out
