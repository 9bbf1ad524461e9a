"""Non-preemptable work and task-level eviction (issue 16), as properties of whole cycles.

1. Non-preemptable work is never evicted. A random world (some jobs running, some waiting)
   gets production jobs on top, some running jobs say `preemptable: false`, some gangs are
   made elastic (surplus to shrink, sizes to repair), and a few cycles run under profiles
   that preempt, reclaim and shrink: no eviction ever names a task of a non-preemptable
   job. The same, aimed at the elastic paths: a non-preemptable elastic gang found at any
   size (often one its step rule does not allow) beside a production gang that wants room
   is neither shrunk for it nor repaired down.
2. A job whose priority class says `preemptionPolicy: Never` evicts nothing. The same world
   with every priority class (the built-in ones redefined too) set to Never: however its
   waiting jobs rank, a cycle under those profiles evicts nothing (these worlds hold no
   elastic job, whose own repair could).
3. A default-scheduler job loses no more tasks than needed. A world's running jobs stay,
   one production gang `P` is submitted and one cycle runs under `enqueue, allocate,
   preempt`. If P started by evicting tasks of default-scheduler jobs, each of those tasks
   was needed: with it put back — every other eviction kept — allocation alone (the same
   placement as preempt's trials) does not start P.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import (
    BUILTIN_PRIORITY_CLASSES,
    DEFAULT_QUEUE,
    Decisions,
    Job,
    JobState,
    Node,
    SchedulerName,
    Task,
    TaskGroup,
    TaskState,
)
from shoal.api.elastic import Elasticity, ScaleStep, step_allows
from shoal.api.queue_policy import PreemptionPolicy
from shoal.scenario import apply
from shoal.scheduler import Profile, run_cycle

from .strategies import SLOT, World, class_names, jobs, worlds

RULES = settings(max_examples=60, deadline=None)

EVICTING = ("evict-first", "lend-reclaim", "elastic", "las")
"""Profiles whose actions evict: preempt, reclaim, and the elastic profile's shrinks."""

PREEMPT = Profile.from_yaml("""
name: preempt-after-allocate
description: Allocation, then job-level preemption for what did not fit.
actions: "enqueue, allocate, preempt"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}]
""", "preempt-after-allocate")
PLACE = Profile.from_yaml("""
name: place-after-all
description: The plugins of preempt-after-allocate with allocation alone.
actions: "enqueue, allocate"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}]
""", "place-after-all")


def settled(world: World) -> World:
    """The world with only its jobs that wait for nothing: every task holds resources or
    ended (their missing tasks would be preemptors too)."""
    return world.with_jobs(j for j in world.jobs
                           if all(t.state.holds_resources or t.state.terminal
                                  for t in j.tasks) and len(j.tasks) >= j.replicas)


def running(job: Job) -> bool:
    return any(t.state.holds_resources for t in job.tasks)


@st.composite
def urgent_jobs(draw: st.DrawFn, world: World, prefix: str) -> tuple[Job, ...]:
    """A few production jobs in the world's queues: preemptors of nearly everything."""
    queues = [vc.name for vc in world.virtual_clusters] + [DEFAULT_QUEUE]
    drawn = draw(jobs(queues, class_names(world.priority_classes), max_size=3,
                      prefix=prefix))
    return tuple(replace(j, priority_class="production", submitted=50.0) for j in drawn)


def made_elastic(data: st.DataObject, job: Job, always: bool = False) -> Job:
    """A gang of one group made elastic up to its replicas (steps of one or powers of two;
    now and then, or `always`): its tasks above the minimum become surplus, some running —
    perhaps at a size its step rule does not allow —, so preempt and reclaim may shrink it
    and the elastic action may grow or repair it."""
    if not job.gang or len(job.groups) != 1 or job.groups[0].replicas < 2 \
            or not (always or data.draw(st.booleans())):
        return job
    group = job.groups[0]
    step = data.draw(st.sampled_from([ScaleStep.ANY, ScaleStep.POWER_OF_TWO,
                                      ScaleStep.POWER_OF_TWO]))
    least = data.draw(st.sampled_from(
        [n for n in range(1, group.replicas) if step_allows(step, 1, n)]))
    return replace(job, elastic=Elasticity(group.name, least, group.replicas, step),
                   min_available=None)


@pytest.mark.slow
@RULES
@given(world=worlds(profiles=("default",)), data=st.data(),
       profile_name=st.sampled_from(EVICTING))
def test_non_preemptable_work_is_never_evicted(world: World, data: st.DataObject,
                                               profile_name: str) -> None:
    candidates = sorted(j.name for j in world.jobs if running(j))
    kept = data.draw(st.sets(st.sampled_from(candidates)) if candidates else st.just(set()))
    urgent = data.draw(urgent_jobs(world, "urgent"))
    world = world.with_jobs([*(made_elastic(data, replace(j, preemptable=False), True)
                               if j.name in kept else made_elastic(data, j)
                               for j in world.jobs), *urgent])
    for cycle in range(3):
        _, decisions, world = world.step(profile_name)
        taken = [e for e in decisions.evictions if e.task.job in kept]
        assert not taken, (
            f"cycle {cycle + 1} ({profile_name}) evicted non-preemptable work: "
            + "; ".join(f"{e.task} ({e.reason})" for e in taken))


@st.composite
def odd_sizes(draw: st.DrawFn) -> World:
    """One node of 2-8 slots: a non-preemptable elastic gang running at any size from its
    minimum up — often one its step rule does not allow —, a default-scheduler job on some
    of the rest, and a production gang that wants room."""
    slots = draw(st.integers(2, 8))
    replicas = draw(st.integers(2, 8))
    step = draw(st.sampled_from([ScaleStep.ANY, ScaleStep.POWER_OF_TWO]))
    least = draw(st.sampled_from(
        [n for n in range(1, replicas) if step_allows(step, 1, n)]))
    size = draw(st.integers(min(least, slots), min(replicas, slots)))
    others = draw(st.integers(0, slots - size))

    def running(name: str, count: int, first: int) -> tuple[Task, ...]:
        return tuple(Task(name, "w", i, TaskState.RUNNING, "n0", (first + i,), 0.0)
                     for i in range(count))
    keeper = Job("keeper", (TaskGroup("w", replicas, SLOT),),
                 scheduler_name=SchedulerName.SHOAL, priority_class="experiment",
                 elastic=Elasticity("w", least, replicas, step), preemptable=False,
                 state=JobState.RUNNING, tasks=running("keeper", size, 0))
    pods = Job("pods", (TaskGroup("w", others, SLOT),), priority_class="experiment",
               state=JobState.RUNNING, tasks=running("pods", others, size))
    urgent = Job("urgent", (TaskGroup("w", draw(st.integers(1, slots)), SLOT),),
                 scheduler_name=SchedulerName.SHOAL, priority_class="production",
                 submitted=1.0)
    jobs_now = (keeper, urgent) if others == 0 else (keeper, pods, urgent)
    return World((Node("n0", SLOT.scale(slots)),), (), (), jobs_now, now=10.0)


@pytest.mark.slow
@RULES
@given(world=odd_sizes(), profile_name=st.sampled_from(EVICTING))
def test_a_non_preemptable_elastic_job_is_never_shrunk(world: World,
                                                       profile_name: str) -> None:
    for cycle in range(3):
        _, decisions, world = world.step(profile_name)
        taken = [e for e in decisions.evictions if e.task.job == "keeper"]
        assert not taken, (
            f"cycle {cycle + 1} ({profile_name}) shrank the non-preemptable elastic job: "
            + "; ".join(f"{e.task} ({e.reason})" for e in taken))


def never_preempting(world: World) -> World:
    """The world with every priority class — declared, and the built-in ones redefined at
    their values — set to `preemptionPolicy: Never`."""
    declared = {c.name: c for c in world.priority_classes}
    classes = [replace(c, preemption_policy=PreemptionPolicy.NEVER)
               for c in declared.values()]
    classes += [replace(c, global_default=c.global_default and not any(
                    d.global_default for d in declared.values()),
                        preemption_policy=PreemptionPolicy.NEVER)
                for c in BUILTIN_PRIORITY_CLASSES if c.name not in declared]
    return replace(world, priority_classes=tuple(classes))


@pytest.mark.slow
@RULES
@given(world=worlds(profiles=("default",)), data=st.data(),
       profile_name=st.sampled_from(EVICTING))
def test_a_job_whose_class_never_preempts_evicts_nothing(world: World, data: st.DataObject,
                                                         profile_name: str) -> None:
    urgent = data.draw(urgent_jobs(world, "urgent"))
    world = never_preempting(world.with_jobs([*world.jobs, *urgent]))
    assert all(c.preemption_policy is PreemptionPolicy.NEVER for c in world.priority_classes)
    for cycle in range(2):
        _, decisions, world = world.step(profile_name)
        assert not decisions.evictions, (
            f"cycle {cycle + 1} ({profile_name}): every class says Never, yet "
            + "; ".join(f"{e.task} was evicted: {e.reason}" for e in decisions.evictions))


@st.composite
def crowded(draw: st.DrawFn) -> tuple[World, Job]:
    """A cluster of 1-4 nodes of 1-8 slots (`SLOT`), filled by experiment jobs of the default
    queue — gangs and default-scheduler jobs of 1- and 2-slot tasks, started over a few
    cycles — less those left waiting; and `P`, a production gang of the same queue."""
    node_list = tuple(Node(f"n{i}", SLOT.scale(draw(st.integers(1, 8))))
                      for i in range(draw(st.integers(1, 4))))
    sizes = st.sampled_from([SLOT, SLOT, SLOT.scale(2)])
    background = []
    for i in range(draw(st.integers(1, 6))):
        groups = tuple(TaskGroup(f"g{g}", draw(st.integers(1, 5)), draw(sizes))
                       for g in range(draw(st.integers(1, 2))))
        background.append(Job(
            f"bg-{i}", groups, scheduler_name=draw(st.sampled_from(list(SchedulerName))),
            priority_class="experiment", submitted=float(i)))
    world = World(node_list, (), (), ())
    for job in background:  # one arrival per cycle: their tasks start at different times
        world = world.with_jobs([*world.jobs, job]).step("default")[2]
    world = settled(world)
    groups = tuple(TaskGroup(f"p{g}", draw(st.integers(1, 4)), draw(sizes))
                   for g in range(draw(st.integers(1, 2))))
    replicas = sum(g.replicas for g in groups)
    preemptor = Job("p", groups, scheduler_name=SchedulerName.SHOAL,
                    min_available=draw(st.one_of(st.none(), st.integers(1, replicas))),
                    priority_class="production", submitted=100.0)
    return world, preemptor


@pytest.mark.slow
@RULES
@given(case=crowded())
def test_a_default_scheduler_job_loses_no_more_tasks_than_needed(
        case: tuple[World, Job]) -> None:
    world, preemptor = case
    world = world.with_jobs([*world.jobs, preemptor])
    snapshot = world.snapshot()
    decisions = run_cycle(snapshot, PREEMPT)
    if preemptor.name in decisions.pending_by_job() or not decisions.evictions:
        return
    by_name = {j.name: j for j in world.jobs}
    singles = [e for e in decisions.evictions if not by_name[e.task.job].gang]
    for kept in singles:
        others = Decisions(evictions=[e for e in decisions.evictions if e is not kept])
        after = apply(dict(by_name), others, now=world.now)
        # The other victims' evicted tasks ended, so that only P waits to be placed.
        gone = [e.task for e in others.evictions]
        jobs_now = [replace(j, tasks=tuple(sorted(
            (*j.tasks, *(Task(j.name, r.group, r.index, TaskState.SUCCEEDED)
                         for r in gone if r.job == j.name)),
            key=lambda t: (t.group, t.index)))) for j in after.values()]
        check = run_cycle(world.with_jobs(jobs_now).snapshot(), PLACE)
        assert preemptor.name in check.pending_by_job(), (
            f"{kept.task} was evicted for {preemptor.name}, but with it running (every other "
            f"eviction kept) allocation alone starts {preemptor.name}")
