"""What an eviction throws away (`shoal.scheduler.work_lost`): the run since the last
checkpoint, weighted by GPUs, then CPU cores."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shoal.api import Job, Resources, SchedulerName, TaskGroup, TaskRef, TaskState
from shoal.api.objects import QueueingPolicy
from shoal.scheduler.jobs import JobInfo, TaskInfo
from shoal.scheduler.work_lost import WorkLost, seconds_lost, work_lost


@pytest.mark.parametrize(("started", "now", "interval", "lost"), [
    (0.0, 1000.0, None, 1000.0),      # no checkpoints: the whole run
    (0.0, 1000.0, 300.0, 100.0),      # three checkpoints, then 100 s more
    (0.0, 900.0, 300.0, 0.0),         # just checkpointed
    (200.0, 250.0, 300.0, 50.0),      # not one checkpoint yet
    (None, 100.0, 300.0, 0.0),        # not started
    (500.0, 100.0, None, 0.0),        # starts later than now (a skewed clock)
])
def test_seconds_lost(started: float | None, now: float, interval: float | None,
                      lost: float) -> None:
    assert seconds_lost(started, now, interval) == pytest.approx(lost)


def info(gpu: int, cpu: int, interval: float | None, *starts: float) -> JobInfo:
    job = Job("j", (TaskGroup("w", len(starts), Resources.of(cpu=cpu, gpu=gpu)),),
              scheduler_name=SchedulerName.SHOAL, checkpoint_interval=interval)
    out = JobInfo(job, 0, "default", QueueingPolicy.PRIORITY)
    out.running = [TaskInfo(TaskRef("j", "w", i), "n0", (), TaskState.RUNNING, s)
                   for i, s in enumerate(starts)]
    return out


def test_gpu_seconds_weigh_the_seconds_and_cpu_breaks_ties() -> None:
    gang = info(2, 4000, 300.0, 0.0, 100.0)
    assert work_lost(gang, gang.running, 1000.0) == WorkLost(2 * (100 + 0), 4 * (100 + 0))
    cpu_only = info(0, 8000, None, 900.0)
    assert work_lost(cpu_only, cpu_only.running, 1000.0) == WorkLost(0.0, 800.0)
    # Order: GPU-seconds first; CPU-only work loses less than any GPU work, and more CPU
    # work lost ranks behind less.
    assert WorkLost(0.0, 10_000.0) < WorkLost(1.0, 0.0)
    assert WorkLost(5.0, 1.0) < WorkLost(5.0, 2.0)


def test_a_checkpoint_interval_lowers_what_is_lost() -> None:
    without = info(1, 1000, None, 0.0)
    with_it = replace(without.job, checkpoint_interval=60.0)
    saver = JobInfo(with_it, 0, "default", QueueingPolicy.PRIORITY)
    saver.running = without.running
    assert work_lost(saver, saver.running, 1000.0).gpu_seconds == pytest.approx(40.0)
    assert work_lost(without, without.running, 1000.0).gpu_seconds == pytest.approx(1000.0)
