"""The enqueue action's admissions, taken lazily in submission order.

Which waiting jobs may be considered for allocation is judged job by job
(`shoal.scheduler.actions.enqueue`). A strictly ordered cluster queue stops at its first job
that cannot be placed, so judging every waiting job behind it each cycle is work nobody reads:
the admissions are walked only as far as a reader asks. A reader that wants them all (the
candidates list, anything that reads the blocked lines or the reasons) drains the walk first,
and then sees exactly what judging every job up front gave. Only jobs that waited when the
walk began are judged, as a list taken then would hold.

A report of reasons under strict FIFO needs no drain: it asks the verdict's `refusal` for
the jobs it visits behind the head, which gives what judging them would, without writing
any reason or admitting any job (`shoal.scheduler.strict_line`).
"""

from __future__ import annotations

from collections.abc import Callable

from shoal.api.decisions import PendingReason
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.waiting import WaitingJobs, submission_order

Verdict = Callable[[JobInfo], bool]
"""Whether the enqueue action lets the job through (it sets the job's reason when not)."""

Refusal = Callable[[JobInfo], PendingReason | None]
"""Why the enqueue action would turn a job with no reason yet away (None: let through),
without writing the reason."""

ClassVerdict = Callable[[JobInfo, int], bool]
"""`Verdict` for a job filed in the line of the job class given (`job_classes.job_class`
gives it that class): the class's verdict is looked up, not the job's class worked out."""


class Admissions:
    def __init__(self, waiting: WaitingJobs, verdict: Verdict, admitted: list[JobInfo],
                 joined: set[JobInfo], refusal: Refusal | None = None) -> None:
        self._waiting = waiting
        self.verdict = verdict
        self.refusal = refusal
        """The verdict's reason without writing it (None: not known)."""
        self._at: tuple[float, str] | None = None
        """Where the walk is: the submission key of the last job judged."""
        self.done = False
        self.admitted = admitted
        """The jobs let through so far, in submission order (the session's candidates)."""
        self._joined = joined
        """Jobs that started waiting after the walk began (the session notes them)."""
        self.by_class: ClassVerdict | None = None
        """`verdict` for a filed job and its class, where the verdict has such a form
        (the enqueue action's does): a class walk asks it of each line's first job."""

    def _judge(self, job: JobInfo) -> bool:
        if not job.pending or job in self._joined:
            return False
        if self.verdict(job):
            self.admitted.append(job)
            return True
        return False

    @property
    def at(self) -> tuple[float, str] | None:
        """The submission key of the last job judged (None: none yet)."""
        return self._at

    @property
    def joined(self) -> set[JobInfo]:
        """Jobs that started waiting after the walk began: never judged."""
        return self._joined

    def next(self) -> JobInfo | None:
        """The next job let through, or None when none is left. Jobs may be placed (and
        leave the waiting jobs) between two calls."""
        while not self.done:
            job = self._waiting.next_after(self._at)
            if job is None:
                self.done = True
                return None
            self._at = submission_order(job)
            if self._judge(job):
                return job
        return None

    def drain(self) -> None:
        """Judge every job left, at once (judging changes no waiting job's place)."""
        if self.done:
            return
        for job in self._waiting.rest(self._at):
            self._judge(job)
        self.done = True
