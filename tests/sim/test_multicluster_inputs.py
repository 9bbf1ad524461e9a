"""The what-if's members from ITP files: sized for the largest gang and the stated
utilisation, one member per file with the plan's GPU type and priority, jobs named by home."""

from __future__ import annotations

from pathlib import Path

import pytest
from multicluster_traces import write_itp_members

from shoal.api import Resources
from shoal.sim.multicluster_inputs import DAY, ITP_PLAN, itp_inputs, nodes_for, split_trace
from shoal.sim.trace import Trace, TraceJob


def trace(*jobs: tuple[int, float]) -> Trace:
    return Trace(tuple(TraceJob(f"j{i}", 0.0, duration, 1, Resources.of(gpu=gpus))
                       for i, (gpus, duration) in enumerate(jobs)), "t")


@pytest.mark.parametrize(("jobs", "utilisation", "want"), [
    # 64 GPUs for a day over a one-day window at 0.5: 128 GPUs, 16 nodes.
    (((64, DAY),), 0.5, 16),
    # A 64-GPU gang of one second needs 8 nodes however light the load.
    (((64, 1.0),), 0.85, 8),
    # 8 GPUs for half a day at 1.0: 4 GPUs busy on average, one node.
    (((8, DAY / 2),), 1.0, 1),
    ((), 0.85, 1),
])
def test_nodes_cover_the_largest_gang_and_the_stated_utilisation(
        jobs: tuple[tuple[int, float], ...], utilisation: float, want: int) -> None:
    assert nodes_for(trace(*jobs), DAY, utilisation) == want


def test_utilisation_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match=r"utilisation: must be in \(0, 1\]"):
        nodes_for(trace(), DAY, 1.5)


def test_each_file_is_a_member_and_the_home_of_its_jobs(tmp_path: Path) -> None:
    inputs = itp_inputs(write_itp_members(tmp_path), days=60, jobs_per_member=3)
    assert [(m.cluster.alias, m.cluster.gpu_type, m.cluster.priority) for m in inputs.members] \
        == [(p.alias, p.gpu_type, p.priority) for p in ITP_PLAN]
    assert len(inputs.jobs) == 15
    for j in inputs.jobs:
        assert j.job.name.startswith(f"{j.home}-")
    for m, (alias, size) in zip(inputs.members, inputs.nodes, strict=True):
        assert alias == m.cluster.alias and len(m.description.nodes) == size


def test_a_split_trace_deals_jobs_in_turn() -> None:
    inputs = split_trace(trace(*((1, 100.0),) * 7), ITP_PLAN[:3])
    assert [(j.job.name, j.home) for j in inputs.jobs] == [
        ("j0", "itp1"), ("j3", "itp1"), ("j6", "itp1"), ("j1", "itp2"), ("j4", "itp2"),
        ("j2", "itp3"), ("j5", "itp3")]
