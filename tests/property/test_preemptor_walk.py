"""The preempt action's walk by preemptor class decides what the per-job loop decides
(issue 18, `shoal.scheduler.actions.preemptor_walk`).

1. Two models of one random world, each with its own actions kept from one cycle to the
   next (so the preemptor lines and verdicts last across cycles), are driven in lockstep:
   one walks the preemptors by class, parking a class its verdict answers until the next
   commit; the other asks every waiting job in job order (`Preempt.by_class = False`).
   Under `las`, `las-elastic` and a priority profile that preempts — some priority classes
   `preemptionPolicy: Never` (their jobs settle the quota tree's lending), sometimes at most
   one preemptor per cycle, sometimes two instances of the actions taking turns on one
   model — every cycle must decide the same binds, evictions and resizes, give the same
   reasons, and leave the same lending each time it is settled.
2. Random traces replayed by the simulator under `las` with low thresholds give the same
   job records either way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from unittest.mock import patch

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import Decisions, Job, Node, PriorityClass, Resources, TaskGroup, VirtualCluster
from shoal.api.queue_policy import PreemptionPolicy, QueuePreemption, WithinQueue
from shoal.scheduler import Profile
from shoal.scheduler.actions import preemptor_walk
from shoal.scheduler.actions.preempt import Preempt, Preemption
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session
from shoal.sim.simulator import SimConfig, simulate

from .lockstep import assert_same_cycle, change_both
from .strategies import World, warm_up, worlds
from .test_kept_indexes import LAS, TraceCluster, traces

PRIORITY_PREEMPT = Profile.from_yaml("""
name: priority-preempt
actions: "enqueue, allocate, preempt"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}]
""")
PROFILES = {"las": Profile.load("las"), "las-elastic": Profile.load("las-elastic"),
            "priority-preempt": PRIORITY_PREEMPT}


class Runner:
    """One model with its plugins and actions kept across cycles, and the lending each
    settling left."""

    def __init__(self, model: SchedulerModel, profile: Profile, by_class: bool,
                 max_preemptors: int | None, instances: int = 1) -> None:
        self.model = model
        self.hooks = Hooks(profile.plugins())
        self.actions = [profile.actions() for _ in range(instances)]
        """Several sets of actions take turns on the model (each keeps its own lines)."""
        for action in (a for actions in self.actions for a in actions):
            if isinstance(action, Preempt):
                action.by_class = by_class
                action.max_preemptors = max_preemptors
        self.lendings: list[tuple[int, bool]] = []
        self.cycles = 0

    def cycle(self, close: bool) -> Decisions:
        session = Session(self.model, self.hooks)
        actions = self.actions[self.cycles % len(self.actions)]
        self.cycles += 1
        with recording(self.lendings):
            for action in actions:
                action.execute(session)
        return session.close() if close else session.decide()


@contextmanager
def recording(lendings: list[tuple[int, bool]]) -> Iterator[None]:
    settle = Preemption._settle_lending

    def recorded(self: Preemption) -> None:
        settle(self)
        lendings.append((len(self.session.decisions.binds), self.session.quota.lending))

    with patch.object(Preemption, "_settle_lending", recorded):
        yield


@contextmanager
def counting_parks(parks: list[int]) -> Iterator[None]:
    resume = preemptor_walk.PreemptorWalk._resume

    def counted(self: preemptor_walk.PreemptorWalk, key: Any) -> None:
        parks.append(len(self.parked))
        resume(self, key)

    with patch.object(preemptor_walk.PreemptorWalk, "_resume", counted):
        yield


@st.composite
def backlogs(draw: st.DrawFn) -> World:
    """A crowded cluster: a few GPU nodes, jobs of three shapes in two virtual clusters
    (many of one preemptor class), some placed by a first cycle, more waiting."""
    nodes = tuple(Node(f"n{i}", Resources.of(cpu=16_000, memory=65_536, gpu=4))
                  for i in range(draw(st.integers(1, 2))))
    policy = draw(st.sampled_from(list(PreemptionPolicy)))
    classes = (PriorityClass("pc-low", 10), PriorityClass("pc-high", 1000,
                                                          preemption_policy=policy))
    shapes = st.sampled_from([Resources.of(cpu=1_000, memory=1_024, gpu=g) for g in (1, 2, 4)])

    def jobs(prefix: str, count: int, start: int, ranks: list[str | None]) -> list[Job]:
        return [Job(f"{prefix}{i}", (TaskGroup("g0", draw(st.integers(1, 2)), draw(shapes)),),
                    queue=draw(st.sampled_from(["a", "b"])),
                    priority_class=draw(st.sampled_from(ranks)), submitted=float(start + i))
                for i in range(count)]

    early = jobs("e", draw(st.integers(0, 6)), 0, [None, "pc-low"])
    later = jobs("w", draw(st.integers(6, 24)), 10, [None, None, "pc-low", "pc-high"])
    # Under `LowerOrNewerEqualPriority` a preemptor has no class: walked one by one.
    within = draw(st.sampled_from([WithinQueue.LOWER_PRIORITY,
                                   WithinQueue.LOWER_OR_NEWER_EQUAL_PRIORITY]))
    vcs = (VirtualCluster("a"), VirtualCluster("b", preemption=QueuePreemption(within)))
    world = World(nodes, vcs, classes, tuple(early), "las")
    return warm_up(world, later, 1 if early else 0, [])


def with_never(world: World, never: list[bool]) -> World:
    classes = tuple(replace(pc, preemption_policy=PreemptionPolicy.NEVER) if flag else pc
                    for pc, flag in zip(world.priority_classes, never, strict=False))
    return replace(world, priority_classes=classes)


@settings(max_examples=60, deadline=None)
@given(world=st.one_of(backlogs(), backlogs(), backlogs(),
                       worlds(profiles=("las", "default"))), data=st.data())
def test_the_class_walk_decides_as_the_per_job_loop(world: World, data: st.DataObject
                                                   ) -> None:
    name = data.draw(st.sampled_from(sorted(PROFILES)), label="profile")
    never = data.draw(st.lists(st.booleans(), min_size=3, max_size=3), label="never")
    world = with_never(world, never)
    limit = data.draw(st.sampled_from([None, None, 1]), label="max_preemptors")
    snapshot = world.snapshot()
    instances = data.draw(st.sampled_from([1, 1, 2]), label="instances")
    walk = Runner(SchedulerModel.from_snapshot(snapshot), PROFILES[name], True, limit,
                  instances)
    loop = Runner(SchedulerModel.from_snapshot(snapshot), PROFILES[name], False, limit)
    later = [j for j in world.jobs if not j.tasks]
    parks: list[int] = []
    for step in range(data.draw(st.integers(2, 6), label="cycles")):
        close = data.draw(st.booleans(), label="reasons")
        with counting_parks(parks):
            got = walk.cycle(close)
        want = loop.cycle(close)
        assert_same_cycle(got, want, close, step)
        assert walk.lendings == loop.lendings, f"cycle {step}"
        change_both(data, walk.model, loop.model, later, step)
    event(f"{name}: {'parked' if any(parks) else 'none parked'}, "
          f"{'settled' if loop.lendings else 'not settled'}"
          f"{', lending withheld' if any(not lent for _, lent in loop.lendings) else ''}")


@settings(max_examples=15, deadline=None)
@given(trace=traces(), nodes=st.integers(1, 4))
def test_replays_decide_as_the_per_job_loop(trace: Any, nodes: int) -> None:
    config = SimConfig(cycle_on_events=True, check_invariants=True)
    parks: list[int] = []
    with counting_parks(parks):
        fast = simulate(trace, TraceCluster(nodes), LAS, config)
    event("parked" if any(parks) else "none parked")
    with patch.object(Preempt, "by_class", False):
        slow = simulate(trace, TraceCluster(nodes), LAS, config)
    assert fast.jobs == slow.jobs
