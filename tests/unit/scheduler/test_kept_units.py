"""Victim units kept between cycles (`shoal.scheduler.victims.KeptUnits`) are what a fresh
listing gives: kept while a job runs the same tasks, listed afresh once it runs more or
fewer, once its spec is replaced (the simulator carries earlier service into it), and never
kept for a protected job, whose units depend on the clock."""

from __future__ import annotations

from dataclasses import replace

from shoal.api import Job, Node, Resources, SchedulerName, Task, TaskGroup, TaskState
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.victims import KeptUnits, units_of


def model_with(job: Job) -> SchedulerModel:
    model = SchedulerModel([Node("n0", Resources.of(cpu=16_000, memory=65_536, gpu=8))])
    model.add_job(job)
    return model


def running(name: str, tasks: int, gang: bool = True, protect: float = 0.0) -> Job:
    job = Job(name, (TaskGroup("w", tasks, Resources.of(cpu=100, gpu=1)),),
              scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT,
              protect_for=protect)
    return replace(job, tasks=tuple(Task(name, "w", i, TaskState.RUNNING, "n0",
                                         started=10.0 * i) for i in range(tasks)))


def test_a_job_running_the_same_tasks_keeps_its_units() -> None:
    model = model_with(running("a", 2))
    kept = KeptUnits()
    info = model.jobs["a"]
    first = kept.of(info, 100.0)
    assert first == units_of(info, 100.0)
    assert kept.of(info, 200.0) is first


def test_a_task_that_stops_or_a_new_spec_lists_the_units_afresh() -> None:
    model = model_with(running("a", 3, gang=False))
    kept = KeptUnits()
    info = model.jobs["a"]
    before = kept.of(info, 100.0)
    model.release_task(info.running[1].ref)
    after = kept.of(info, 100.0)
    assert after is not before
    assert after == units_of(info, 100.0)
    assert len(after) == 2
    info.job = replace(info.job, attained_gpu_seconds=50.0)
    again = kept.of(info, 100.0)
    assert again is not after
    assert again == units_of(info, 100.0)


def test_a_protected_job_is_listed_at_each_instant() -> None:
    model = model_with(running("p", 1, protect=100.0))
    kept = KeptUnits()
    info = model.jobs["p"]
    assert kept.of(info, 50.0) == []  # protected until t=100
    assert kept.of(info, 150.0) == units_of(info, 150.0) != []
