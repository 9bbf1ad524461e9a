"""The preempt action's walk answers classes from their kept facts before it reaches them
(issue 18, `PreemptorWalk._start`, `ShortSearches.known_answers`, `ShortVerdict.unfit`), and
decides what a walk that asks every class at its first job decides.

1. Two models of one random world, each with its actions kept from one cycle to the next,
   are driven in lockstep: one parks every class whose lasting verdict or short verdict
   still holds before visiting any job, and keeps a count node by node that turned a class
   down while no capacity comes back; the other (`ShortSearches.carries = False`) asks
   each class at its first job and counts afresh. Under `las`, `las-elastic` and a
   priority profile that preempts (some priority classes `Never`, sometimes at most one
   preemptor per cycle), with jobs arriving, ending and changing between cycles, every
   cycle must decide the same binds, evictions and resizes, give the same reasons, and
   leave the same lending each time it is settled.
   The carried walk also keeps each class's jobs left out by the allocate action's walk
   across cycles, changed job by job (`PreemptorLines.skipping`); each walk's classes and
   the jobs it skips in each must be those read afresh from the lines, and the walk that
   asks every class marks them afresh (`PreemptorLines.keeps_skips = False`).
2. Random traces replayed by the simulator under `las` with low thresholds give the same
   job records either way.
The carried walk also counts node by node once per class shape on the same capacity
(`ShortSearches._unfit_of`); the walk asking every class counts each class afresh.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from unittest.mock import patch

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import (
    Job,
    Node,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskState,
    VirtualCluster,
)
from shoal.core import Snapshot
from shoal.scheduler import Profile
from shoal.scheduler.actions.preemptor_walk import PreemptorLines, PreemptorWalk
from shoal.scheduler.actions.short_searches import ShortSearches
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session
from shoal.sim.simulator import SimConfig, simulate

from .lockstep import assert_same_cycle, change_both
from .strategies import World, worlds
from .test_kept_indexes import LAS, TraceCluster, traces
from .test_preemptor_walk import PROFILES, Runner, backlogs, with_never

GPU = Resources.of(cpu=1_000, memory=1_024, gpu=1)


@contextmanager
def counting_known(known: list[int]) -> Iterator[None]:
    """Count the classes each walk parked before visiting any job."""
    start = PreemptorWalk._start

    def counted(self: PreemptorWalk) -> None:
        start(self)
        known.append(len(self.parked))

    with patch.object(PreemptorWalk, "_start", counted):
        yield


@contextmanager
def asking_every_class() -> Iterator[None]:
    with patch.object(ShortSearches, "carries", False), \
            patch.object(PreemptorLines, "keeps_skips", False):
        yield


@contextmanager
def checking_set_ups(kept: list[bool]) -> Iterator[None]:
    """Check each walk's classes, and the order keys of the jobs it skips in each, against
    the lines read afresh; note whether any class carried jobs left out into the walk."""
    init = PreemptorWalk.__init__

    def checked(self: PreemptorWalk, session: Session, cycle: Any, lines: PreemptorLines,
                walked: Any) -> None:
        carried = any(s.left for line in lines.by_line.values() for s in line.values())
        init(self, session, cycle, lines, walked)
        kept.append(carried)
        want = {}
        for where in walked.lines:
            for source in lines.by_line.get(where, {}).values():
                want[id(source)] = sorted(
                    e[0] for e in source.entries if e[1] in self.skip)
        got = {id(s): sorted(s.skipped or []) for s in self.sources if s.filed}
        assert got == want
        assert all(s.at == 0 for s in self.sources)

    with patch.object(PreemptorWalk, "__init__", checked):
        yield


@settings(max_examples=40, deadline=None)
@given(world=st.one_of(backlogs(), backlogs(), worlds(profiles=("las",))), data=st.data())
def test_classes_answered_up_front_decide_as_those_asked(world: World, data: st.DataObject
                                                        ) -> None:
    name = data.draw(st.sampled_from(sorted(PROFILES)), label="profile")
    world = with_never(world, data.draw(st.lists(st.booleans(), min_size=3, max_size=3),
                                        label="never"))
    limit = data.draw(st.sampled_from([None, None, 1]), label="max_preemptors")
    snapshot = world.snapshot()
    carried = Runner(SchedulerModel.from_snapshot(snapshot), PROFILES[name], True, limit)
    asked = Runner(SchedulerModel.from_snapshot(snapshot), PROFILES[name], True, limit)
    later = [j for j in world.jobs if not j.tasks]
    known: list[int] = []
    plans: list[bool] = []
    for step in range(data.draw(st.integers(2, 6), label="cycles")):
        close = data.draw(st.booleans(), label="reasons")
        with counting_known(known), checking_set_ups(plans):
            got = carried.cycle(close)
        with asking_every_class():
            want = asked.cycle(close)
        assert_same_cycle(got, want, close, step)
        assert carried.lendings == asked.lendings, f"cycle {step}"
        change_both(data, carried.model, asked.model, later, step)
        if later and data.draw(st.booleans(), label="impossible"):
            # A job no node can hold, in the virtual cluster of one that waits: its reason
            # is written before the allocate action's walk, which leaves it out.
            huge = replace(later[0], name=f"huge{step}", tasks=(),
                           groups=(TaskGroup("w", 1, GPU.scale(64)),))
            carried.model.add_job(huge)
            asked.model.add_job(huge)
        waiting = sorted(n for n, j in carried.model.jobs.items() if not j.running)
        if waiting and data.draw(st.booleans(), label="withdraw"):
            # A waiting job withdrawn: its class may leave a line that stays walked.
            gone = data.draw(st.sampled_from(waiting), label="withdrawn")
            carried.model.remove_job(gone)
            asked.model.remove_job(gone)
    event(f"{name}: {'answered up front' if any(known) else 'none up front'}")
    event("jobs left out carried into a walk" if any(plans) else "none carried")


@settings(max_examples=10, deadline=None)
@given(trace=traces(), nodes=st.integers(1, 4))
def test_replays_decide_as_walks_asking_every_class(trace: Any, nodes: int) -> None:
    config = SimConfig(cycle_on_events=True, check_invariants=True)
    known: list[int] = []
    kept: list[bool] = []
    with counting_known(known), checking_set_ups(kept):
        fast = simulate(trace, TraceCluster(nodes), LAS, config)
    event("answered up front" if any(known) else "none up front")
    event("jobs left out carried into a walk" if any(kept) else "none carried")
    with asking_every_class():
        slow = simulate(trace, TraceCluster(nodes), LAS, config)
    assert fast.jobs == slow.jobs


def test_an_unchanged_class_is_answered_before_its_job_is_visited() -> None:
    """The properties above would pass with nothing answered up front: here the class of
    `a` and `b` (each needing more than is free plus what `big` frees; `other` ranks
    ahead, started recently) is answered
    by its verdict at its first job in the first cycle, and before the walk visits any job
    in the second."""
    nodes = (Node("n0", GPU.scale(8)),)
    big = replace(Job("big", (TaskGroup("w", 1, GPU.scale(2)),),
                      scheduler_name=SchedulerName.SHOAL, submitted=0.0),
                  tasks=(Task("big", "w", 0, TaskState.RUNNING, "n0", (0, 1), 0.0),))
    other = replace(Job("other", (TaskGroup("w", 1, GPU.scale(2)),),
                        scheduler_name=SchedulerName.SHOAL, submitted=0.0),
                    tasks=(Task("other", "w", 0, TaskState.RUNNING, "n0", (2, 3), 99_000.0),))
    waiting = [Job(name, (TaskGroup("w", 1, GPU.scale(8)),), scheduler_name=SchedulerName.SHOAL,
                   submitted=at) for name, at in (("a", 1.0), ("b", 2.0))]
    model = SchedulerModel.from_snapshot(Snapshot(nodes, (big, other, *waiting),
                                                        now=100_000.0))
    profile = Profile.load("las")
    hooks = Hooks(profile.plugins())
    actions = profile.actions()
    known: list[int] = []
    with counting_known(known):
        for _ in range(2):
            session = Session(model, hooks)
            for action in actions:
                action.execute(session)
            assert not session.decisions.evictions and not session.decisions.binds
    assert known == [0, 1]


def test_a_class_counted_unfit_is_counted_again_before_the_walk_reaches_it() -> None:
    """A class with nothing ranked behind it and enough GPUs free in all, but no node with
    room for its task (`w`: 4 GPUs; 2 free on each of n0 and n1): its count node by node
    is void whenever capacity comes back anywhere (`c` ends on n2), and is made again
    before the walk visits any job, so the class is answered up front in every cycle after
    its search, the one after a release included."""
    def running(name: str, node: str, gpus: tuple[int, ...]) -> Job:
        return replace(Job(name, (TaskGroup("w", 1, GPU.scale(len(gpus))),),
                           scheduler_name=SchedulerName.SHOAL, submitted=0.0),
                       tasks=(Task(name, "w", 0, TaskState.RUNNING, node, gpus, 99_000.0),))
    nodes = (Node("n0", GPU.scale(4)), Node("n1", GPU.scale(4)), Node("n2", GPU.scale(1)))
    jobs = (running("a", "n0", (0, 1)), running("b", "n1", (0, 1)), running("c", "n2", (0,)),
            Job("w", (TaskGroup("w", 1, GPU.scale(4)),), scheduler_name=SchedulerName.SHOAL,
                submitted=1.0))
    model = SchedulerModel.from_snapshot(Snapshot(nodes, jobs, now=100_000.0))
    profile = Profile.load("las")
    hooks = Hooks(profile.plugins())
    actions = profile.actions()
    known: list[int] = []
    with counting_known(known):
        for cycle in range(3):
            if cycle == 2:
                model.remove_job("c")  # capacity comes back, though not where `w` fits
            session = Session(model, hooks)
            for action in actions:
                action.execute(session)
            assert not session.decisions.evictions and not session.decisions.binds
    assert known == [0, 1, 1]


def test_classes_of_one_shape_are_counted_node_by_node_once() -> None:
    """Two classes of one shape in two virtual clusters (`w1` in `a`, `w2` in `b`: one
    task of 4 GPUs; 2 free on each of n0 and n1; nothing ranked behind either): once
    capacity comes back (`c` ends on n2), the count node by node that keeps both turned
    down is made once for the shape, not once per class (`ShortSearches._unfit_of`) — and
    once per class where every class is asked and counted afresh."""
    def running(name: str, node: str, gpus: tuple[int, ...]) -> Job:
        return replace(Job(name, (TaskGroup("w", 1, GPU.scale(len(gpus))),),
                           scheduler_name=SchedulerName.SHOAL, submitted=0.0),
                       tasks=(Task(name, "w", 0, TaskState.RUNNING, node, gpus, 99_000.0),))

    def counted(carries: bool) -> list[int]:
        nodes = (Node("n0", GPU.scale(4)), Node("n1", GPU.scale(4)),
                 Node("n2", GPU.scale(1)))
        jobs = (running("a0", "n0", (0, 1)), running("b0", "n1", (0, 1)),
                running("c", "n2", (0,)),
                *(Job(name, (TaskGroup("w", 1, GPU.scale(4)),), queue=queue,
                      scheduler_name=SchedulerName.SHOAL, submitted=1.0)
                  for name, queue in (("w1", "a"), ("w2", "b"))))
        model = SchedulerModel.from_snapshot(Snapshot(
            nodes, jobs, (VirtualCluster("a"), VirtualCluster("b")), now=100_000.0))
        profile = Profile.load("las")
        hooks = Hooks(profile.plugins())
        actions = profile.actions()
        counts: list[int] = []
        unfit_now = ShortSearches._unfit_now

        def counting(self: ShortSearches, preemptor: Any) -> bool:
            counts[-1] += 1
            return unfit_now(self, preemptor)

        with patch.object(ShortSearches, "_unfit_now", counting), \
                patch.object(ShortSearches, "carries", carries):
            for cycle in range(3):
                if cycle == 2:
                    model.remove_job("c")
                counts.append(0)
                session = Session(model, hooks)
                for action in actions:
                    action.execute(session)
                assert not session.decisions.evictions and not session.decisions.binds
        return counts

    assert counted(True)[2] == 1
    assert counted(False)[2] == 2
