"""Classes the whole cluster's room refuses are parked, and stay suspended, as asking each does.

In an unworded cycle under the capacity plugin alone, a class whose request the cluster as
a whole is short of is refused from the room and the request alone
(`allocate.room_refusals`): the class walk parks it as the walk begins though the world its
kept answer was found in moved (a completion, a bind), and after a placement keeps it
suspended when the room still refuses it, instead of asking it again on reaching its next
job (`class_walk.walk_classes`). So is a class the room does not refuse but its node
pool's fit bound does, with the pool's count noted beside the bound (`allocate.pool_short`:
free GPUs scattered over nodes, none with room for one of its tasks). Three models are
driven in lockstep — one with that path, one incremental without it, one that judges
every waiting job afresh — on nodes of two GPU types with jobs that select one, virtual
clusters with quotas, gangs and task-by-task jobs;
between cycles jobs arrive, end (none, one or several at once: releases of various sizes)
or are stopped. Decisions must match in every cycle; reasons must match the incremental
twin's where the cycle is unworded and read out, and the fresh one's where it is worded.
"""

from __future__ import annotations

from collections.abc import Callable
from unittest import mock

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import Job, Resources, SchedulerName, TaskGroup
from shoal.api.decisions import Decisions, PendingReason
from shoal.scheduler import Profile
from shoal.scheduler.actions import allocate
from shoal.scheduler.job_classes import Probe
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session

from .lockstep import assert_same_cycle, one_cycle
from .test_class_walk import stop_whole
from .test_parked_classes import QUEUES, TYPES, typed_nodes_and_capped_queues

ROOM_REFUSALS = allocate.room_refusals
POOL_SHORT = allocate.pool_short

Shape = tuple[str, int, int, int, bool, str | None, float]
SHAPES = st.tuples(st.sampled_from(QUEUES), st.sampled_from([1_000, 1_000, 7_000]),
                   st.integers(1, 4), st.integers(1, 4),
                   st.sampled_from([True, True, True, False]), st.sampled_from([None, *TYPES]),
                   st.sampled_from([0.0, 5_000.0, 50_000.0]))
"""(queue, CPU and GPUs per task, tasks, gang, GPU type selected, attained service of
earlier runs): mostly gangs, whose classes are the ones refused from the room; some short
of CPU before GPUs, so that a placement changes the dimension a class is refused for."""


def make_job(name: str, shape: Shape, at: float) -> Job:
    queue, cpu, gpus, tasks, gang, kind, attained = shape
    group = TaskGroup("w", tasks, Resources.of(cpu=cpu, memory=1_000, gpu=gpus),
                      node_selector={"gpu-type": kind} if kind else {})
    return Job(name, (group,), queue=queue,
               scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT,
               submitted=at, attained_gpu_seconds=attained)
PER_QUEUE = Profile.from_yaml("""
name: las-per-queue
actions: "enqueue, allocate, preempt"
tiers:
  - plugins: [{name: las}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}]
""", "las-per-queue")
"""las with its virtual clusters taking turns: another one's placements may move what a
class suspended in this one read before the walk comes back to it (`class_walk._unpark`),
after it was asked again and gave the same reason."""


def step_world(models: list[SchedulerModel], live: SchedulerModel, change: str, ends: int,
               arrivals: list[Shape], count: int) -> int:
    """The same change to every model between two cycles: `ends` running jobs end, or the
    last one stops whole, then `arrivals` arrive and a minute passes. Returns the job count."""
    running = sorted(n for n, info in live.jobs.items() if info.running)
    if change == "end":
        for name in running[:ends]:
            for model in models:
                model.remove_job(name)
    elif change == "stop" and running:
        stop_whole(models, running[-1])
    new = [make_job(f"j{count + i:03d}", s, float(count + i)) for i, s in enumerate(arrivals)]
    for model in models:
        model.add_jobs(new)
        model.now += 60.0
    return count + len(new)


def twin_models(nodes: int, limits: list[int | None], jobs: list[Shape]
                ) -> tuple[list[Job], list[SchedulerModel]]:
    """The jobs made from `jobs`, and two models (kept and plain) over the typed nodes and
    capped queues with those jobs added."""
    made = [make_job(f"j{i:03d}", s, float(i)) for i, s in enumerate(jobs)]
    node_list, vcs = typed_nodes_and_capped_queues(nodes, limits)
    models = [SchedulerModel(node_list, vcs) for _ in range(2)]
    for model in models:
        model.add_jobs(made)
    return made, models


def load(name: str) -> Profile:
    return PER_QUEUE if name == PER_QUEUE.name else Profile.load(name)


Reasons = dict[str, PendingReason | None]
ROOM_ANSWERS: list[PendingReason] = []
"""The answers `allocate.room_refusals` gave in the live model's last cycle."""
POOL_ANSWERS: list[PendingReason] = []
"""Of those, the ones its node pool's bound gave (`allocate.pool_short`)."""


def pool_counted(session: Session, probe: Probe) -> PendingReason | None:
    reason = POOL_SHORT(session, probe)
    if reason is not None:
        POOL_ANSWERS.append(reason)
    return reason


def counted(session: Session) -> Callable[[int], PendingReason | None] | None:
    """`allocate.room_refusals`, its answers noted in `ROOM_ANSWERS`."""
    refused = ROOM_REFUSALS(session)
    if refused is None:
        return None
    found = refused

    def answer(klass: int) -> PendingReason | None:
        reason = found(klass)
        if reason is not None:
            ROOM_ANSWERS.append(reason)
        return reason
    return answer


def run(model: SchedulerModel, hooks: Hooks, profile: Profile, worded: bool, read: bool,
        room: bool) -> tuple[Decisions, Reasons]:
    """One cycle; `room`: with `allocate.room_refusals` and `allocate.pool_short` (else
    without them: `class_refusal` asks the pool itself); `read`: an unworded cycle's
    reasons written out and read back."""
    with mock.patch.object(allocate, "room_refusals",
                           counted if room else lambda session: None), \
            mock.patch.object(allocate, "pool_short",
                              pool_counted if room else lambda session, probe: None):
        return one_cycle(model, hooks, profile.actions(), worded, read)


@settings(max_examples=30, deadline=None)
@given(nodes=st.integers(1, 2),
       limits=st.lists(st.sampled_from([None, 4, 8]), min_size=3, max_size=3),
       jobs=st.lists(SHAPES, min_size=4, max_size=24),
       steps=st.lists(st.tuples(st.sampled_from(["unworded", "unworded", "read", "worded"]),
                                st.sampled_from(["arrive", "end", "end", "stop"]),
                                st.integers(1, 3), st.lists(SHAPES, max_size=3)),
                      min_size=2, max_size=8),
       profile=st.sampled_from(["las", "las-elastic", "sjf", "las-per-queue"]))
def test_room_refusals_decide_as_asking_each(
        nodes: int, limits: list[int | None], jobs: list[Shape],
        steps: list[tuple[str, str, int, list[Shape]]], profile: str) -> None:
    drive(nodes, limits, jobs, steps, profile)


WHOLE_NODES = st.tuples(st.sampled_from(["a", "a", "b"]), st.just(1_000),
                        st.sampled_from([1, 3, 3, 4]), st.integers(1, 2), st.booleans(),
                        st.just(None),
                        st.sampled_from([0.0, 5_000.0]))
"""Tasks of one GPU beside tasks of a whole node or nearly (nodes have 4), in uncapped
virtual clusters, mostly one: the room has GPUs for a big task while no node has, as the
pool's bound says (`allocate.pool_short`), and a small task's bind in the same virtual
cluster asks it again."""


@settings(max_examples=20, deadline=None)
@given(nodes=st.integers(1, 2),
       jobs=st.lists(WHOLE_NODES, min_size=6, max_size=20),
       steps=st.lists(st.tuples(st.sampled_from(["unworded", "unworded", "read", "worded"]),
                                st.sampled_from(["arrive", "arrive", "end", "stop"]),
                                st.integers(1, 2), st.lists(WHOLE_NODES, max_size=3)),
                      min_size=2, max_size=8),
       profile=st.sampled_from(["las", "sjf"]))
def test_pool_refusals_decide_as_asking_each(
        nodes: int, jobs: list[Shape], steps: list[tuple[str, str, int, list[Shape]]],
        profile: str) -> None:
    drive(nodes, [None, None, None], jobs, steps, profile)


def drive(nodes: int, limits: list[int | None], jobs: list[Shape],
          steps: list[tuple[str, str, int, list[Shape]]], profile: str) -> None:
    made = [make_job(f"j{i:03d}", s, float(i)) for i, s in enumerate(jobs)]
    node_list, vcs = typed_nodes_and_capped_queues(nodes, limits)
    live, plain, fresh = (SchedulerModel(node_list, vcs) for _ in range(3))
    fresh.incremental = False
    models = [live, plain, fresh]
    for model in models:
        model.add_jobs(made)
    chosen = load(profile)
    hooks = Hooks(chosen.plugins())
    count = len(made)
    for step, (mode, change, ends, arrivals) in enumerate(steps):
        worded, read = mode == "worded", mode == "read"
        got, reasons = run(live, hooks, chosen, worded, read, True)
        want, plain_reasons = run(plain, hooks, chosen, worded, read, False)
        assert_same_cycle(got, want, worded, step)
        assert reasons == plain_reasons, f"cycle {step}"
        assert_same_cycle(got, run(fresh, hooks, chosen, True, False, True)[0], worded, step)
        event(f"classes refused by the room: {'some' if ROOM_ANSWERS else 'none'}")
        event(f"classes refused by the pool's bound: {'some' if POOL_ANSWERS else 'none'}")
        ROOM_ANSWERS.clear()
        POOL_ANSWERS.clear()
        count = step_world(models, live, change, ends, arrivals, count)


TAKING_TURNS = st.one_of(
    st.tuples(st.sampled_from(["a", "b"]), st.just(1_000), st.just(1), st.just(1),
              st.booleans(), st.just(None), st.sampled_from([0.0, 5_000.0])),
    st.tuples(st.sampled_from(["a", "b"]), st.just(1_000), st.sampled_from([3, 4]),
              st.sampled_from([2, 3]), st.just(True), st.just(None), st.just(0.0)))
"""Small tasks in two virtual clusters beside gangs the room refuses once some run: under
`las-per-queue` a bind in one asks its suspended classes again, which mostly give the same
reason, and the other's binds move what they read before the walk comes back to them."""


@settings(max_examples=15, deadline=None)
@given(nodes=st.integers(1, 2),
       jobs=st.lists(TAKING_TURNS, min_size=10, max_size=30),
       steps=st.lists(st.tuples(st.sampled_from(["unworded", "read", "read"]),
                                st.sampled_from(["arrive", "end", "end"]),
                                st.integers(1, 3), st.lists(TAKING_TURNS, max_size=4)),
                      min_size=2, max_size=6))
def test_classes_asked_again_across_turns_decide_as_asking_each(
        nodes: int, jobs: list[Shape], steps: list[tuple[str, str, int, list[Shape]]]
        ) -> None:
    drive(nodes, [None, None, None], jobs, steps, PER_QUEUE.name)
