"""The live jobs filed by the job whose virtual cluster they were submitted into: the work a
running job's tasks submitted into its own virtual cluster or one of its sub-clusters (seed
003), which ends with that job.

A job that ends asks which live jobs are inside its virtual cluster (the control loop stops
them, `shoal.control.job_scope.work_inside`), and a departing job's own virtual cluster is
removed only once none is left in it (`SchedulerModel._retire`). Walking every live job for
that made a burst of N jobs cost O(N²) in string tests; the model files each job here as it
arrives and leaves, so the question costs what it finds. Plain data, kept by the model only.
"""

from __future__ import annotations

from collections.abc import Iterable

from shoal.api.objects import job_of_virtual_cluster
from shoal.scheduler.jobs import JobInfo


class OwnedWork:
    """Owner job → its live jobs (by name, in the order they joined the model: the order of
    `SchedulerModel.jobs`, as a job re-added moves last in both)."""

    __slots__ = ("_by_owner",)

    def __init__(self) -> None:
        self._by_owner: dict[str, dict[str, JobInfo]] = {}

    def add(self, info: JobInfo) -> None:
        # The queue the job named (`job.queue`), not the one it is charged to: a sub-cluster
        # that does not exist yet is still its owner's.
        owner = job_of_virtual_cluster(info.job.queue)
        if owner is not None:
            self._by_owner.setdefault(owner, {})[info.name] = info

    def remove(self, info: JobInfo) -> None:
        owner = job_of_virtual_cluster(info.job.queue)
        if owner is None:
            return
        inside = self._by_owner.get(owner)
        if inside is not None and inside.pop(info.name, None) is not None and not inside:
            del self._by_owner[owner]

    def of(self, owner: str) -> Iterable[JobInfo]:
        """The live jobs submitted into `owner`'s own virtual cluster or its sub-clusters."""
        inside = self._by_owner.get(owner)
        return () if inside is None else inside.values()

    def owners(self) -> Iterable[str]:
        """The jobs that have live work inside their virtual clusters (for checks)."""
        return self._by_owner.keys()
