"""bench/cli.py prints the documented JSON keys (its timings are not tested)."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "cli.py"


def test_cli_bench_prints_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    """With a peer (here this checkout's own entry point, as a stand-in for another's)."""
    peer = Path(sys.executable).parent / "shoal"
    module = runpy.run_path(str(BENCH))
    assert module["main"](["--repeat", "1", "--peer", str(peer)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["benchmark"] == "cli" and out["repeat"] == 1 and out["goal_cpu_s"] == 0.3
    assert out["peer"] == str(peer)
    for mode in ("bytecode_cached", "no_bytecode"):
        assert out[mode]["bare_python"]["cpu_s"] >= 0
        for command in ("help", "jobs", "submit"):
            for name in (command, f"peer_{command}"):
                figures = out[mode][name]
                assert set(figures) == {"cpu_s", "wall_s", "cpu_vs_bare", "meets_goal"}
                assert figures["cpu_s"] > 0 and figures["wall_s"] > 0
            assert out[mode]["cpu_vs_peer"][command] == pytest.approx(
                out[mode][command]["cpu_s"] / out[mode][f"peer_{command}"]["cpu_s"], rel=0.01)
