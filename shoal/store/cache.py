"""Read-through caches of what the API reads on every request and rarely changes: the
catalog (nodes, virtual clusters, priority classes) and the token → user table.

A submission used to read all three catalog tables and the token table: four transactions
for data that changes a few times a day. The cache is per `Repository`, i.e. per process,
which is right for `shoal up` (the one process that writes its store). A version counter,
bumped by every write after it commits, keeps a reader that raced a write from storing what
it read before the write; the token cache also expires entries after `ttl` seconds, so a
token revoked by another process stops working within that time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

Value = TypeVar("Value")


class ReadThroughCache(Generic[Value]):
    """Values by key, loaded on a miss; `invalidate()` after a write to the source."""

    def __init__(self, clock: Callable[[], float], ttl: float | None = None) -> None:
        self._clock = clock
        self._ttl = ttl
        self._version = 0
        self._entries: dict[str, tuple[int, float, Value]] = {}
        self._lock = threading.Lock()

    def get(self, key: str, load: Callable[[], Value]) -> Value:
        now = self._clock()
        entry = self._entries.get(key)
        if entry is not None:
            version, loaded, value = entry
            fresh = self._ttl is None or now - loaded < self._ttl
            if version == self._version and fresh:
                return value
        version = self._version
        value = load()
        with self._lock:
            if version == self._version:  # no write since the load began
                self._entries[key] = (version, now, value)
        return value

    def invalidate(self) -> None:
        with self._lock:
            self._version += 1
            self._entries.clear()
