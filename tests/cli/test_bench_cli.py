"""bench/cli.py prints the documented JSON keys (its timings are not tested)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "cli.py"


def test_cli_bench_prints_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    module = runpy.run_path(str(BENCH))
    assert module["main"](["--repeat", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["benchmark"] == "cli" and out["repeat"] == 1 and out["goal_cpu_s"] == 0.3
    for mode in ("bytecode_cached", "no_bytecode"):
        assert out[mode]["bare_python"]["cpu_s"] >= 0
        for command in ("help", "jobs", "submit"):
            figures = out[mode][command]
            assert set(figures) == {"cpu_s", "wall_s", "cpu_vs_bare", "meets_goal"}
            assert figures["cpu_s"] > 0 and figures["wall_s"] > 0
