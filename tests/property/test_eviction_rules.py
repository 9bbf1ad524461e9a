"""What preempt and reclaim may evict, and what they must take back (issue 16).

1. No eviction for a job that fits without one. A world's running jobs stay (those still
   waiting are dropped), one job is submitted, and a cycle runs twice on the same snapshot:
   under `place-only` (enqueue, allocate) and under `evict-first` (enqueue, reclaim, preempt,
   allocate; same plugins, guarantees lent). When allocation alone starts the job, the
   profile that evicts before allocating must evict nothing.
2. A lender's job never waits while a borrower anywhere in the tree holds its guarantee.
   Borrowers ran under a profile that lends every guarantee (`lend-only`); the target — a
   leaf virtual cluster with unused guarantee — gets a one-slot job, and one cycle runs under
   `lend-reclaim`. If some running job outside the target's line could give its slots back
   without taking any virtual cluster on its side of the tree (below where the two lines
   meet) under its own guarantee, the target's job must be placed in that cycle.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import DEFAULT_QUEUE, ROOT_QUEUE, Job, SchedulerName, TaskGroup
from shoal.scheduler import run_cycle

from .oracles import QuotaOracle, queue_usage
from .strategies import (
    SLOT,
    GuaranteeCase,
    World,
    capacity,
    class_names,
    guarantee_cases,
    jobs,
    profile,
    worlds,
)

RULES = settings(max_examples=80, deadline=None)


def settled(world: World) -> World:
    """The world with only its jobs that wait for nothing: every task holds resources or
    ended (a gang's surplus and a default-scheduler job's missing tasks would be preemptors
    too)."""
    return world.with_jobs(j for j in world.jobs
                           if all(t.state.holds_resources or t.state.terminal
                                  for t in j.tasks) and len(j.tasks) >= j.replicas)


@pytest.mark.slow
@RULES
@given(world=worlds(profiles=("default",)), data=st.data())
def test_no_eviction_for_a_job_that_fits_without_one(world: World, data: st.DataObject
                                                      ) -> None:
    world = settled(world)
    queues = [vc.name for vc in world.virtual_clusters] + [DEFAULT_QUEUE]
    new = data.draw(jobs(queues, class_names(world.priority_classes), max_size=1,
                         prefix="new"))
    if not new:
        return
    job = new[0]
    world = world.with_jobs([*world.jobs, job])
    snapshot = world.snapshot()
    placed = run_cycle(snapshot, profile("place-only"))
    if job.name in placed.pending_by_job():
        return  # it does not fit without an eviction: evicting may be right
    evicting = run_cycle(snapshot, profile("evict-first"))
    assert not evicting.evictions, (
        f"{job.name} fits without an eviction (allocation alone placed "
        f"{sum(b.task.job == job.name for b in placed.binds)} task(s)), yet "
        + "; ".join(f"{e.task} was evicted: {e.reason}" for e in evicting.evictions))


def _line(oracle: QuotaOracle, queue: str) -> list[str]:
    """The virtual clusters from the root's child down to `queue`."""
    return oracle.path(queue)[1:]


def _gives_back(oracle: QuotaOracle, target: str, job: Job) -> bool:
    """Whether `job` runs outside the target's line and taking it whole keeps every virtual
    cluster on its side of the tree (below where the lines meet) at or above its own
    guarantee in GPUs — the borrowed slots reclaim must take back."""
    gpus = sum(job.group(t.group).resources.gpu for t in job.tasks
               if t.state.holds_resources)
    if gpus == 0:
        return False
    mine = set(oracle.path(target))
    theirs = oracle.path(job.queue)
    if job.queue in mine or target in theirs:
        return False  # the same line: an ancestor, a descendant, or the target itself
    capped = _capped_ancestor(oracle, target)
    if capped is not None and capped not in theirs:
        return False  # the target's line is at a ceiling that only work inside it can free
    levels = [q for q in theirs if q not in mine and q != ROOT_QUEUE]
    return all(oracle.usage[q].gpu - oracle.minimum(q).gpu >= gpus for q in levels)


def _capped_ancestor(oracle: QuotaOracle, target: str) -> str | None:
    """The highest virtual cluster on the target's line whose `max` leaves no room for one
    more slot: evictions outside it free nothing the target may use."""
    for queue in oracle.path(target)[1:]:
        cap = oracle.limit(queue).get("gpu")
        if cap is not None and oracle.usage[queue].gpu + SLOT.gpu > cap:
            return queue
    return None


@pytest.mark.slow
@RULES
@given(case=guarantee_cases(profiles=("lend-only",)), gang=st.booleans(),
       priority=st.sampled_from([None, "experiment", "production"]))
def test_a_lenders_job_never_waits_while_a_borrower_holds_its_guarantee(
        case: GuaranteeCase, gang: bool, priority: str | None) -> None:
    world = case.world
    oracle = QuotaOracle(world.virtual_clusters, capacity(world.nodes, world.jobs),
                         queue_usage(world.jobs))
    borrowers = [j.name for j in world.jobs if _gives_back(oracle, case.target, j)]
    job = Job("lender", (TaskGroup("worker", 1, SLOT),), queue=case.target,
              scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT,
              priority_class=priority, submitted=100.0)
    world = world.with_jobs([*world.jobs, job])
    decisions = run_cycle(world.snapshot(), profile("lend-reclaim"))
    placed = any(b.task.job == job.name for b in decisions.binds)
    assert placed or not borrowers, (
        f"{case.target!r} is owed {case.idle_slots} unused slot(s), and {borrowers} could "
        f"give theirs back, but its job waits: {decisions.pending_by_job().get(job.name)}; "
        f"line {_line(oracle, case.target)}")
