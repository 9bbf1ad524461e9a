"""Resetting, as a cycle opens, the reasons the cycles before wrote (issue 18).

A cycle starts every waiting job at its blocker. Only the jobs whose reason was written since
the last reset can differ (`SchedulerModel.noted`), so only they are reset; a noted job that
does not wait then (it was bound in the cycle that wrote its reason) keeps what was written
and stays noted until it waits again or leaves. Under backlog those kept jobs outnumber the
fresh notes forty to one, and each opening walked them all to find the few waiting again.
`KeptNotes` remembers them, so that an opening walks only the fresh notes and the kept jobs
that started waiting since (`WaitingJobs.entered`). The outcome is the same reset: every
noted job that waits is reset and leaves `noted`; every other stays.

Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shoal.scheduler.jobs import JobInfo
    from shoal.scheduler.waiting import WaitingJobs


class KeptNotes:
    """The noted jobs that did not wait at the last reset (always among the noted ones: a
    job that leaves the model is forgotten here too, `forget`)."""

    __slots__ = ("_frozen", "jobs")

    def __init__(self) -> None:
        self.jobs: set[JobInfo] = set()
        self._frozen: frozenset[JobInfo] | None = frozenset()
        """`jobs` as last returned by `reset`; None once `jobs` changed since: a reset
        that keeps the same jobs (most of them under backlog) returns it again."""

    def forget(self, job: JobInfo) -> None:
        """The job left the model (and `noted`)."""
        if job in self.jobs:
            self.jobs.discard(job)
            self._frozen = None

    def start_over(self, waiting: WaitingJobs) -> None:
        """Reasons were set without a reset (every waiting job's, as a closed queue or a
        full walk does): the next reset walks every noted job."""
        self.jobs.clear()
        self._frozen = None
        waiting.entered.clear()

    def reset(self, noted: set[JobInfo], waiting: WaitingJobs, reset: list[JobInfo]
              ) -> frozenset[JobInfo]:
        """Reset every noted job that waits (appended to `reset`, dropped from `noted`); the
        noted jobs that do not wait, kept in `noted`, are returned."""
        jobs = self.jobs
        get = waiting.get
        entered = waiting.entered
        fresh = (noted - jobs if jobs else list(noted)) if len(noted) > len(jobs) else ()
        frozen = self._frozen
        if jobs and entered:
            for job in jobs & entered:
                if get(job.job.name) is job:
                    jobs.discard(job)
                    frozen = None
                    job.reset_reason()
                    reset.append(job)
        entered.clear()
        for job in fresh:
            if get(job.job.name) is job:
                job.reset_reason()
                reset.append(job)
            else:
                jobs.add(job)
                frozen = None
        if reset:
            noted.difference_update(reset)
        if frozen is None:
            frozen = self._frozen = frozenset(jobs)
        return frozen
