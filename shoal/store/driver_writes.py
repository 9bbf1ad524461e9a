"""The control loop's batched writes run straight on SQLite's cursor (issue 18): the
`executemany` inserts, updates and upserts of a cycle's binds, a chunk's starts and a poll's
exits (`shoal.store.task_batches`, `shoal.store.accounting`), with the statement and the
positional parameters SQLAlchemy itself would send (`shoal.store.driver_insert`).

Why. Measured in process (`bench/task_records.py`), an exit batch cost ~3.4 ms of the
loop's CPU whatever its size, plus ~0.2 ms per task: most of the fixed part was
SQLAlchemy's execution of its ~11 statements (the execution context, the compiled cache's
look-up, each parameter set processed in Python), not SQLite's work. In a burst a poll sees
~10–40 ends, so that fixed part was a large share of each job's exit.

What stays. The transaction is SQLAlchemy's (the write turn, `BEGIN IMMEDIATE`, commit,
rollback); reads, and statements with expanding `IN` lists, still go through it. The job
change feed (`shoal.store.job_changes`), which listens to SQLAlchemy's statements, is told
the job ids these statements name, as its listener would have found them. Other databases
(PostgreSQL) run the same statements through SQLAlchemy, as before. A test writes a burst's
binds, starts and exits both ways and compares every table row by row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.sql.dml import ValuesBase

from shoal.store.driver_insert import compiled_for
from shoal.store.job_changes import JobChanges

#: The tables whose written rows name the jobs they concern (as `job_changes` reads them).
_FEED_TABLES = frozenset({"events", "tasks", "jobs"})
_FEED_KEYS = ("job_id", "jobs_id")
ON_DRIVER = True
"""Whether SQLite's batched writes run on the driver (a test turns it off to compare)."""


def execute_many(connection: Connection, statement: ValuesBase,
                 sets: Sequence[Mapping[str, Any]], changes: JobChanges | None = None
                 ) -> None:
    """Run `statement` once per parameter set (each giving the same names) in
    `connection`'s transaction: on SQLite on the driver's cursor, telling `changes` (the
    store's feed; None for tables it does not follow) the jobs it wrote; elsewhere through
    SQLAlchemy, whose events tell it."""
    if not sets:
        return
    dialect = connection.dialect
    if not ON_DRIVER or dialect.name != "sqlite":
        connection.execute(statement, list(sets))
        return
    compiled = compiled_for(statement, dialect, frozenset(sets[0]))
    driver = connection.connection.driver_connection
    assert driver is not None
    cursor = driver.cursor()
    try:
        cursor.executemany(compiled.sql, compiled.rows(sets))
    finally:
        cursor.close()
    table = getattr(statement, "table", None)
    if changes is not None and changes.listening \
            and getattr(table, "name", None) in _FEED_TABLES:
        changes.changed(connection, {value for one in sets for key in _FEED_KEYS
                                     if isinstance(value := one.get(key), int)})
