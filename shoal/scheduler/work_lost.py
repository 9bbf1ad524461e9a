"""What evicting tasks now would throw away (issue 17, item 7: preemption that knows its
cost).

A task that checkpoints every `Job.checkpoint_interval` seconds (`spec.checkpointInterval`)
loses, when evicted now, what it did since its last checkpoint: `(now − started) mod
interval` seconds; a job that declares no interval loses its whole run, `now − started`.
Checkpoints are counted from the task's start, as a job that resumes from its last
checkpoint saves again one interval after it restarts (the simulator's model,
`shoal.sim.work`).

The work lost is those seconds weighted by what the task holds: GPU-seconds first, and
CPU core-seconds to tell apart tasks that lose the same GPU-seconds — CPU-only tasks above
all, which would otherwise all lose nothing. `WorkLost` compares in that order.

Pure: it reads the session's `now`, never a clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shoal.scheduler.jobs import JobInfo, TaskInfo


@dataclass(frozen=True, slots=True, order=True)
class WorkLost:
    """Work an eviction throws away; compares GPU-seconds first, then CPU core-seconds."""

    gpu_seconds: float = 0.0
    cpu_seconds: float = 0.0


def seconds_lost(started: float | None, now: float, interval: float | None) -> float:
    """Seconds of a task's run since its last checkpoint (all of it with no `interval`); a
    task not started yet has lost nothing."""
    if started is None or started >= now:
        return 0.0
    ran = now - started
    return ran if interval is None or interval <= 0 else ran % interval


def work_lost(job: JobInfo, tasks: Iterable[TaskInfo], now: float) -> WorkLost:
    """What evicting `tasks` of `job` at `now` throws away."""
    interval = job.job.checkpoint_interval
    gpu = cpu = 0.0
    for task in tasks:
        lost = seconds_lost(task.started, now, interval)
        if lost <= 0:
            continue
        resources = job.job.group(task.ref.group).resources
        gpu += lost * resources.gpu
        cpu += lost * resources.cpu / 1000  # millicores
    return WorkLost(gpu, cpu)
