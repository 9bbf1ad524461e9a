"""Time limits (`spec.timeLimit`, Slurm's `-t`): the rule the live control loop
(`shoal.control.time_limits`) and the simulator share, pure.

A run may last `Job.time_limit` seconds, counted from when it began: a gang's when its
minimum was first held together (the job went RUNNING), a job placed task by task from each
task's start (each task may run for the limit; the job fails when its first task has run
past it). Each new run counts afresh: after an eviction, a gang restart, a job retry or a
task's retry in place. A run still going at its deadline is stopped as a cancel is (the
grace period applies) and the job ends FAILED with the cause `time_limit_cause` — not
retried, whatever `jobRetryCount` says: as in Slurm, whose TIMEOUT is never requeued, a
rerun would only time out again.

Where no other runtime estimate exists (a live cluster has none), the limit is also the
job's runtime estimate for sjf and EASY backfill (`runtime_estimate`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from shoal.api.objects import Job


def runtime_estimate(job: Job) -> float | None:
    """The job's runtime estimate: its own, else its time limit, else None (unknown)."""
    return job.runtime_estimate if job.runtime_estimate is not None else job.time_limit


def run_started(job: Job, starts: Iterable[float]) -> float | None:
    """When the run the limit counts from began, given when each task that holds resources
    now started; None while it has not (a gang below its minimum)."""
    ordered = sorted(starts)
    if not job.gang:
        return ordered[0] if ordered else None
    need = max(1, job.gang_minimum)
    return ordered[need - 1] if len(ordered) >= need else None


def deadline(job: Job, starts: Iterable[float]) -> float | None:
    """When the job's current run reaches its limit; None without a limit or a run."""
    if job.time_limit is None:
        return None
    began = run_started(job, starts)
    return None if began is None else began + job.time_limit


def time_limit_cause(limit: float) -> str:
    """Why a job that ran out of time failed: `time limit of 2h exceeded`."""
    return f"time limit of {format_duration(limit)} exceeded"


def format_duration(seconds: float) -> str:
    """`2h`, `1h30m`, `90s`, `1.5s`: whole units where the value has them."""
    if not math.isfinite(seconds) or seconds < 0:
        return f"{seconds}s"
    if seconds != int(seconds) or seconds < 60:
        return f"{seconds:g}s"
    rest = int(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
