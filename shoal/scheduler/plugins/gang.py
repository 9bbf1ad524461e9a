"""The gang plugin: a job runs only when `minAvailable` of its tasks can run at once.

What counts toward the minimum is `JobInfo.ready`: tasks holding resources and tasks that
ended for good (succeeded, or failed within `minFailed`). A gang whose task is retried in
place after a peer succeeded misses only that task, and it is placed on its own. A task
group's own `minAvailable` (Volcano's `minTaskMember`) must be met as well: a master/worker
gang whose workers fit but whose master does not waits, and what it misses now includes
every group's shortfall.

Jobs on the default scheduler (seed 004: `schedulerName` absent or `default`) are not gangs:
each of their tasks is placed on its own. Gang jobs still below their minimum are served
before gang jobs that only want surplus replicas, as Volcano's gang plugin orders them.
"""

from __future__ import annotations

from typing import Any

from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.registry import Arguments


class GangArguments(Arguments):
    pass


class Gang:
    name = "gang"

    def __init__(self, arguments: GangArguments) -> None:
        self.arguments = arguments

    def min_tasks(self, job: JobInfo) -> int:
        """The tasks it misses: its minimum less those that count (`JobInfo.ready`)."""
        if not job.job.gang:
            return 1
        missing = job.gang_minimum - job.ready
        if job.floors:
            # Each group's own shortfall must be among them, whatever the total says.
            missing = max(missing, sum(short for _, short in job.shortfalls()))
        return max(0, missing)

    def job_ready(self, job: JobInfo) -> bool:
        return not job.job.gang or job.gang_met

    def job_order_key(self, job: JobInfo) -> tuple[Any, ...]:
        return (1 if job.gang_met else 0,)
