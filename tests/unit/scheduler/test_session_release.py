"""A released session is freed as its last reference goes, without the garbage collector
(`Session.release`): the simulator opens one per cycle, and each left some fifty objects
of cyclic garbage behind (its misfits, admissions and the class walk's unwritten reasons)."""

from __future__ import annotations

import gc
import weakref

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup, VirtualCluster
from shoal.scheduler import Profile
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session


def gang(name: str, gpus: int, at: float) -> Job:
    return Job(name, (TaskGroup("w", 2, Resources.of(cpu=1_000, gpu=gpus)),),
               queue="a", scheduler_name=SchedulerName.SHOAL, submitted=at)


def cycle(model: SchedulerModel, hooks: Hooks, profile: Profile, release: bool
          ) -> weakref.ref[Session]:
    session = Session(model, hooks, worded=False)
    for action in profile.actions():
        action.execute(session)
    session.decide()
    if release:
        session.release()
    return weakref.ref(session)


ALLOCATING = Profile.from_yaml("""
name: las-allocating
actions: "enqueue, allocate"
tiers:
  - plugins: [{name: las}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}]
""")
"""`las` without its preempt action, whose victim listing keeps cycles of its own."""


def test_a_released_session_needs_no_collector() -> None:
    profile = ALLOCATING
    hooks = Hooks(profile.plugins())
    model = SchedulerModel([Node("n0", Resources.of(cpu=16_000, memory=64_000, gpu=4))],
                           [VirtualCluster("a")])
    # One binds, one is turned down (a misfit) and one waits behind it: every part the
    # cycle builds around the session.
    model.add_jobs([gang("fits", 2, 0.0), gang("big1", 2, 1.0), gang("big2", 2, 2.0)])
    # The plugins keep the last session they were opened with: a later one replaces it.
    gc.collect()
    gc.disable()
    try:
        kept = cycle(model, hooks, profile, release=False)
        cycle(model, hooks, profile, release=True)
        assert kept() is not None  # not released: only the collector frees it
        model.now += 5.0
        released = cycle(model, hooks, profile, release=True)
        cycle(model, hooks, profile, release=True)
        assert released() is None
    finally:
        gc.enable()
    gc.collect()
    assert kept() is None
