"""Why jobs wait: the latest pending reason of each job, for the API, and the record of
reason changes in each job's history.

Each cycle the scheduler reports only the reasons that changed since its last report
(`Session.report`, `shoal.scheduler.reason_report`); `apply` folds them into the table the
API reads, so a cycle with a backlog of waiting jobs costs what changed, not what waits. The
table is the report's ledger itself: what the next report compares with. Strict FIFO's line
behind its blocked head is one reason there (`ReasonLedger.line`): a new head changes it
for every job behind at once, and `get` answers each job's from it.

A job's history gets a WAITING event when its reason's kind changes, or its message after
WAITING_RESOLUTION seconds (messages carry counts, such as free GPUs, that move with every
cycle): a message that changed too soon is *deferred*, and recorded by the first cycle
after the resolution that still finds it different. The line's jobs are noted cohort by
cohort (those whose history last recorded the same reason at the same instant), each as a
job of its own would be: a new head records nothing until a cohort is due. The events are
written in batches
(`flush`): they are history, not state, so a crash loses at most a batch, and the first
cycle after a restart notes every job's reason again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from shoal.api import PendingKind, PendingReason
from shoal.scheduler.reason_report import LineChange, ReasonChanges, ReasonLedger
from shoal.store.repository import Repository, Waiting

#: How often a job's history may get a new pending reason of the same kind (seconds).
WAITING_RESOLUTION = 60.0

Recorded = tuple[PendingKind, str, float]
"""A job's reason as last recorded in its history: kind, message, when."""


def _due(last: Recorded, reason: PendingReason, now: float) -> bool:
    """Whether a job's history, which last recorded `last`, gets `reason` now: another
    kind, or another message once WAITING_RESOLUTION has passed since."""
    return last[0] is not reason.kind or (
        last[1] != reason.message and now - last[2] >= WAITING_RESOLUTION)


class WaitingReasons:
    """Owned by the control loop's thread; `get` and `all` may be read from any thread
    (changes are made under a lock, which they take to read)."""

    def __init__(self) -> None:
        self.ledger = ReasonLedger()
        """The reports' ledger (`Session.report`): every waiting job's reason, strict
        FIFO's line behind its head as one reason (`ReasonLedger.line`)."""
        self._lock = threading.Lock()
        self._recorded: dict[str, Recorded] = {}
        self._deferred: set[str] = set()
        """Jobs outside the line whose reason differs from the one last recorded in
        message only, too soon after it to be recorded again."""
        self._cohorts: dict[tuple[PendingKind, str], dict[float, set[str]]] = {}
        """The line's jobs by what was last recorded of them (kind and message, then when):
        a new head is one check per cohort, not one per job — deferred where the message
        moved too soon — and the cohorts of the line's reason are not looked at."""
        self._unwritten: list[Waiting] = []

    def get(self, job: str) -> PendingReason | None:
        with self._lock:
            return self.ledger.get(job)

    def all(self) -> dict[str, PendingReason]:
        with self._lock:
            return self.ledger.reasons()

    def apply(self, changes: ReasonChanges, now: float) -> None:
        """A cycle's report: these jobs wait for a new reason, those no longer wait, and
        strict FIFO's line waits for its reason."""
        ledger = self.ledger
        change = changes.line
        if ledger.line is not None:
            if change is not None and change.whole:
                self._cohorts = {}  # the ones that stay join again below
            else:
                for job in (*changes.waits, *changes.gone):
                    if ledger.in_line(job):
                        self._leave_line(job)
        with self._lock:
            ledger.apply(changes)
        for job in changes.gone:
            self._recorded.pop(job, None)
            self._deferred.discard(job)
        self._note(changes.waits.items(), now)
        line = ledger.line
        if line is None:
            self._cohorts = {}
        else:
            if change is not None:
                for job in change.joined:
                    self._join_line(job, line.reason, now)
            self._note_line(line.reason, now)
        if self._deferred:
            table = ledger.table
            self._note([(job, table[job]) for job in self._deferred
                        if job not in changes.waits], now)

    def replace(self, pending: Mapping[str, PendingReason], now: float) -> None:
        """A cycle's verdict in full: these jobs wait, for these reasons; no other job does
        (a driver that closes its sessions instead of reporting)."""
        ledger = self.ledger
        gone = tuple(job for job in ledger.names() if job not in pending)
        waits = {job: reason for job, reason in pending.items()
                 if ledger.get(job) != reason or ledger.in_line(job)}
        line = None if ledger.line is None else LineChange(None, (), whole=True)
        self.apply(ReasonChanges(waits, gone, line=line), now)

    def add(self, pending: Mapping[str, PendingReason], now: float) -> None:
        """More jobs wait (decided without a cycle); the others' reasons stand. The next
        report compares with these too."""
        for job in pending:
            if self.ledger.in_line(job):
                self._leave_line(job)
        with self._lock:
            self.ledger.update(pending)
        self._note(pending.items(), now)

    def forget(self, job: str) -> None:
        if self.ledger.in_line(job):
            self._leave_line(job)
        with self._lock:
            self.ledger.forget(job)
        self._deferred.discard(job)

    def flush(self, repository: Repository) -> None:
        """Write the reason changes noted since the last flush, in one transaction."""
        if self._unwritten:
            waits, self._unwritten = self._unwritten, []
            repository.record_waiting(waits)

    def _note(self, pending: Iterable[tuple[str, PendingReason]], now: float) -> None:
        recorded, deferred = self._recorded, self._deferred
        for job, reason in pending:
            last = recorded.get(job)
            if last is None or _due(last, reason, now):
                self._record(job, reason, now)
                deferred.discard(job)
            elif last[1] != reason.message:
                deferred.add(job)
            else:
                deferred.discard(job)

    def _record(self, job: str, reason: PendingReason, now: float) -> Recorded:
        self._unwritten.append(Waiting(job, now, f"{reason.kind.value}: {reason.message}"))
        recorded = self._recorded[job] = (reason.kind, reason.message, now)
        return recorded

    def _join_line(self, job: str, reason: PendingReason, now: float) -> None:
        """`_note` for a job that joins the line: filed in its cohort, not deferred."""
        self._deferred.discard(job)
        last = self._recorded.get(job)
        if last is None or _due(last, reason, now):
            last = self._record(job, reason, now)
        kind, message, at = last
        self._cohorts.setdefault((kind, message), {}).setdefault(at, set()).add(job)

    def _leave_line(self, job: str) -> None:
        last = self._recorded.get(job)
        if last is None:
            return
        kind, message, at = last
        group = self._cohorts.get((kind, message))
        cohort = None if group is None else group.get(at)
        if group is not None and cohort is not None:
            cohort.discard(job)
            if not cohort:
                del group[at]
                if not group:
                    del self._cohorts[kind, message]

    def _note_line(self, reason: PendingReason, now: float) -> None:
        """`_note` for every job of the line, cohort by cohort: each is recorded, deferred
        or left as `_note` would each of its jobs. Cohorts of another message were recorded
        within the resolution, or are recorded now: they are few."""
        current = (reason.kind, reason.message)
        due: list[set[str]] = []
        for key in [key for key in self._cohorts if key != current]:
            group = self._cohorts[key]
            for at in [at for at in group
                       if key[0] is not reason.kind or now - at >= WAITING_RESOLUTION]:
                due.append(group.pop(at))
            if not group:
                del self._cohorts[key]
        if due:
            cohort = self._cohorts.setdefault(current, {}).setdefault(now, set())
            for jobs in due:
                for job in jobs:
                    self._record(job, reason, now)
                cohort.update(jobs)
