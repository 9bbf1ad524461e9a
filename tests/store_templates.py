"""Fresh stores copied from a template migrated once per session (`tests/conftest.py`'s
`sqlite_template` and `postgres_template`): `Store.migrate()` takes a tenth of a second or
more, and the store fixtures make a store for over a thousand tests."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from shoal.store import Store, open_store


def migrate_template(url: str) -> None:
    """Migrate the store at `url` to head, and close every connection to it."""
    made = open_store(url)
    try:
        made.migrate()
    finally:
        made.close()


def migrated_sqlite(template: Path, path: Path) -> Store:
    """A store on a fresh copy of the migrated SQLite `template` at `path` (SQLite's backup
    API: a consistent copy whatever is still in the template's write-ahead log)."""
    with contextlib.closing(sqlite3.connect(template)) as source, \
            contextlib.closing(sqlite3.connect(path)) as copy:
        source.backup(copy)
    return open_store(f"sqlite:///{path}")
