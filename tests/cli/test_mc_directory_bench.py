"""bench/mc_directory.py drives the same jobs with file-declared and API-declared members
and prints the documented JSON keys (its timings are not tested)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "mc_directory.py"


def test_the_directory_bench_prints_one_json_object(capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    module = runpy.run_path(str(BENCH))
    assert module["main"](["--jobs", "4", "--members", "2", "--passes", "1",
                           "--declared", "5"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["jobs"], out["members"], out["declared"]) == (4, 2, 5)
    assert (out["file_jobs_kept"], out["api_jobs_kept"]) == (4, 4)
    for key in ("file_step_wall_s", "file_step_cpu_s", "api_step_wall_s", "api_step_cpu_s",
                "current_wall_ms", "current_cpu_ms"):
        assert out[key] >= 0
    assert "api_step_cpu_ratio_to_file" in out
