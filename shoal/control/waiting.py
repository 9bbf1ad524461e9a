"""Why jobs wait: the latest pending reason of each job, for the API, and the record of
reason changes in each job's history.

Each cycle the scheduler reports only the reasons that changed since its last report
(`Session.report`, `shoal.scheduler.reason_report`); `apply` folds them into the table the
API reads, so a cycle with a backlog of waiting jobs costs what changed, not what waits. The
table is the report's ledger itself: what the next report compares with.

A job's history gets a WAITING event when its reason's kind changes, or its message after
WAITING_RESOLUTION seconds (messages carry counts, such as free GPUs, that move with every
cycle): a message that changed too soon is *deferred*, and recorded by the first cycle
after the resolution that still finds it different. The events are written in batches
(`flush`): they are history, not state, so a crash loses at most a batch, and the first
cycle after a restart notes every job's reason again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from shoal.api import PendingKind, PendingReason
from shoal.scheduler.reason_report import ReasonChanges, ReasonLedger
from shoal.store.repository import Repository, Waiting

#: How often a job's history may get a new pending reason of the same kind (seconds).
WAITING_RESOLUTION = 60.0


class WaitingReasons:
    """Owned by the control loop's thread; `get` and `all` may be read from any thread
    (changes are made under a lock, which `all` takes to copy)."""

    def __init__(self) -> None:
        self.ledger = ReasonLedger()
        """The reports' ledger (`Session.report`); its table is every waiting job's reason."""
        self._lock = threading.Lock()
        self._recorded: dict[str, tuple[PendingKind, str, float]] = {}
        self._deferred: set[str] = set()
        """Jobs whose reason differs from the one last recorded in message only, too soon
        after it to be recorded again."""
        self._unwritten: list[Waiting] = []

    def get(self, job: str) -> PendingReason | None:
        return self.ledger.table.get(job)

    def all(self) -> dict[str, PendingReason]:
        with self._lock:
            return dict(self.ledger.table)

    def apply(self, changes: ReasonChanges, now: float) -> None:
        """A cycle's report: these jobs wait for a new reason, those no longer wait."""
        with self._lock:
            self.ledger.apply(changes)
        for job in changes.gone:
            self._recorded.pop(job, None)
            self._deferred.discard(job)
        self._note(changes.waits.items(), now)
        if self._deferred:
            table = self.ledger.table
            self._note([(job, table[job]) for job in self._deferred
                        if job not in changes.waits], now)

    def replace(self, pending: Mapping[str, PendingReason], now: float) -> None:
        """A cycle's verdict in full: these jobs wait, for these reasons; no other job does
        (a driver that closes its sessions instead of reporting)."""
        table = self.ledger.table
        gone = tuple(job for job in table if job not in pending)
        waits = {job: reason for job, reason in pending.items() if table.get(job) != reason}
        self.apply(ReasonChanges(waits, gone), now)

    def add(self, pending: Mapping[str, PendingReason], now: float) -> None:
        """More jobs wait (decided without a cycle); the others' reasons stand. The next
        report compares with these too."""
        with self._lock:
            self.ledger.table.update(pending)
        self._note(pending.items(), now)

    def forget(self, job: str) -> None:
        with self._lock:
            self.ledger.table.pop(job, None)
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
            if last is None or last[0] is not reason.kind or (
                    last[1] != reason.message and now - last[2] >= WAITING_RESOLUTION):
                self._unwritten.append(
                    Waiting(job, now, f"{reason.kind.value}: {reason.message}"))
                recorded[job] = (reason.kind, reason.message, now)
                deferred.discard(job)
            elif last[1] != reason.message:
                deferred.add(job)
            else:
                deferred.discard(job)
