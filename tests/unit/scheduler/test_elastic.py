"""The elastic action over time in one scheduler model (as the simulator and the control
loop keep it): growth waits out the scale cooldown counted from the job's last change of
size, the least-served job grows first, a virtual cluster's maximum bounds growth, a
surplus task that ends leaves the job to be repaired, and a job being stopped never grows."""

from __future__ import annotations

from shoal.api import (
    Elasticity,
    Job,
    Node,
    ResourceLimit,
    Resources,
    ScaleStep,
    SchedulerName,
    TaskGroup,
    TaskRef,
    VirtualCluster,
)
from shoal.api.decisions import Decisions
from shoal.scheduler import Profile, run_cycle
from shoal.scheduler.model import SchedulerModel

ELASTIC = Profile.load("elastic")


def node(gpus: int, name: str = "n0") -> Node:
    return Node(name, Resources.of(cpu=64_000, memory=512_000, gpu=gpus))


def elastic_job(name: str, low: int, high: int, *, step: ScaleStep = ScaleStep.POWER_OF_TWO,
                cooldown: float = 0.0, queue: str = "default", at: float = 0.0) -> Job:
    return Job(name, (TaskGroup("w", high, Resources.of(cpu=1000, gpu=1)),), queue=queue,
               scheduler_name=SchedulerName.SHOAL, submitted=at,
               elastic=Elasticity("w", low, high, step, 1, cooldown))


def cycle(model: SchedulerModel, now: float) -> Decisions:
    model.now = now
    return run_cycle(model, ELASTIC)


def sizes(model: SchedulerModel) -> dict[str, int]:
    return {name: info.elastic_size() for name, info in model.jobs.items()}


def test_growth_waits_out_the_cooldown_from_the_last_change_of_size() -> None:
    model = SchedulerModel([node(8)])
    model.add_job(elastic_job("train", 1, 8, cooldown=60))
    grown = {now: sizes(cycle(model, now) and model)["train"] for now in
             (0, 30, 59, 60, 61, 119, 120, 179, 180, 400)}
    assert grown == {0: 1, 30: 1, 59: 1, 60: 2, 61: 2, 119: 2, 120: 4, 179: 4, 180: 8,
                     400: 8}


def test_the_least_served_job_grows_first() -> None:
    model = SchedulerModel([node(6)])
    model.add_job(elastic_job("big", 4, 8, step=ScaleStep.ANY))
    model.add_job(elastic_job("small", 1, 8, step=ScaleStep.ANY, at=1))
    decisions = cycle(model, 0)
    # big runs 4/8, small 1/8: small is served least, so the one GPU left goes to it.
    assert [(r.job, r.replicas) for r in decisions.resizes] == [("small", 2)]
    assert sizes(model) == {"big": 4, "small": 2}
    assert cycle(model, 1).resizes == []  # the cluster is full


def test_a_virtual_clusters_maximum_bounds_growth() -> None:
    team = VirtualCluster("team", max=ResourceLimit.of({"gpu": 3}))
    model = SchedulerModel([node(8)], [team])
    model.add_job(elastic_job("train", 1, 8, step=ScaleStep.ANY, queue="team"))
    for now in range(6):
        cycle(model, now)
    assert sizes(model) == {"train": 3}
    assert model.quota.get("team").usage.gpu == 3


def test_a_surplus_task_that_ends_is_repaired_and_a_stopping_job_never_grows() -> None:
    model = SchedulerModel([node(4)])
    model.add_job(elastic_job("train", 1, 4))
    for now in range(3):
        cycle(model, now)
    assert sizes(model) == {"train": 4}
    model.release_task(TaskRef("train", "w", 2))  # it failed and is retried
    assert "train" not in model.waiting  # a surplus task is the elastic action's
    decisions = cycle(model, 3)
    assert [(r.replicas, r.reason.split(":")[0]) for r in decisions.resizes] == [
        (4, "restored from 3")]
    model.withdraw("train")
    model.finish_task(TaskRef("train", "w", 3))
    decisions = cycle(model, 4)
    assert decisions.binds == [] and sizes(model) == {"train": 3}


def test_a_finishing_job_is_neither_repaired_nor_grown() -> None:
    """Live, a job's tasks end one by one: once one has succeeded the job is finishing, and
    stopping its healthy tasks to restore an allowed size would only lose their work. A
    task that failed for good leaves the job to be repaired."""
    for name in ("done", "broken"):
        model = SchedulerModel([node(4)])
        model.add_job(elastic_job(name, 1, 4))
        for now in range(3):
            cycle(model, now)
        assert sizes(model) == {name: 4}
        if name == "done":
            model.task_succeeded(TaskRef(name, "w", 3))
            decisions = cycle(model, 3)
            assert decisions.evictions == [] and decisions.resizes == []
            assert sizes(model) == {name: 3}
        else:
            model.finish_task(TaskRef(name, "w", 3))  # failed, past its retries
            decisions = cycle(model, 3)
            assert [(r.replicas, r.reason.split(" ")[0]) for r in decisions.resizes] == [
                (2, "shrunk")]
            assert [e.task.index for e in decisions.evictions] == [2]


def test_the_job_with_the_least_attained_service_grows_first() -> None:
    """On 5 GPUs at time 0: `veteran` (2 to 8) and `newcomer` (1 to 2) start beside a 1-GPU
    `blocker`, and veteran takes the last GPU. At time 100 the blocker ends: veteran has
    attained 300 GPU-seconds, newcomer 100, so the freed GPU goes to newcomer — although it
    runs the larger fraction of its maximum (1/2 against 3/8)."""
    model = SchedulerModel([node(5)])
    model.add_job(elastic_job("veteran", 2, 8, step=ScaleStep.ANY))
    model.add_job(Job("blocker", (TaskGroup("w", 1, Resources.of(cpu=1000, gpu=1)),),
                      submitted=1))
    model.add_job(elastic_job("newcomer", 1, 2, step=ScaleStep.ANY, at=2))
    first = cycle(model, 0)
    assert [(r.job, r.replicas) for r in first.resizes] == [("veteran", 3)]
    model.finish_task(TaskRef("blocker", "w", 0))
    decisions = cycle(model, 100)
    assert [(r.job, r.replicas) for r in decisions.resizes] == [("newcomer", 2)]
