"""Issue 17 in the simulator: a job's own checkpoint interval bounds the work an eviction
takes from it, and every job's total waiting time counts the waits after its evictions."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from shoal.api import Node, Resources, VirtualCluster
from shoal.scheduler import Profile
from shoal.sim.metrics import summarize
from shoal.sim.result import SimResult
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob
from shoal.sim.work import WorkModel


class Cluster:
    def __init__(self, count: int, gpus: int = 4) -> None:
        self.nodes = tuple(Node(f"n{i}", Resources.of(cpu=64_000, memory=65_536, gpu=gpus))
                           for i in range(count))
        self.virtual_clusters = (VirtualCluster("a"), VirtualCluster("b"))
        self.priority_classes = ()


def job(name: str, at: float, gpus: int, duration: float, every: float | None = None,
        queue: str = "default") -> TraceJob:
    return TraceJob(name, at, duration, 1, Resources.of(cpu=1000 * gpus, gpu=gpus),
                    queue=queue, checkpoint_interval=every)


def run(jobs: list[TraceJob], profile: str = "las", count: int = 1,
        work: WorkModel | None = None) -> SimResult:
    config = SimConfig(cycle_on_events=True, check_invariants=True, work=work or WorkModel())
    return simulate(Trace.of(jobs, "hand"), Cluster(count), Profile.load(profile), config)


def by_name(result: SimResult) -> dict[str, object]:
    return {j.name: j for j in result.jobs}


def test_a_jobs_own_interval_bounds_what_its_eviction_loses() -> None:
    # One 4-GPU node under las: A (2,000 s, checkpoints every 300 s) has 4,000 GPU-s at
    # 1,000, when B (100 s) arrives in a better class and evicts it. A keeps its work up to
    # 900 and loses 100 s on 4 GPUs, then restarts when B ends at 1,100: 1,100 s left.
    result = run([job("a", 0, 4, 2000, every=300.0), job("b", 1000, 4, 100)])
    a = next(j for j in result.jobs if j.name == "a")
    assert a.preemptions == 1
    assert a.gpu_seconds_lost == pytest.approx(100 * 4)
    assert a.gpu_seconds_lost <= 300 * 4  # at most one interval on its GPUs
    assert a.end == pytest.approx(1100 + 1100)


def test_the_jobs_interval_wins_over_the_simulators() -> None:
    jobs = [job("a", 0, 4, 2000, every=300.0), job("b", 1000, 4, 100)]
    own = run(jobs, work=WorkModel(checkpoint_interval=7.0))
    a = next(j for j in own.jobs if j.name == "a")
    assert a.gpu_seconds_lost == pytest.approx(100 * 4)  # 1000 mod 300, not mod 7
    default = run([replace(j, checkpoint_interval=None) for j in jobs],
                  work=WorkModel(checkpoint_interval=7.0))
    a = next(j for j in default.jobs if j.name == "a")
    assert a.gpu_seconds_lost == pytest.approx((1000 % 7) * 4)


@pytest.mark.parametrize("seed", range(3))
def test_evicted_jobs_lose_at_most_one_interval_per_eviction(seed: int) -> None:
    rng = random.Random(seed)
    jobs = [job(f"j{i}", rng.uniform(0, 3000), rng.choice([1, 2, 4]),
                rng.uniform(100, 4000), every=rng.choice([60.0, 300.0, 900.0]))
            for i in range(30)]
    result = run(jobs, count=2)
    every = {j.name: j.checkpoint_interval for j in jobs}
    assert any(r.preemptions for r in result.jobs)  # the check below is not vacuous
    for record in result.jobs:
        interval = every[record.name]
        assert interval is not None
        assert record.gpu_seconds_lost <= record.preemptions * interval * record.gpus + 1e-6


def test_total_wait_counts_the_waits_after_an_eviction() -> None:
    # A starts at 0 (no wait), is evicted at 1,000 and waits until B ends at 1,100.
    result = run([job("a", 0, 4, 2000), job("b", 1000, 4, 100)])
    a, b = (next(j for j in result.jobs if j.name == n) for n in "ab")
    assert (a.queueing_delay, a.total_wait) == (0.0, 100.0)
    assert b.total_wait == b.queueing_delay == 0.0
    summary = summarize(result)
    assert summary.total_wait is not None
    assert summary.total_wait.mean_s == pytest.approx(50.0)
    assert summary.mean_queueing_delay_s == 0.0  # what the old metric showed


@pytest.mark.parametrize(("profile", "seed"), [("las", 0), ("las", 1), ("default", 2)])
def test_total_wait_is_at_least_the_queueing_delay_and_equal_without_evictions(
        profile: str, seed: int) -> None:
    rng = random.Random(seed)
    jobs = [job(f"j{i}", rng.uniform(0, 2000), rng.choice([1, 2, 4]), rng.uniform(50, 3000),
                queue=rng.choice(["a", "b"])) for i in range(40)]
    result = run(jobs, profile=profile, count=2)
    for record in result.jobs:
        assert record.end is not None and record.total_wait is not None
        assert record.queueing_delay is not None
        assert record.total_wait >= record.queueing_delay
        if record.preemptions == 0:
            assert record.total_wait == record.queueing_delay
        # Waiting and running make up its whole life (it runs at full size when it runs).
        ran = sum(h.end - h.start for h in record.held)
        assert record.total_wait + ran == pytest.approx(record.jct)
    if profile == "las":  # evictions happened, and their waits show
        assert any(r.total_wait is not None and r.queueing_delay is not None
                   and r.total_wait > r.queueing_delay for r in result.jobs)
    summary = summarize(result)
    assert summary.total_wait is not None
    waits = {r.name: r.total_wait for r in result.jobs}
    queues = {r.name: r.queue for r in result.jobs}
    means = {q: sum(w for n, w in waits.items() if queues[n] == q and w is not None)
             / sum(1 for n in waits if queues[n] == q) for q in set(queues.values())}
    assert summary.total_wait.worst_queue_mean_s == pytest.approx(max(means.values()))
    assert summary.total_wait.to_dict()["worst_queue"] in means
