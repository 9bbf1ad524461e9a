"""Aging (`shoal.scheduler.aging`, the priority plugin's `agingHalfLife`): the arithmetic,
the plugin's arguments and clock, that aging gives no right to evict, and that elastic
growth keeps off a starving job's reservation."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from shoal.api import Job, Node, Resources, SchedulerName, Task, TaskGroup, TaskState
from shoal.api.decisions import Decisions, PendingKind
from shoal.api.elastic import Elasticity
from shoal.scheduler import Profile, ProfileError
from shoal.scheduler.aging import Aging
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.plugins.priority import Priority, PriorityArguments
from shoal.scheduler.session import Session


def node(name: str, gpus: int) -> Node:
    return Node(name, Resources.of(cpu=64_000, memory=65_536, gpu=gpus))


def job(name: str, gpus: int, at: float, priority_class: str, tasks: int = 1,
        elastic: Elasticity | None = None) -> Job:
    return Job(name, (TaskGroup("w", tasks, Resources.of(cpu=1000, gpu=gpus)),),
               scheduler_name=SchedulerName.SHOAL, submitted=at,
               priority_class=priority_class, elastic=elastic)


def running(spec: Job, placement: list[str], started: float) -> Job:
    tasks = tuple(Task(spec.name, "w", i, TaskState.RUNNING, host, started=started)
                  for i, host in enumerate(placement))
    return replace(spec, tasks=tasks)


def profile(actions: str, **priority: Any) -> Profile:
    return Profile.from_dict({
        "actions": actions,
        "tiers": [{"plugins": [{"name": "priority", "arguments": priority}, {"name": "gang"}]},
                  {"plugins": [{"name": "predicates"}, {"name": "capacity"},
                               {"name": "placement"}]}]})


def cycle(model: SchedulerModel, now: float, chosen: Profile) -> tuple[Session, Decisions]:
    model.now = now
    session = Session(model, chosen.plugins())
    for action in chosen.actions():
        action.execute(session)
    return session, session.close()


# ---- arithmetic ---------------------------------------------------------------------------


def test_priority_doubles_every_half_life_of_waiting() -> None:
    aging = Aging(half_life=100.0, starvation_after=300.0)
    spec = job("a", 1, 50.0, "experiment")
    assert aging.effective_priority(10, spec, 50.0) == pytest.approx(10.0)
    assert aging.effective_priority(10, spec, 150.0) == pytest.approx(20.0)
    assert aging.effective_priority(10, spec, 350.0) == pytest.approx(80.0)
    assert aging.effective_priority(10, spec, 0.0) == pytest.approx(10.0)  # not yet waiting
    assert aging.effective_priority(-5, spec, 150.0) == pytest.approx(2.0)  # ages as 1
    assert aging.effective_priority(10, spec, 1e9) == math.inf  # no overflow error
    assert aging.starving_since(spec, 349.0) is None
    assert aging.starving_since(spec, 350.0) == 350.0
    later = job("b", 1, 400.0, "normal")
    assert aging.next_starving([spec, later], 360.0) == 700.0
    assert aging.next_starving([spec], 360.0) is None


def test_any_job_eventually_outranks_any_fixed_priority() -> None:
    # An experiment job (10) submitted at 0 against production (10000) jobs submitted
    # later: it ranks ahead of each one submitted more than h * log2(1000) after it.
    h = 60.0
    aging = Aging(h, h)
    exp = job("exp", 1, 0.0, "experiment")
    gap = h * math.log2(10_000 / 10)
    for at, ahead in ((gap - 1.0, False), (gap + 1.0, True)):
        prod = job("prod", 1, at, "production")
        now = at + 5.0
        assert (aging.aged_log2(10, exp, now) > aging.aged_log2(10_000, prod, now)) is ahead


# ---- the plugin -----------------------------------------------------------------------------


def test_arguments_are_checked_with_the_field_named() -> None:
    for bad, words in (({"agingHalfLife": 0}, "agingHalfLife"),
                       ({"agingHalfLife": -3}, "agingHalfLife"),
                       ({"agingHalfLife": "soon"}, "agingHalfLife"),
                       ({"agingHalfLife": 10, "starvationAfter": 0}, "starvationAfter"),
                       ({"starvationAfter": 10}, "starvationAfter: needs agingHalfLife"),
                       ({"agingHalflife": 10}, "agingHalflife")):
        with pytest.raises(ProfileError, match=words):
            profile("enqueue, allocate", **bad)


def test_without_aging_nothing_changes_and_nothing_is_clocked() -> None:
    plain = Priority(PriorityArguments())
    assert plain.time_dependent is False and plain.aging is None
    aged = Priority(PriorityArguments.model_validate({"agingHalfLife": 30}))
    assert aged.time_dependent is True
    assert aged.aging == Aging(30.0, 30.0)  # starvationAfter defaults to the half-life
    for name in ("default", "strict-fifo", "elastic", "spread"):
        assert not any(getattr(p, "time_dependent", False)
                       for p in Profile.load(name).plugins())


def test_next_change_is_when_the_next_waiting_job_starts_starving() -> None:
    chosen = profile("enqueue, allocate, backfill", agingHalfLife=100, starvationAfter=250)
    model = SchedulerModel([node("n0", 8)])
    model.add_job(running(job("busy", 8, 0.0, "normal"), ["n0"], 0.0))
    model.add_job(job("a", 8, 10.0, "normal"))
    model.add_job(job("b", 8, 40.0, "normal"))
    session, _ = cycle(model, 100.0, chosen)
    clocked = next(p for p in session.hooks.plugins if isinstance(p, Priority))
    assert clocked.next_change(session) == 260.0
    session, _ = cycle(model, 270.0, chosen)
    assert clocked.next_change(session) == 290.0


# ---- aging orders, it does not evict ----------------------------------------------------------


def test_an_aged_job_does_not_preempt_a_higher_class() -> None:
    # exp (10) has waited 20 half-lives: it ranks ahead of the running normal job (1000),
    # but ranking ahead by age is no right to evict it.
    chosen = profile("enqueue, allocate, preempt", agingHalfLife=10)
    model = SchedulerModel([node("n0", 8)])
    model.add_job(running(job("norm", 8, 150.0, "normal"), ["n0"], 150.0))
    model.add_job(job("exp", 8, 0.0, "experiment"))
    _, decisions = cycle(model, 200.0, chosen)
    assert decisions.evictions == [] and decisions.binds == []
    # A class above the running job's does preempt it, though it is held back behind exp's
    # reservation (exp is starving and first): the reservation is no rank over it.
    model.add_job(job("prod", 8, 190.0, "production"))
    _, decisions = cycle(model, 201.0, chosen)
    assert [e.task.job for e in decisions.evictions] == ["norm"]


# ---- elastic growth keeps off a reservation ---------------------------------------------------


def test_elastic_growth_keeps_off_a_starving_jobs_nodes() -> None:
    # `elastic` runs 1 task on n0 and may grow to 2; `wide` (8 GPUs) is starving and first.
    # n0 has 4 GPUs free, n1 (4 GPUs) is idle: growing onto n0 would take what `wide` waits
    # for; n1 is too small for it, so growth goes there.
    chosen = profile("enqueue, allocate, backfill, elastic", agingHalfLife=10)
    rule = Elasticity("w", 1, 2)
    model = SchedulerModel([node("n0", 8), node("n1", 4)])
    model.add_job(running(job("elastic", 4, 0.0, "normal", tasks=2, elastic=rule),
                          ["n0"], 0.0))
    model.add_job(job("wide", 8, 5.0, "experiment"))
    _, decisions = cycle(model, 100.0, chosen)
    assert [(b.task.job, b.node) for b in decisions.binds] == [("elastic", "n1")]
    pending = {p.job: p.reason for p in decisions.pending}
    assert "holds a reservation since 15" in pending["wide"].message
    # Without aging, nothing is reserved: growth takes the first node that fits, n0.
    model = SchedulerModel([node("n0", 8), node("n1", 4)])
    model.add_job(running(job("elastic", 4, 0.0, "normal", tasks=2, elastic=rule),
                          ["n0"], 0.0))
    model.add_job(job("wide", 8, 5.0, "experiment"))
    _, decisions = cycle(model, 100.0, profile("enqueue, allocate, backfill, elastic"))
    assert [(b.task.job, b.node) for b in decisions.binds] == [("elastic", "n0")]
    assert {p.job: p.reason.kind for p in decisions.pending} == {
        "wide": PendingKind.INSUFFICIENT_RESOURCES}


def test_a_starving_job_evicts_nothing_that_may_not_be_evicted() -> None:
    # A starving normal job, first in order, on a cluster full of a non-preemptable
    # experiment job: it waits (the seed's exception), holding its reservation. The same
    # job preemptable is evicted, by class, as without aging.
    chosen = profile("enqueue, allocate, preempt", agingHalfLife=10)
    for preemptable, evicted in ((False, []), (True, ["service"])):
        model = SchedulerModel([node("n0", 8)])
        model.add_job(replace(running(job("service", 8, 0.0, "experiment"), ["n0"], 0.0),
                              preemptable=preemptable))
        model.add_job(job("starving", 8, 10.0, "normal"))
        _, decisions = cycle(model, 500.0, chosen)
        assert [e.task.job for e in decisions.evictions] == evicted
        if not evicted:
            reason = {p.job: p.reason for p in decisions.pending}["starving"]
            assert "holds a reservation since 20" in reason.message
