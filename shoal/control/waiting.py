"""Why jobs wait: the latest pending reason of each job, for the API, and the record of
reason changes in each job's history.

The scheduler gives a reason for every waiting job in every cycle; most cycles repeat the
last one. A job's history gets a WAITING event when its reason's kind changes, or its
message after WAITING_RESOLUTION seconds (messages carry counts, such as free GPUs, that move
with every cycle). The events are written in batches (`flush`): they are history, not state,
so a crash loses at most a batch, and the first cycle after a restart notes every job's
reason again.
"""

from __future__ import annotations

from collections.abc import Mapping

from shoal.api import PendingKind, PendingReason
from shoal.store.repository import Repository, Waiting

#: How often a job's history may get a new pending reason of the same kind (seconds).
WAITING_RESOLUTION = 60.0


class WaitingReasons:
    """Owned by the control loop's thread; `get` and `all` may be read from any thread (the
    dict they read is replaced whole, never changed in place)."""

    def __init__(self) -> None:
        self._current: dict[str, PendingReason] = {}
        self._recorded: dict[str, tuple[PendingKind, str, float]] = {}
        self._unwritten: list[Waiting] = []

    def get(self, job: str) -> PendingReason | None:
        return self._current.get(job)

    def all(self) -> dict[str, PendingReason]:
        return dict(self._current)

    def replace(self, pending: Mapping[str, PendingReason], now: float) -> None:
        """A cycle's verdict: these jobs wait, for these reasons; no other job does."""
        self._note(pending, now)
        for job in set(self._recorded) - set(pending):
            del self._recorded[job]
        self._current = dict(pending)

    def add(self, pending: Mapping[str, PendingReason], now: float) -> None:
        """More jobs wait (decided without a cycle); the others' reasons stand."""
        self._note(pending, now)
        self._current = {**self._current, **pending}

    def forget(self, job: str) -> None:
        if job in self._current:
            self._current = {k: v for k, v in self._current.items() if k != job}

    def flush(self, repository: Repository) -> None:
        """Write the reason changes noted since the last flush, in one transaction."""
        if self._unwritten:
            waits, self._unwritten = self._unwritten, []
            repository.record_waiting(waits)

    def _note(self, pending: Mapping[str, PendingReason], now: float) -> None:
        for job, reason in pending.items():
            last = self._recorded.get(job)
            if last is None or (last[0] is not reason.kind) or (
                    last[1] != reason.message and now - last[2] >= WAITING_RESOLUTION):
                self._unwritten.append(
                    Waiting(job, now, f"{reason.kind.value}: {reason.message}"))
                self._recorded[job] = (reason.kind, reason.message, now)
