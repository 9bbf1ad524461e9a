"""The enqueue action's admissions, taken lazily in submission order.

Which waiting jobs may be considered for allocation is judged job by job
(`shoal.scheduler.actions.enqueue`). A strictly ordered cluster queue stops at its first job
that cannot be placed, so judging every waiting job behind it each cycle is work nobody reads:
the admissions are walked only as far as a reader asks. A reader that wants them all (the
candidates list, anything that reads the blocked lines or the reasons) drains the walk first,
and then sees exactly what judging every job up front gave. Only jobs that waited when the
walk began are judged, as a list taken then would hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.waiting import WaitingJobs

Verdict = Callable[[JobInfo], bool]
"""Whether the enqueue action lets the job through (it sets the job's reason when not)."""


class Admissions:
    def __init__(self, waiting: WaitingJobs, verdict: Verdict, admitted: list[JobInfo],
                 joined: set[JobInfo]) -> None:
        self._walk: Iterator[JobInfo] | None = waiting.after(None)
        self._verdict = verdict
        self.admitted = admitted
        """The jobs let through so far, in submission order (the session's candidates)."""
        self._joined = joined
        """Jobs that started waiting after the walk began (the session notes them)."""

    def next(self) -> JobInfo | None:
        """The next job let through, or None when none is left."""
        walk = self._walk
        if walk is None:
            return None
        joined = self._joined
        for job in walk:
            if not job.pending or (joined and job in joined):
                continue
            if self._verdict(job):
                self.admitted.append(job)
                return job
        self._walk = None
        return None

    def drain(self) -> None:
        while self.next() is not None:
            pass

    @property
    def done(self) -> bool:
        return self._walk is None
