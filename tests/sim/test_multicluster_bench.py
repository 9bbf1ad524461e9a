"""bench/multicluster.py on a small slice: one JSON object per policy, `single` first, the
documented keys, and figures that agree with each other (its timings are not tested)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest
from multicluster_traces import write_itp_members

BENCH = Path(__file__).resolve().parents[2] / "bench" / "multicluster.py"
KEYS = ("policy", "mean_queueing_delay_s", "p95_queueing_delay_s", "mean_jct_s",
        "preferred_cluster_share", "wasted_gpu_seconds_fraction", "cpu_seconds",
        "wall_seconds", "vs_single_mean_queueing_delay", "queueing_delay_cut_vs_single",
        "goal_met", "members", "jobs", "finished", "gpu_seconds", "wasted_gpu_seconds")


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    folder = write_itp_members(tmp_path_factory.mktemp("itp"))
    module = runpy.run_path(str(BENCH))
    out: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("builtins.print", lambda text, **_: out.append(text))
        assert module["main"](["--traces", str(folder), "--days", "60", "--poll", "60"]) == 0
    return [json.loads(line) for line in out]


def test_one_object_per_policy_with_the_documented_keys(rows: list[dict[str, Any]]) -> None:
    assert [r["policy"] for r in rows] == ["single", "fac", "fac-priority"]
    for r in rows:
        assert set(KEYS) <= set(r), set(KEYS) - set(r)
        assert r["jobs"] == 100 and r["finished"] == r["jobs"]
        assert 0 <= r["preferred_cluster_share"] <= 1
        assert 0 <= r["wasted_gpu_seconds_fraction"] < 1
        assert r["p95_queueing_delay_s"] >= 0 and r["mean_jct_s"] > 0
        assert sum(r["by_cluster"].values()) == r["jobs"]
        assert list(r["members"]) == ["itp1", "itp2", "itp3", "itp4", "itp5"]


def test_the_figures_agree_with_each_other(rows: list[dict[str, Any]]) -> None:
    single = rows[0]
    # single keeps each job home: nothing cancelled, nothing wasted, every job on its own.
    assert (single["cancels"], single["wasted_gpu_seconds"]) == (0, 0.0)
    assert single["by_cluster"] == {f"itp{k}": 20 for k in range(1, 6)}
    assert single["vs_single_mean_queueing_delay"] in (1.0, None)
    for r in rows[1:]:
        assert r["cancels"] == 4 * r["jobs"]  # every copy but the kept one, per job
        fraction = r["wasted_gpu_seconds"] / r["gpu_seconds"]
        assert r["wasted_gpu_seconds_fraction"] == pytest.approx(fraction, abs=1e-6)
        if single["mean_queueing_delay_s"]:
            ratio = r["mean_queueing_delay_s"] / single["mean_queueing_delay_s"]
            assert r["vs_single_mean_queueing_delay"] == pytest.approx(ratio, abs=1e-4)
            assert r["queueing_delay_cut_vs_single"] == pytest.approx(1 - ratio, abs=1e-4)
        assert r["goal_met"] == (r["queueing_delay_cut_vs_single"] is not None
                                 and r["queueing_delay_cut_vs_single"] >= 0.4
                                 and r["wasted_gpu_seconds_fraction"] < 0.01)
