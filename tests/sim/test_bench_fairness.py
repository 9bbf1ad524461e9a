"""bench/fairness.py --quick: one JSON object per (trace, profile) with the documented keys
and values in range, a notice for a profile this build lacks, and the same figures whether
the runs share a process or not (its timings are not tested)."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "fairness.py"

KEYS = ("benchmark", "trace", "profile", "cluster_gpus", "jobs", "finished",
        "virtual_clusters", "users", "mean_jct_s", "p95_jct_s", "jain_vc_stretch",
        "jain_user_stretch", "worst_vc_mean_queueing_delay_s", "max_rho", "frac_rho_gt_1",
        "preemptions", "lost_gpu_hours", "cpu_s", "wall_s", "events", "best_other_profile",
        "mean_jct_vs_best_other", "meets_goal")

#: Differ from run to run: left out when two runs are compared.
TIMINGS = ("cpu_s", "wall_s")


def rows_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_quick_prints_one_object_per_trace_and_profile(
        capsys: pytest.CaptureFixture[str]) -> None:
    module = runpy.run_path(str(BENCH))
    assert module["main"](["--quick", "--profiles", "default,las,no-such-profile"]) == 0
    captured = capsys.readouterr()
    assert "skip: 'no-such-profile' is not a built-in profile" in captured.err
    rows = rows_of(captured.out)
    assert [(r["trace"], r["profile"]) for r in rows] == [
        ("philly", "default"), ("philly", "las"), ("itp", "default"), ("itp", "las")]
    by = {(r["trace"], r["profile"]): r for r in rows}
    for r in rows:
        assert set(KEYS) <= set(r), set(KEYS) - set(r)
        assert r["jobs"] == r["finished"] == (200 if r["trace"] == "philly" else 100)
        assert 0 < r["jain_vc_stretch"] <= 1
        assert r["jain_user_stretch"] is None and r["users"] == 0  # no users in these traces
        assert r["mean_jct_s"] > 0 and r["p95_jct_s"] > 0
        assert r["worst_vc_mean_queueing_delay_s"] >= 0
        assert r["max_rho"] > 0 and 0 <= r["frac_rho_gt_1"] <= 1
        assert r["preemptions"] >= 0 and r["cpu_s"] >= 0 and r["wall_s"] > 0
        other = by[(r["trace"], "las" if r["profile"] == "default" else "default")]
        assert r["best_other_profile"] == other["profile"]
        assert r["mean_jct_vs_best_other"] == pytest.approx(
            r["mean_jct_s"] / other["mean_jct_s"], rel=1e-3)
    # Philly's sample has 5 virtual clusters; ITP one, whose index is 1 by construction
    assert by[("philly", "default")]["virtual_clusters"] == 5
    assert all(by[("itp", p)]["virtual_clusters"] == 1 for p in ("default", "las"))
    assert all(by[("itp", p)]["jain_vc_stretch"] == 1.0 for p in ("default", "las"))
    assert all(by[("itp", p)]["meets_goal"] is None for p in ("default", "las"))
    assert all(isinstance(by[("philly", p)]["meets_goal"], bool) for p in ("default", "las"))


def test_workers_give_the_same_figures_as_one_process() -> None:
    args = [sys.executable, str(BENCH), "--quick", "--traces", "itp",
            "--profiles", "default,las"]
    apart = subprocess.run([*args, "--workers", "2"], capture_output=True, text=True,
                           check=True, timeout=300)
    together = subprocess.run(args, capture_output=True, text=True, check=True, timeout=300)
    strip = [{k: v for k, v in r.items() if k not in TIMINGS}
             for r in rows_of(apart.stdout)]
    assert len(strip) == 2
    assert strip == [{k: v for k, v in r.items() if k not in TIMINGS}
                     for r in rows_of(together.stdout)]


def test_unknown_trace_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    module = runpy.run_path(str(BENCH))
    with pytest.raises(SystemExit, match="unknown trace"):
        module["main"](["--quick", "--traces", "nowhere"])
