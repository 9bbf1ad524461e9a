"""One control plane per store and data directory: the locks `shoal up` holds while it runs.

Two control planes over one store would each reconcile, adopt and launch the same tasks —
exactly the double launch the rest of the control plane is built to rule out. So before it
reconciles, `shoal up` takes:

- an exclusive `flock` on `DATA_DIR/shoal.lock` (the executor's task directories and logs
  live there, and by default the SQLite store too);
- for a store that is not SQLite in that directory, a session-level PostgreSQL advisory lock,
  on a connection kept open while the process lives.

Both are released by the kernel or the database server when the process ends, however it
ends — a `kill -9` leaves no stale lock behind for the restart to trip over.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from sqlalchemy import text

from shoal.store import Store

LOCK_FILE = "shoal.lock"
#: The advisory lock's key: any constant that other applications sharing the database are
#: unlikely to use ("shoal" in ASCII).
ADVISORY_KEY = 0x73686F616C


class InUseError(RuntimeError):
    """Something `shoal up` must own is taken: the data directory, the store (by another
    control plane) or the port."""


@contextmanager
def exclusive(data_dir: Path, store: Store) -> Iterator[None]:
    """Hold the data directory and the store for the duration of the block."""
    with _data_dir_lock(data_dir), _store_lock(store):
        yield


@contextmanager
def _data_dir_lock(data_dir: Path) -> Iterator[None]:
    path = data_dir / LOCK_FILE
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip()
            raise InUseError(
                f"another shoal up (pid {holder or 'unknown'}) is using the data directory "
                f"{data_dir.resolve()}; stop it first, or give this one --data-dir") from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(descriptor)  # releases the lock


@contextmanager
def _store_lock(store: Store) -> Iterator[None]:
    if store.engine.dialect.name != "postgresql":
        yield  # SQLite lives in the data directory, whose lock covers it
        return
    connection = store.engine.connect()
    try:
        held = connection.execute(text("SELECT pg_try_advisory_lock(:key)"),
                                  {"key": ADVISORY_KEY}).scalar()
        connection.commit()
        if not held:
            raise InUseError(f"another shoal up is using the store {store.url}; "
                                  "stop it first, or give this one another --db")
        yield
    finally:
        with suppress(Exception):  # closing the session releases the lock anyway
            connection.close()
