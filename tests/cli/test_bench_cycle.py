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


def test_backlog_case_reports_both_cycles(capsys: pytest.CaptureFixture[str]) -> None:
    module = runpy.run_path(str(BENCH))
    assert module["main"](["--case", "backlog", "--nodes", "20", "--jobs", "200",
                           "--repeat", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["case"] == "backlog" and out["waiting_jobs"] == 200
    assert out["running_nodes"] == 10
    for mode in ("decide", "close", "replace", "report"):
        for key in ("first_cycle_cpu_seconds", "unchanged_cycle_cpu_seconds",
                    "one_node_freed_cycle_cpu_seconds"):
            assert out[f"{mode}_{key}"] >= 0
    # A freed 8-GPU node takes waiting work, the same with or without reasons written.
    assert out["decide_binds_after_frees"] == out["close_binds_after_frees"] \
        == out["replace_binds_after_frees"] == out["report_binds_after_frees"] > 0
    assert "one_node_freed_replace_vs_report" in out


def test_backlog_case_under_fifo_counts_the_jobs_a_report_visits(
        capsys: pytest.CaptureFixture[str]) -> None:
    module = runpy.run_path(str(BENCH))
    assert module["main"](["--case", "backlog", "--profile", "fifo", "--nodes", "20",
                           "--jobs", "200", "--repeat", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    # Strict FIFO's line behind its blocked head is one span: a quiet report looks at the
    # head alone, not at the 200 jobs that wait.
    assert out["report_unchanged_jobs_visited"] <= 1
    assert 0 < out["report_one_node_freed_jobs_visited"] <= 200 + 10
