"""bench/preempt.py prints the documented JSON keys, and its cluster is full of takeable
work: the preemptors placed evict running jobs, elastic surplus first; bench/preempt_backlog.py
prints both runs (shipped and plain), and they decide the same (timings are not tested)."""

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


BACKLOG = BENCH.parent / "preempt_backlog.py"
SAMPLE = BENCH.parents[1] / "examples" / "traces" / "philly-sample.csv"


def test_backlog_bench_prints_both_runs_and_evicts_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    module = runpy.run_path(str(BACKLOG))
    assert module["main"](["--nodes", "30", "--waiting", "40", "--cycles", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("first_cycle_cpu_seconds", "steady_cycle_cpu_seconds",
                "plain_steady_cycle_cpu_seconds", "steady_cycle_plain_vs_shipped"):
        assert key in out
    assert out["waiting_jobs"] == 40 and out["takeable_jobs"] == 3
    # Every waiting job may take the `low` jobs, and all of them together are too few.
    assert out["evictions"] == out["evictions_plain"] == 0


def test_philly_bench_replays_both_ways_and_finds_them_identical(
        capsys: pytest.CaptureFixture[str]) -> None:
    module = runpy.run_path(str(BACKLOG))
    assert module["main"](["--case", "philly", "--trace", str(SAMPLE), "--jobs", "60",
                           "--cluster", "4x8", "--cpu-limit", "120"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["profile"] == "las" and out["jobs"] == 60
    assert out["shipped"]["jobs"] == out["plain"]["jobs"] == 60
    assert out["identical"] is True
    assert out["shipped"]["preemptions"] == out["plain"]["preemptions"] > 0
