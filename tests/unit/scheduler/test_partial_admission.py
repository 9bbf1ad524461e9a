"""When a job's start is an admission (`JobInfo.admits_partially`), and what the least
admission asks."""

from __future__ import annotations

from shoal.api import Job, QueueingPolicy, Resources, SchedulerName, TaskGroup
from shoal.scheduler.gang_choice import least_admission
from shoal.scheduler.jobs import JobInfo


def info(min_count: int | None, gang: bool = False) -> JobInfo:
    job = Job("j", (TaskGroup("master", 1, Resources.of(cpu=1000, gpu=1)),
                    TaskGroup("w", 4, Resources.of(cpu=1000, gpu=2), min_count=min_count)),
              scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT)
    return JobInfo(job, 0, "default", QueueingPolicy.PRIORITY)


def test_only_a_job_with_a_min_count_and_nothing_started_is_admitted() -> None:
    assert info(2).admits_partially()
    assert info(4).admits_partially()  # minCount = replicas: admitted whole, all at once
    assert not info(None).admits_partially()
    started = info(2)
    started.hold("w", 1)
    assert not started.admits_partially()


def test_a_task_held_back_while_it_stops_is_no_fresh_start() -> None:
    held_back = info(2)
    held_back.take("w", 0)  # what `SchedulerModel.hold_back` does to an evicted task
    assert not held_back.admits_partially()


def test_the_least_admission_is_every_fixed_group_whole_and_min_count_of_the_rest() -> None:
    need = least_admission(info(2))
    assert need.floors == (("master", 1), ("w", 2))
    assert need.count == 3
