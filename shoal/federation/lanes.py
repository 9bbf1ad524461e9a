"""One lane per member cluster for the live dispatcher (issue 19): a member's calls run one
after another on a small bounded pool, members in parallel, so that one member's slowness
never stalls the others — a member whose last calls are still in flight gets no new work
until they return, and one that did not answer (`MemberUnavailableError`) is left alone for
a backoff that doubles up to a cap, and is reported as down meanwhile. Never fatal: a down
member's copies simply wait for it.

The clock is an argument: the dispatcher's (the wall clock live, a fake one in tests).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from shoal.federation.members.contract import MemberUnavailableError

BACKOFF_BASE_S = 1.0
BACKOFF_CAP_S = 60.0
MAX_WORKERS = 8
MAX_ERROR = 300


@dataclass(frozen=True, slots=True)
class MemberHealth:
    """What the dispatcher last knew of a member."""

    reachable: bool | None
    """None: never called yet."""
    last_error: str = ""
    failures: int = 0
    retry_at: float | None = None
    busy: bool = False
    """Calls to it are in flight now."""


@dataclass(slots=True)
class _Lane:
    future: Future[None] | None = None
    failures: int = 0
    retry_at: float | None = None
    reachable: bool | None = None
    last_error: str = ""


class MemberLanes:
    """The members' lanes; `run` hands a member's batch of calls to its lane."""

    def __init__(self, clock: Callable[[], float], *, max_workers: int = MAX_WORKERS,
                 backoff_base_s: float = BACKOFF_BASE_S,
                 backoff_cap_s: float = BACKOFF_CAP_S) -> None:
        self._clock = clock
        self._pool = ThreadPoolExecutor(max_workers=max_workers,
                                        thread_name_prefix="shoal-mc-member")
        self._base = backoff_base_s
        self._cap = backoff_cap_s
        self._lanes: dict[str, _Lane] = {}
        self._lock = threading.Lock()

    def ready(self, alias: str, now: float) -> bool:
        """Free (nothing in flight) and not backing off."""
        with self._lock:
            lane = self._lanes.get(alias)
            if lane is None:
                return True
            if lane.future is not None and not lane.future.done():
                return False
            return lane.retry_at is None or lane.retry_at <= now

    def run(self, alias: str, batch: Callable[[], None]) -> Future[None]:
        """Run `batch` (the member's calls of this pass) on its lane."""
        with self._lock:
            lane = self._lanes.setdefault(alias, _Lane())
            future = self._pool.submit(self._guarded, alias, batch)
            lane.future = future
            return future

    def _guarded(self, alias: str, batch: Callable[[], None]) -> None:
        try:
            batch()
        except MemberUnavailableError as exc:
            self.failed(alias, str(exc))
        else:
            self.answered(alias)

    def answered(self, alias: str) -> None:
        with self._lock:
            lane = self._lanes.setdefault(alias, _Lane())
            lane.failures, lane.retry_at, lane.reachable, lane.last_error = 0, None, True, ""

    def failed(self, alias: str, error: str) -> None:
        with self._lock:
            lane = self._lanes.setdefault(alias, _Lane())
            lane.failures += 1
            delay = min(self._cap, self._base * 2 ** (lane.failures - 1))
            lane.retry_at = self._clock() + delay
            lane.reachable = False
            lane.last_error = error[:MAX_ERROR]

    def health(self, alias: str) -> MemberHealth:
        with self._lock:
            lane = self._lanes.get(alias)
            if lane is None:
                return MemberHealth(reachable=None)
            busy = lane.future is not None and not lane.future.done()
            return MemberHealth(lane.reachable, lane.last_error, lane.failures, lane.retry_at,
                                busy)

    def settle(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` for the calls in flight (a slow member is left running)."""
        with self._lock:
            pending = [lane.future for lane in self._lanes.values()
                       if lane.future is not None and not lane.future.done()]
        if pending:
            wait(pending, timeout=timeout_s)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
