"""Sub-clusters of a job's own virtual cluster in the scheduler model (seed 003's nesting):
work submitted into one is held to its maximum and borrows up to the job's; they survive a
rebuild from the store; they go when their job goes, but only once the work inside has
left; and a retried job gets its own virtual cluster back only then."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shoal.api import (
    Job,
    JobState,
    Node,
    PendingKind,
    ResourceLimit,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskRef,
    TaskState,
    VirtualCluster,
)
from shoal.core.snapshot import SnapshotError
from shoal.scheduler import run_cycle
from shoal.scheduler.model import SchedulerModel

NODES = (Node("n0", Resources.of(cpu=16_000, memory=64_000)),)
OWN = VirtualCluster("job:tune", min=Resources.of(cpu=4000),
                     max=ResourceLimit.of({"cpu": 8000}))


def cpus(n: int) -> ResourceLimit:
    return ResourceLimit.of({"cpu": 1000 * n})


def sub(name: str, parent: str = "job:tune", low: int = 0, high: int | None = None
        ) -> VirtualCluster:
    return VirtualCluster(f"job:tune/{name}", parent, Resources.of(cpu=1000 * low),
                          ResourceLimit() if high is None else cpus(high))


def job(name: str, queue: str = "default", replicas: int = 1, at: float = 0.0,
        tasks: tuple[Task, ...] = (), own: VirtualCluster | None = None,
        subs: tuple[VirtualCluster, ...] = ()) -> Job:
    return Job(name, (TaskGroup("w", replicas, Resources.of(cpu=1000, memory=1000)),),
               queue=queue, scheduler_name=SchedulerName.DEFAULT, submitted=at, tasks=tasks,
               virtual_cluster=own, sub_clusters=subs)


def running(name: str, index: int = 0) -> Task:
    return Task(name, "w", index, TaskState.RUNNING, node="n0")



def driver_running() -> SchedulerModel:
    model = SchedulerModel(NODES)
    model.add_job(job("tune", own=OWN))
    assert [b.task.job for b in run_cycle(model).binds] == ["tune"]
    return model


def test_work_in_a_sub_cluster_is_held_to_its_max_and_borrows_up_to_the_jobs() -> None:
    model = driver_running()
    model.add_sub_clusters("tune", [sub("data", low=2, high=2), sub("train", "job:tune/data"),
                                    sub("eval")])
    assert model.quota.get("job:tune/train").parent is model.quota.get("job:tune/data")
    model.add_job(job("capped", "job:tune/train", replicas=4, at=1))
    model.add_job(job("borrower", "job:tune/eval", replicas=8, at=2))
    decisions = run_cycle(model)
    placed = [b.task.job for b in decisions.binds]
    assert placed.count("capped") == 2  # data's maximum, train's parent
    # The job's own maximum is 8 CPUs: its driver holds 1, capped 2, so eval borrows 5.
    assert placed.count("borrower") == 5
    assert "borrower" in model.waiting  # its last three wait for the job's quota
    assert model.quota.get("job:tune").usage.cpu == 8000


def test_sub_clusters_need_the_jobs_own_virtual_cluster_to_exist() -> None:
    model = SchedulerModel(NODES)
    model.add_job(job("plain"))
    with pytest.raises(SnapshotError, match="no virtual cluster of its own"):
        model.add_sub_clusters("plain", [sub("x")])


def test_a_rebuild_restores_sub_clusters_and_the_work_charged_to_them() -> None:
    driver = job("tune", tasks=(running("tune"),), own=OWN,
                 subs=(sub("data", high=2), sub("train", "job:tune/data")))
    inside = job("trial", "job:tune/train", replicas=2, at=1,
                 tasks=(running("trial", 0), running("trial", 1)))
    model = SchedulerModel(NODES)
    model.add_jobs([inside, driver])
    assert model.quota.get("job:tune/train").usage.cpu == 2000
    assert model.quota.get("job:tune/data").usage.cpu == 2000
    assert model.quota.get("job:tune").usage.cpu == 3000
    assert model.jobs["trial"].blocker is None


def test_sub_clusters_go_with_their_job_once_the_work_inside_has_left() -> None:
    model = driver_running()
    model.add_sub_clusters("tune", [sub("data", low=1), sub("train", "job:tune/data")])
    model.add_job(job("trial", "job:tune/train", at=1))
    run_cycle(model)
    model.remove_job("tune")  # the driver ended; trial is still being stopped
    assert "job:tune/train" in model.quota.queues and "job:tune" in model.retiring
    model.remove_job("trial")
    assert not [q for q in model.quota.queues if q.startswith("job:tune")]
    assert model.retiring == set() and model.sub_clusters == {}
    assert model.quota.root.usage.is_zero() and model.quota.get("default").reserved.is_zero()


def test_a_retried_job_gets_its_virtual_cluster_back_once_the_old_one_is_empty() -> None:
    model = driver_running()
    model.add_sub_clusters("tune", [sub("data")])
    model.add_job(job("trial", "job:tune/data", at=1))
    run_cycle(model)
    retried = replace(model.jobs["tune"].job, state=JobState.PENDING, tasks=(
        Task("tune", "w", 0, TaskState.PENDING),), sub_clusters=())
    model.remove_job("tune")
    model.add_job(retried)
    model.withdraw("trial")
    decisions = run_cycle(model)
    assert "tune" not in [b.task.job for b in decisions.binds]
    reason = decisions.pending_by_job()["tune"]
    assert reason.kind is PendingKind.RESERVATION and "still holds jobs" in reason.message
    model.finish_task(TaskRef("trial", "w", 0))
    model.remove_job("trial")
    assert [b.task.job for b in run_cycle(model).binds] == ["tune"]
    assert model.jobs["tune"].account == "job:tune"
    assert "job:tune/data" not in model.quota.queues
