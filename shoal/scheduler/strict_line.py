"""Strict FIFO's line behind a blocked head, read as one span (issue 18).

Under strict FIFO over the whole cluster the allocate action walks the admissions only up to
the first job that cannot be placed (`Allocate._strict_line`). Every job behind that head
then waits `Blocked` behind it — unless the enqueue action turns it away, or it is turned
away by the reason it already has. Writing that out job by job (`StrictLine.__call__`, for
readers of `Session.blocked` or `Session.candidates`) costs what the line holds, each cycle.

A report of reasons (`shoal.scheduler.reason_report`) reads the line instead: its reader
(`StrictLine.reader`) gives a job's reason as writing the line out would, without writing
it (a written reason is reset and looked at again next cycle) and without judging the jobs
it does not ask about. The report leaves its ledger the line's `LineSpan`, and the ledger
keeps the jobs waiting for the line's reason as one line (`ReasonLedger.line`). While the
enqueue action's verdicts stand (`ClassVerdicts.generation`, every virtual cluster's jobs
classable), a job of the last line that did not move is still in this one: it was let
through and written no reason of its own, and if this cycle's walk reached it, it was
placed, set aside, refused or made the head — each of which the report visits. So only the
head, the jobs walked before it, those set aside, arrivals and leavers are looked at; a new
head (which names itself in the reason of every job behind it) is one new reason for the
ledger's line, not one per job behind it.

The backfill action's EASY walk by class (`shoal.scheduler.actions.easy_walk`) leaves the line
unwritten too: a job it tries and does not place keeps no reason of its own, unless it holds
tasks, and such a job's reason is its own (`keep_own`), not the line's, as writing the line
out before backfill ran would have left it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shoal.api.decisions import PendingReason
from shoal.scheduler.job_classes import classable
from shoal.scheduler.jobs import JobInfo

if TYPE_CHECKING:
    from shoal.scheduler.session import Session


@dataclass(frozen=True, slots=True)
class LineSpan:
    """What a report leaves its ledger of a strict line: compared whole at the next one."""

    head: str
    after: tuple[float, str]
    """The head's submission key: the span is every waiting job after it."""
    reason: PendingReason
    """The `Blocked` reason of the jobs behind the head."""
    generation: int
    """The enqueue action's verdicts it was judged under (`ClassVerdicts.generation`)."""
    behind: tuple[str, ...] = ()
    """The jobs set aside (`StrictLine.behind`): looked at again by the next report."""


class StrictLine:
    """A line blocked at `head`: the jobs let through but not served (`behind`, set aside
    by the gang plugin's order) and every job after the walk's place in the admissions wait
    for `reason`, if let through. Called with every candidate, it writes them out."""

    def __init__(self, session: Session, head: JobInfo, reason: PendingReason,
                 behind: list[JobInfo], write: Callable[[list[JobInfo]], None]) -> None:
        self._session = session
        self.head = head
        self.reason = reason
        self._behind = behind
        self._behind_set = frozenset(behind)
        self._write = write
        self._own: set[JobInfo] = set()
        """Jobs a later action wrote a reason of their own on, which the line keeps."""

    def __call__(self, candidates: list[JobInfo]) -> None:
        own = {job: job.reason for job in self._own}
        self._write(candidates)
        for job, reason in own.items():
            job.reason = reason  # written after the line, as when the line came first

    def keep_own(self, job: JobInfo) -> None:
        """The job's reason, written by an action after the one that blocked the line, is
        its own: writing the line out does not overwrite it, and a reader gives it."""
        self._own.add(job)

    def readable(self) -> bool:
        """Whether a `reader` can be had: the admissions' verdict is known without writing
        it."""
        admissions = self._session.admissions
        return admissions is not None and admissions.refusal is not None

    def behind(self) -> list[JobInfo]:
        """The jobs let through before the walk stopped and left behind the head."""
        return self._behind

    def reader(self) -> Callable[[JobInfo], PendingReason | None]:
        """Gives a waiting job's reason as writing out the line now would leave it, or None
        where the line writes none (the job's own stands), without judging any other job or
        writing anything. For one report: what it reads of the admissions is taken now."""
        admissions = self._session.admissions
        assert admissions is not None and admissions.refusal is not None
        behind, blocked, own = self._behind_set, self.reason, self._own
        at, joined, refusal = admissions.at, admissions.joined, admissions.refusal
        if admissions.done or at is None:
            return lambda job: blocked if job in behind and job not in own else None
        last: tuple[float, str] = at

        def reason_of(job: JobInfo) -> PendingReason | None:
            if job in own:
                return None
            if job in behind:
                return blocked
            # Judged by the walk (what it wrote stands), or never judged: its own reason.
            if (job.job.submitted, job.name) <= last or not job.pending or job in joined \
                    or job.reason is not None:
                return None
            refused = refusal(job)
            return blocked if refused is None else refused
        return reason_of

    def span(self) -> LineSpan | None:
        """The span a report leaves its ledger; None when the next report may not skip it:
        a job's verdict may then move with no job moving (virtual nodes, per-user quotas,
        resource flavors: jobs not classed, `shoal.scheduler.job_classes`)."""
        session = self._session
        admissions = session.admissions
        if admissions is None or admissions.done or admissions.at is None \
                or session.closed or not session.model.incremental \
                or not all(classable(session, name) for name in session.quota.queues):
            return None
        return LineSpan(self.head.name, admissions.at, self.reason,
                        session.model.class_verdicts.generation,
                        tuple(job.name for job in (*self._behind, *self._own)))
