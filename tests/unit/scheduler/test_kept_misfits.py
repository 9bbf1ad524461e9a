"""A job class turned down in one cycle is not tried again in a later cycle while nothing it
reads moved (`shoal.scheduler.job_classes.Misfits.world`): the same reason stands, and it is
tried again once capacity comes back or is taken."""

from __future__ import annotations

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup, VirtualCluster
from shoal.api.decisions import PendingReason
from shoal.scheduler import Profile
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session


def gang(name: str, gpus: int, at: float) -> Job:
    return Job(name, (TaskGroup("w", 2, Resources.of(cpu=1_000, gpu=gpus)),),
               queue="a", scheduler_name=SchedulerName.SHOAL, submitted=at)


def run_cycle(model: SchedulerModel, hooks: Hooks, profile: Profile) -> Session:
    session = Session(model, hooks)
    for action in profile.actions():
        action.execute(session)
    session.close()
    return session


def reason(model: SchedulerModel, name: str) -> PendingReason | None:
    return model.jobs[name].reason


def test_a_class_turned_down_keeps_its_reason_until_capacity_moves() -> None:
    profile = Profile.load("las")
    hooks = Hooks(profile.plugins())
    model = SchedulerModel([Node("n0", Resources.of(cpu=16_000, memory=64_000, gpu=4))],
                           [VirtualCluster("a")])
    model.add_jobs([gang("fits", 2, 0.0), gang("big1", 2, 1.0)])
    first = run_cycle(model, hooks, profile)
    assert {b.task.job for b in first.decisions.binds} == {"fits"}
    turned_down = reason(model, "big1")
    assert turned_down is not None

    # Another job of the class arrives and the clock moves: nothing freed or taken, so the
    # class keeps the reason found in the first cycle (the very object: it was not tried).
    model.add_job(gang("big2", 2, 2.0))
    model.now += 600.0
    second = run_cycle(model, hooks, profile)
    assert not second.decisions.binds
    assert reason(model, "big1") is turned_down
    assert reason(model, "big2") is turned_down

    # A task of the running job stops: capacity came back, so the class is tried afresh.
    model.release_task(model.jobs["fits"].running[0].ref)
    model.now += 600.0
    run_cycle(model, hooks, profile)
    again = reason(model, "big1")
    assert again is not turned_down


def test_capacity_taken_outside_a_cycle_ends_a_kept_reason() -> None:
    """A job added with tasks already running takes capacity without any cycle: the kept
    reason no longer stands (`ClusterState.taken`)."""
    profile = Profile.load("las")
    hooks = Hooks(profile.plugins())
    model = SchedulerModel([Node("n0", Resources.of(cpu=16_000, memory=64_000, gpu=4))],
                           [VirtualCluster("a")])
    model.add_jobs([gang("fits", 1, 0.0), gang("big1", 2, 1.0)])
    run_cycle(model, hooks, profile)
    turned_down = reason(model, "big1")
    assert turned_down is not None
    taken = model.cluster.taken
    model.cluster.take(model.cluster.by_name["n0"], Resources.of(cpu=1_000, gpu=1))
    assert model.cluster.taken == taken + 1
    run_cycle(model, hooks, profile)
    assert reason(model, "big1") is not turned_down
