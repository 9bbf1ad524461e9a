"""The priority plugin: jobs of higher priority class value first, within a virtual cluster
whose queueing policy is `priority` (a `fifo` virtual cluster orders by submission only)."""

from __future__ import annotations

from typing import Any

from shoal.api.objects import QueueingPolicy
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.registry import Arguments


class PriorityArguments(Arguments):
    pass


class Priority:
    name = "priority"

    def __init__(self, arguments: PriorityArguments) -> None:
        self.arguments = arguments

    def job_order_key(self, job: JobInfo) -> tuple[Any, ...]:
        return (-job.priority if job.queueing is QueueingPolicy.PRIORITY else 0,)
