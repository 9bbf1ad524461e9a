"""Resetting, as a cycle opens, the reasons the cycles before wrote (issue 18).

A cycle starts every waiting job at its blocker. Only the jobs whose reason was written since
the last reset can differ (`SchedulerModel.noted`), so only they are reset; a noted job that
does not wait then (it was bound in the cycle that wrote its reason) keeps what was written
and stays noted until it waits again or leaves. Under backlog those kept jobs outnumber the
fresh notes forty to one, and each opening walked them all to find the few waiting again.
`KeptNotes` remembers them with their names, so that the ones waiting again are found by one
set intersection with the waiting jobs' (name, job) items, in C, and only the fresh notes
are walked. The outcome is the same reset: every noted job that waits is reset and leaves
`noted`; every other stays.

Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shoal.scheduler.jobs import JobInfo
    from shoal.scheduler.waiting import WaitingJobs


class KeptNotes:
    """The noted jobs that did not wait at the last reset, and their (name, job) pairs. Jobs
    that left the model since may linger here; they are never waiting, and are dropped once
    they outnumber the noted jobs."""

    __slots__ = ("jobs", "pairs")

    def __init__(self) -> None:
        self.jobs: set[JobInfo] = set()
        self.pairs: set[tuple[str, JobInfo]] = set()

    def reset(self, noted: set[JobInfo], waiting: WaitingJobs, reset: list[JobInfo]
              ) -> frozenset[JobInfo]:
        """Reset every noted job that waits (appended to `reset`, dropped from `noted`); the
        noted jobs that do not wait, kept in `noted`, are returned."""
        jobs, pairs = self.jobs, self.pairs
        fresh = noted - jobs if jobs else list(noted)
        if pairs:
            for pair in waiting.items() & pairs:
                job = pair[1]
                pairs.discard(pair)
                jobs.discard(job)
                if job in noted:
                    job.reset_reason()
                    reset.append(job)
        get = waiting.get
        for job in fresh:
            name = job.job.name
            if get(name) is job:
                job.reset_reason()
                reset.append(job)
            else:
                jobs.add(job)
                pairs.add((name, job))
        if reset:
            noted.difference_update(reset)
        if len(jobs) > 2 * len(noted) + 64:
            jobs.intersection_update(noted)
            self.pairs = {pair for pair in pairs if pair[1] in jobs}
        return frozenset(jobs & noted)
