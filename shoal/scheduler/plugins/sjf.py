"""The sjf plugin: shortest job first, by the job's runtime estimate (an oracle in the
simulator, the user's time limit in a live cluster). Jobs without an estimate go last.
Non-preemptive: it orders waiting jobs, it never stops running ones."""

from __future__ import annotations

import math
from typing import Any

from shoal.api.time_limits import runtime_estimate
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.registry import Arguments


class SjfArguments(Arguments):
    pass


class ShortestJobFirst:
    name = "sjf"
    static_for_waiting = True
    """A job's key is its spec's estimate (`shoal.scheduler.class_lines.static_order`)."""

    def __init__(self, arguments: SjfArguments) -> None:
        self.arguments = arguments

    def job_order_key(self, job: JobInfo) -> tuple[Any, ...]:
        estimate = runtime_estimate(job.job)
        return (math.inf if estimate is None else estimate,)
