"""The simulator: event order, hand-computed JCTs per policy, conservation, determinism."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from shoal.api import Node, PriorityClass, ResourceLimit, Resources, VirtualCluster
from shoal.scheduler import Profile
from shoal.sim.engine import EventKind, EventQueue
from shoal.sim.result import SimResult
from shoal.sim.simulator import NodeEvent, SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob
from shoal.sim.work import TableSpeedup, WorkModel


@dataclass(frozen=True)
class Cluster:
    nodes: Sequence[Node]
    virtual_clusters: Sequence[VirtualCluster] = ()
    priority_classes: Sequence[PriorityClass] = ()


def one_node(gpus: int = 4, count: int = 1) -> Cluster:
    return Cluster(tuple(Node(f"n{i}", Resources.of(cpu=64_000, memory=65_536, gpu=gpus))
                         for i in range(count)))


def job(name: str, at: float, gpus: int, duration: float, replicas: int = 1,
        queue: str = "default") -> TraceJob:
    return TraceJob(name, at, duration, replicas, Resources.of(cpu=1000 * gpus, gpu=gpus),
                    queue=queue)


def jcts(result: SimResult) -> dict[str, float | None]:
    return {j.name: j.jct for j in result.jobs}


EXACT = SimConfig(cycle_on_events=True, check_invariants=True)


def run(jobs: list[TraceJob], profile: str, cluster: Cluster | None = None,
        config: SimConfig = EXACT) -> SimResult:
    return simulate(Trace.of(jobs, "hand"), cluster or one_node(), Profile.load(profile), config)


def test_event_order_at_one_instant() -> None:
    events = EventQueue()
    events.push(5.0, EventKind.CYCLE)
    events.push(5.0, EventKind.ARRIVAL, "a")
    events.push(5.0, EventKind.COMPLETION, "b")
    events.push(1.0, EventKind.CYCLE)
    events.push(5.0, EventKind.ARRIVAL, "c")
    order = [(e.time, e.kind, e.subject) for e in (events.pop() for _ in range(5))]
    assert order == [(1.0, EventKind.CYCLE, ""), (5.0, EventKind.COMPLETION, "b"),
                     (5.0, EventKind.ARRIVAL, "a"), (5.0, EventKind.ARRIVAL, "c"),
                     (5.0, EventKind.CYCLE, "")]


# One 4-GPU node. A holds half of it for 100 s; B (all 4 GPUs) arrives next and must wait
# for A; C (2 GPUs, 50 s) fits beside A at once; D (1 GPU, 200 s) comes last.
BACKFILL_TRACE = [job("a", 0, 2, 100), job("b", 1, 4, 50), job("c", 2, 2, 50),
                  job("d", 3, 1, 200)]


def test_strict_fifo_jcts() -> None:
    # A 0–100; B blocks everyone behind it until A ends: B 100–150; then C and D start
    # together at 150 (2 + 1 GPUs): C 150–200, D 150–350.
    assert jcts(run(BACKFILL_TRACE, "fifo")) == {"a": 100, "b": 149, "c": 198, "d": 347}


def test_fifo_with_easy_backfill_jcts() -> None:
    # B's shadow time is 100 (A's end) with no extra GPUs. C (ends at 52 <= 100) backfills
    # at once; D (would end at 203 > 100) may not. B 100–150, then D 150–350.
    assert jcts(run(BACKFILL_TRACE, "fifo-backfill")) == {"a": 100, "b": 149, "c": 50,
                                                           "d": 347}


def test_shortest_job_first_jcts() -> None:
    # SJF is not strict: at t=2 B (50 s, 4 GPUs) is first but does not fit, C (50 s, ties
    # broken by submission) fits beside A: C 2–52. At 52, D (1 GPU) fits, B still not:
    # D 52–252. A ends at 100 (3 GPUs free, B needs 4); B waits for D: B 252–302.
    assert jcts(run(BACKFILL_TRACE, "sjf")) == {"a": 100, "b": 301, "c": 50, "d": 249}


def test_default_profile_jcts_and_periodic_cycles() -> None:
    # Default (not strict): like SJF's start but by submission order.
    assert jcts(run(BACKFILL_TRACE, "default")) == {"a": 100, "b": 301, "c": 50, "d": 249}
    # With 5-second periodic cycles only, every start waits for the next tick.
    periodic = run(BACKFILL_TRACE, "default",
                   config=SimConfig(cycle_interval=5.0, check_invariants=True))
    starts = {j.name: j.first_start for j in periodic.jobs}
    assert starts == {"a": 0.0, "b": 255.0, "c": 5.0, "d": 55.0}


def test_gang_spans_nodes_and_ends_once() -> None:
    result = run([job("g", 0, 4, 10, replicas=3), job("h", 1, 4, 10)], "default",
                 cluster=one_node(4, count=3))
    assert jcts(result) == {"g": 10, "h": 19}
    assert sum(1 for j in result.jobs if j.end is not None) == 2


def test_never_fitting_job_never_ends_and_others_proceed() -> None:
    result = run([job("huge", 0, 8, 10, replicas=2), job("ok", 1, 4, 10)], "default")
    assert jcts(result) == {"huge": None, "ok": 10}


def test_node_failure_evicts_and_requeues_losing_work() -> None:
    # A runs on n0 from 0; n0 fails at 30: A loses its 30 s (no checkpoints) and restarts on
    # n1 at once: ends at 30 + 100.
    config = SimConfig(cycle_on_events=True, check_invariants=True,
                       node_events=(NodeEvent(30.0, "n0", up=False),))
    result = run([job("a", 0, 4, 100)], "default", cluster=one_node(4, count=2), config=config)
    (a,) = result.jobs
    assert (a.first_start, a.end, a.preemptions) == (0.0, 130.0, 1)
    assert a.gpu_seconds_lost == 30 * 4
    assert a.gpu_seconds_used == 130 * 4


def test_checkpoints_keep_work() -> None:
    config = SimConfig(cycle_on_events=True, check_invariants=True,
                       node_events=(NodeEvent(35.0, "n0", up=False),),
                       work=WorkModel(checkpoint_interval=10.0))
    result = run([job("a", 0, 4, 100)], "default", cluster=one_node(4, count=2), config=config)
    (a,) = result.jobs
    # Checkpoints at 10, 20, 30: 5 s lost; 70 s left after the restart at 35.
    assert a.end == 105.0 and a.gpu_seconds_lost == 5 * 4


def test_node_recovery_brings_capacity_back() -> None:
    config = SimConfig(cycle_on_events=True, check_invariants=True,
                       node_events=(NodeEvent(10.0, "n0", up=False),
                                    NodeEvent(50.0, "n0", up=True)))
    result = run([job("a", 0, 4, 100)], "default", config=config)
    (a,) = result.jobs
    assert (a.end, a.preemptions) == (150.0, 1)  # waits 10–50 with no node, restarts at 50


def test_speedup_table() -> None:
    curve = TableSpeedup(((1, 1.0), (2, 1.8), (4, 3.0)))
    assert curve.speedup(3) == pytest.approx(2.4)
    assert curve.speedup(8) == 3.0
    work = WorkModel(per_model={"bert": curve})
    assert work.rate("bert", 4, 2) == pytest.approx(0.6)
    assert work.rate(None, 4, 2) == pytest.approx(0.5)
    assert work.rate("bert", 4, 4) == 1.0


def test_virtual_cluster_quota_holds_in_the_simulator() -> None:
    cluster = Cluster(one_node(4, count=2).nodes,
                      (VirtualCluster("capped", max=ResourceLimit.of({"gpu": 4})),))
    result = run([job("a", 0, 4, 10, queue="capped"), job("b", 0, 4, 10, queue="capped")],
                 "default", cluster=cluster)
    # b cannot run beside a (max 4 GPUs for the queue) though n1 is idle.
    assert jcts(result) == {"a": 10, "b": 20}


def conservation(result: SimResult) -> None:
    finished = [j for j in result.jobs if j.end is not None]
    assert len({j.name for j in finished}) == len(finished)
    start = min(j.submit for j in result.jobs)
    end = max(j.end for j in finished)
    used = sum(j.gpu_seconds_used for j in result.jobs)
    assert used <= result.cluster_gpus * (end - start) + 1e-6
    for j in finished:
        assert j.gpu_seconds_used >= j.gpus * j.duration - 1e-6  # at least its work
        assert j.jct is not None and j.jct >= j.duration - 1e-6


@pytest.mark.parametrize("profile", ["default", "fifo", "fifo-backfill", "sjf", "spread"])
def test_conservation_on_a_random_trace(profile: str) -> None:
    import random
    rng = random.Random(7)
    jobs = [job(f"j{i}", rng.uniform(0, 500), rng.choice([1, 2, 4, 8]),
                rng.uniform(10, 300)) for i in range(60)]
    result = run(jobs, profile, cluster=one_node(8, count=3))
    conservation(result)
    assert all(j.end is not None for j in result.jobs)
    again = run(jobs, profile, cluster=one_node(8, count=3))
    assert again == result  # deterministic


def test_least_attained_service_preempts_and_carries_service() -> None:
    # One 4-GPU node, LAS thresholds 1 and 10 GPU-hours. A (4 GPUs, 2,000 s) has attained
    # 4 × 1,000 = 4,000 GPU-s > 3,600 when B (4 GPUs, 100 s) arrives at 1,000: B is in the
    # first queue, A in the second, so B preempts A. A loses its 1,000 s (no checkpoints),
    # keeps its attained service, and restarts when B ends: 1,100 + 2,000 = 3,100.
    result = run([job("a", 0, 4, 2000), job("b", 1000, 4, 100)], "las")
    assert jcts(result) == {"a": 3100, "b": 100}
    a = next(j for j in result.jobs if j.name == "a")
    assert (a.preemptions, a.gpu_seconds_lost) == (1, 4000.0)
    conservation(result)


def test_least_attained_service_without_contention_is_fifo() -> None:
    # B arrives while A has attained less than a GPU-hour: same queue, FIFO, no preemption.
    result = run([job("a", 0, 4, 500), job("b", 100, 4, 100)], "las")
    assert jcts(result) == {"a": 500, "b": 500}
    assert all(j.preemptions == 0 for j in result.jobs)


def test_las_with_periodic_cycles_wakes_at_threshold_crossings() -> None:
    # Periodic cycles only: B waits from 10; A crosses 3,600 GPU-s at 900 (4 GPUs), the
    # plugin's next_change; the tick at 900 preempts A for B.
    result = run([job("a", 0, 4, 2000), job("b", 10, 4, 100)], "las",
                 config=SimConfig(cycle_interval=5.0, check_invariants=True))
    starts = {j.name: j.first_start for j in result.jobs}
    assert starts == {"a": 0.0, "b": 900.0}
    assert jcts(result) == {"a": 3000.0, "b": 990.0}
