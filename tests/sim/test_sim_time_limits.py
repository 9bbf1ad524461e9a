"""Time limits in the simulator: a job whose work outlasts its limit ends at the limit, timed
out; the limit bounds the oracle's runtime estimate (EASY backfill trusts it); a trace
without limits replays as before; and, as a property over random traces, no run lasts
longer than its job's limit."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Node, PriorityClass, Resources, VirtualCluster
from shoal.scheduler import Profile
from shoal.sim.result import HeldInterval, SimResult
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob

EXACT = SimConfig(cycle_on_events=True, check_invariants=True)


@dataclass(frozen=True)
class Cluster:
    nodes: tuple[Node, ...]
    virtual_clusters: tuple[VirtualCluster, ...] = ()
    priority_classes: tuple[PriorityClass, ...] = ()


def one_node(gpus: int = 4) -> Cluster:
    return Cluster((Node("n0", Resources.of(cpu=64_000, memory=65_536, gpu=gpus)),))


def job(name: str, at: float, gpus: int, duration: float,
        limit: float | None = None) -> TraceJob:
    return TraceJob(name, at, duration, 1, Resources.of(cpu=1000 * gpus, gpu=gpus),
                    time_limit=limit)


def run(jobs: list[TraceJob], profile: str, config: SimConfig = EXACT) -> SimResult:
    return simulate(Trace.of(jobs, "hand"), one_node(), Profile.load(profile), config)


def test_a_job_ends_at_its_limit_timed_out() -> None:
    result = run([job("long", 0, 2, 100, limit=30), job("short", 0, 2, 20, limit=30)],
                 "fifo")
    records = {j.name: j for j in result.jobs}
    assert (records["long"].end, records["long"].timed_out) == (30, True)
    assert (records["short"].end, records["short"].timed_out) == (20, False)
    assert records["long"].gpu_seconds_used == 60


def test_easy_backfill_trusts_the_limit_over_the_work() -> None:
    # As tests/sim/test_simulator.py's backfill trace: A holds 2 of 4 GPUs until 100, B (4
    # GPUs) waits for it, C backfills beside A (2-52). At 52, D (1 GPU, 200 s of work) would
    # end after B's shadow time (100) by its work, where it waited until 150; its limit
    # (45 s) ends it at 97: it backfills at once and is stopped at its limit.
    trace = [job("a", 0, 2, 100), job("b", 1, 4, 50), job("c", 2, 2, 50),
             job("d", 3, 1, 200, limit=45)]
    records = {j.name: j for j in run(trace, "fifo-backfill").jobs}
    assert {n: r.jct for n, r in records.items()} == {"a": 100, "b": 149, "c": 50, "d": 94}
    assert records["d"].timed_out and not records["b"].timed_out


def test_a_limit_longer_than_the_work_changes_nothing() -> None:
    trace = [job("a", 0, 2, 100), job("b", 1, 4, 50), job("c", 2, 2, 50),
             job("d", 3, 1, 200)]
    limited = [replace(j, time_limit=j.duration + 1000) for j in trace]
    for profile in ("fifo", "fifo-backfill", "default"):
        plain, with_limits = run(trace, profile), run(limited, profile)
        assert [(j.name, j.first_start, j.end) for j in plain.jobs] == \
            [(j.name, j.first_start, j.end) for j in with_limits.jobs]
        assert not any(j.timed_out for j in with_limits.jobs)


def runs(held: tuple[HeldInterval, ...]) -> list[tuple[float, float]]:
    """The job's runs: its held intervals joined where one ends as the next starts."""
    out: list[tuple[float, float]] = []
    for interval in held:
        if out and math.isclose(out[-1][1], interval.start):
            out[-1] = (out[-1][0], interval.end)
        else:
            out.append((interval.start, interval.end))
    return out


@st.composite
def traces(draw: st.DrawFn) -> list[TraceJob]:
    count = draw(st.integers(1, 12))
    return [job(f"j{i}", draw(st.integers(0, 200)), draw(st.integers(1, 4)),
                draw(st.integers(1, 300)),
                draw(st.none() | st.integers(1, 300).map(float)))
            for i in range(count)]


@settings(max_examples=60, deadline=None)
@given(traces(), st.sampled_from(["fifo", "fifo-backfill", "sjf", "default", "las"]))
def test_no_run_lasts_longer_than_its_limit(trace: list[TraceJob], profile: str) -> None:
    result = run(trace, profile)
    limits = {j.name: j.time_limit for j in trace}
    work = {j.name: j.duration for j in trace}
    for record in result.jobs:
        assert record.end is not None  # every job ends, timed out or not
        limit = limits[record.name]
        for start, end in runs(record.held):
            assert limit is None or end - start <= limit + 1e-6, (record, limit)
        if record.timed_out:
            assert limit is not None and limit < work[record.name]
        elif limit is not None and record.preemptions == 0:
            assert work[record.name] <= limit + 1e-6


def test_a_native_trace_carries_the_limit(tmp_path: Path) -> None:
    from shoal.sim.loaders.native import load_native

    path = tmp_path / "trace.yaml"
    path.write_text("""\
apiVersion: shoal/v1
kind: Job
metadata: {name: capped, arrivalTime: 0, duration: 3600}
spec:
  timeLimit: 30m
  taskGroups:
    - {name: worker, replicas: 1, resources: {cpu: 1, gpu: 1}}
""")
    trace = load_native(path)
    assert trace.jobs[0].time_limit == 1800
    record = simulate(trace, one_node(), Profile.load("fifo"), EXACT).jobs[0]
    assert (record.end, record.timed_out) == (1800, True)


def test_a_native_trace_may_generate_its_names(tmp_path: Path) -> None:
    from shoal.sim.loaders.native import load_native

    one = """\
apiVersion: shoal/v1
kind: Job
metadata: {generateName: sweep-, arrivalTime: 0, duration: 60}
spec:
  taskGroups:
    - {name: worker, replicas: 1, resources: {cpu: 1, gpu: 1}}
"""
    path = tmp_path / "trace.yaml"
    path.write_text(one + "---\n" + one.replace("generateName: sweep-", "name: sweep-bbbbb")
                    + "---\n" + one)
    names = [j.name for j in load_native(path).jobs]
    assert sorted(names) == ["sweep-bbbbb", "sweep-bbbbc", "sweep-bbbbd"]
    assert names == [j.name for j in load_native(path).jobs]
