"""Removing jobs from the store: those deleted while they ran, once they have stopped, and
those that ended longer ago than the job TTL (`shoal up --job-ttl`).

A store must not fill for ever: every job that has ended is removed `ttl` seconds after it
ended (`jobs.ended`), with its tasks, events, job tokens and idempotency key, and its files
(task directories and logs) go with it, so that its name can be used again from scratch.
Its usage stays: its attempts' hour and day buckets for good (`shoal.store.accounting`);
the attempts themselves, which a report by job reads, are pruned by the same sweep once
they ended `ATTEMPT_RETENTION` ago.

`JobExpiry.tick` runs on the control loop's periodic path with the loop's clock. Jobs whose
deletion was asked while they ran (`ControlPlane.delete` marks them in the store and calls
`watch`) are looked at on every tick, so they go as soon as they have stopped; the TTL
sweep, which also finds marked jobs a restart left, runs every minute (a tenth of a short
TTL). Both only
ever remove jobs the store holds as ended, which hold no process.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from shoal.store import Repository
from shoal.store.accounting import ATTEMPT_RETENTION

log = logging.getLogger(__name__)

#: Default TTL of an ended job (seconds): a week.
DEFAULT_JOB_TTL = 7 * 24 * 3600.0
#: How often the TTL sweep runs at most (seconds of the loop's clock); a short TTL is swept
#: every tenth of it, but not more than once a second.
SWEEP_EVERY = 60.0


class JobExpiry:
    """`ttl`: seconds after its end that a job is removed (0: never by age). `forget` is
    called with each removed job's name (the executor's files of it)."""

    def __init__(self, repository: Repository, ttl: float = DEFAULT_JOB_TTL, *,
                 forget: Callable[[str], None] = lambda _name: None,
                 every: float | None = None) -> None:
        if ttl < 0:
            raise ValueError(f"a job TTL cannot be negative: {ttl}")
        self.repository = repository
        self.ttl = ttl
        self.every = every if every is not None else \
            min(SWEEP_EVERY, max(1.0, ttl / 10)) if ttl > 0 else SWEEP_EVERY
        self._forget = forget
        self._watched: set[str] = set()
        self._lock = threading.Lock()  # `watch` is called from the API's threads
        self._next_sweep: float | None = None

    def watch(self, name: str) -> None:
        """A job marked for deletion: remove it as soon as it has ended."""
        with self._lock:
            self._watched.add(name)

    def removed_now(self, name: str) -> bool:
        """Remove the job now if it has ended (what `DELETE` of an ended job does)."""
        removed = self.repository.delete_jobs([name])
        self._forget_all(removed)
        return bool(removed)

    def tick(self, now: float) -> list[str]:
        """Remove what is due as of `now` (the loop's clock); returns the names removed."""
        with self._lock:
            watched = sorted(self._watched)
        removed: list[str] = []
        if watched:
            removed = self.repository.delete_jobs(watched)
            # Removed now, or already gone (removed by another way): no longer watched.
            gone = set(watched) - self.repository.existing(watched)
            with self._lock:
                self._watched -= gone
        if self._next_sweep is None or now >= self._next_sweep:
            self._next_sweep = now + self.every
            removed += self.repository.delete_expired(now - self.ttl if self.ttl > 0
                                                      else None)
            self.repository.prune_usage_attempts(now - ATTEMPT_RETENTION)
        self._forget_all(removed)
        return removed

    def _forget_all(self, names: list[str]) -> None:
        for name in names:
            log.info("job %s removed from the store", name)
            try:
                self._forget(name)
            except OSError:
                log.exception("cannot remove the files of job %s", name)
