"""The time-limit rule shared by the control loop and the simulator
(`shoal.api.time_limits`): when a run began and ends, the cause's wording, and the limit as
the runtime estimate sjf orders by."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shoal.api import Job, QueueingPolicy, Resources, SchedulerName, TaskGroup
from shoal.api.time_limits import (
    deadline,
    format_duration,
    run_started,
    runtime_estimate,
    time_limit_cause,
)
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.plugins.sjf import ShortestJobFirst, SjfArguments


def job(name: str = "j", *, gang: bool = True, replicas: int = 3,
        min_available: int | None = None, limit: float | None = 100.0) -> Job:
    group = TaskGroup("worker", replicas, Resources.of(cpu=100))
    return Job(name, (group,), scheduler_name=SchedulerName.SHOAL if gang
               else SchedulerName.DEFAULT, min_available=min_available, time_limit=limit)


def test_a_gangs_run_begins_when_its_minimum_is_held() -> None:
    assert run_started(job(), [5.0, 1.0, 3.0]) == 5.0
    assert run_started(job(min_available=2), [5.0, 1.0, 3.0]) == 3.0
    assert run_started(job(), [1.0, 3.0]) is None  # below its minimum: no run
    assert deadline(job(min_available=2), [5.0, 1.0, 3.0]) == 103.0


def test_a_task_by_task_job_counts_from_its_first_task() -> None:
    assert run_started(job(gang=False), [5.0, 2.0]) == 2.0
    assert deadline(job(gang=False), [5.0, 2.0]) == 102.0
    assert deadline(job(gang=False), []) is None
    assert deadline(job(gang=False, limit=None), [5.0]) is None


@pytest.mark.parametrize(("seconds", "text"), [
    (2, "2s"), (1.5, "1.5s"), (90, "1m30s"), (7200, "2h"), (5400, "1h30m"),
    (86400 + 60, "1d1m")])
def test_durations_read_as_written(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_the_cause_names_the_limit() -> None:
    assert time_limit_cause(7200) == "time limit of 2h exceeded"


def test_the_limit_is_the_estimate_when_there_is_no_other() -> None:
    assert runtime_estimate(job(limit=50)) == 50
    assert runtime_estimate(replace(job(limit=50), runtime_estimate=20)) == 20
    assert runtime_estimate(job(limit=None)) is None
    sjf = ShortestJobFirst(SjfArguments())

    def key(j: Job) -> tuple[object, ...]:
        return sjf.job_order_key(JobInfo(j, 0, "default", QueueingPolicy.FIFO))

    assert key(job("a", limit=50)) < key(job("b", limit=500)) < key(job("c", limit=None))
