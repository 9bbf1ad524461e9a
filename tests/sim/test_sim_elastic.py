"""Elastic jobs in the simulator (seed 001): under the `elastic` profile a job grows into idle
GPUs and runs faster for it, a higher-priority job takes its surplus at once and it grows
back after, and the work done is conserved through every resize."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shoal.api import Elasticity, Node, Resources, ScaleStep
from shoal.scheduler import Profile
from shoal.sim.result import SimResult
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob

CLUSTER_NODES = (Node("n0", Resources.of(cpu=64_000, memory=65_536, gpu=8)),)
EXACT = SimConfig(cycle_on_events=True, check_invariants=True)


class Cluster:
    nodes = CLUSTER_NODES
    virtual_clusters = ()
    priority_classes = ()


def job(name: str, at: float, replicas: int, duration: float, *, low: int | None = None,
        priority: str | None = None) -> TraceJob:
    elastic = None if low is None else Elasticity("worker", low, replicas,
                                                   ScaleStep.POWER_OF_TWO)
    return TraceJob(name, at, duration, replicas, Resources.of(cpu=1000, gpu=1),
                    priority_class=priority, elastic=elastic)


def run(jobs: list[TraceJob], profile: str) -> SimResult:
    return simulate(Trace.of(jobs, "hand"), Cluster(), Profile.load(profile), EXACT)


def jct(result: SimResult, name: str) -> float:
    [found] = [j for j in result.jobs if j.name == name]
    assert found.jct is not None
    return found.jct


def test_an_elastic_job_grows_into_idle_gpus_and_finishes_sooner() -> None:
    # 8 GPUs of work for 800 s. At its minimum (strict-fifo has no elastic action): 2
    # GPUs, 4 times slower. Elastic: placed at 2 and grown to 4 in the same cycle (no
    # cooldown), to 8 in the next one, 5 s later.
    stretchy = job("stretchy", 0.0, 8, 800.0, low=2)
    at_minimum = jct(run([stretchy], "strict-fifo"), "stretchy")
    grown = jct(run([stretchy], "elastic"), "stretchy")
    assert jct(run([stretchy], "default"), "stretchy") == pytest.approx(grown)
    assert at_minimum == pytest.approx(3200.0)
    # 5 s at 4 GPUs (half the rate), then full speed for the rest.
    assert grown == pytest.approx(5.0 + (800.0 - 5 * 0.5), rel=1e-6)
    cooled = replace(stretchy, elastic=replace(stretchy.elastic, scale_cooldown=100.0))
    # With a 100 s cooldown (counted from its start): 100 s at 2, 100 s at 4, then 8.
    assert jct(run([cooled], "elastic"), "stretchy") == pytest.approx(
        200.0 + (800.0 - 100 * 0.25 - 100 * 0.5), rel=1e-6)


def test_a_higher_priority_job_takes_surplus_at_once_and_it_is_given_back() -> None:
    stretchy = job("stretchy", 0.0, 8, 800.0, low=2, priority="experiment")
    urgent = job("urgent", 100.0, 4, 50.0, priority="production")
    result = run([stretchy, urgent], "elastic")
    assert jct(result, "urgent") == pytest.approx(50.0)  # started on arrival, shrinking
    [record] = [j for j in result.jobs if j.name == "stretchy"]
    assert record.preemptions == 0  # shrunk, never evicted whole
    sizes = [interval.gpus for interval in record.held]
    assert 4 in sizes and sizes[-1] == 8  # ran at 4 beside urgent, then grew back to 8
    # Work is conserved: 800 GPU-seconds-at-full-size of progress, whatever the sizes.
    work = sum(i.gpus * (i.end - i.start) for i in record.held) / 8
    assert work == pytest.approx(800.0, rel=1e-6)


def test_a_rigid_trace_job_is_unchanged_and_a_bad_range_is_refused() -> None:
    rigid = job("rigid", 0.0, 8, 100.0)
    assert rigid.to_job().elastic is None and rigid.to_job().gang_minimum == 8
    with pytest.raises(ValueError, match="an elastic trace job ranges"):
        replace(rigid, elastic=Elasticity("worker", 3, 8, ScaleStep.POWER_OF_TWO))
