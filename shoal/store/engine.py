"""Opening a store: the SQLAlchemy engine, its session factory and schema migration.

`open_store(url)` accepts any SQLAlchemy URL; `sqlite:///path` (the default backend) gets WAL,
foreign keys and a busy timeout on every connection. Its write transactions (`sessions`)
start with `BEGIN IMMEDIATE` so that two writers queue up instead of failing on a lock
upgrade; read-only ones (`reads`) start with a plain `BEGIN`, which in WAL mode takes no lock
at all. Taking the write lock for reads too made every API read queue behind the control
loop's writes, and SQLite's busy handler sleeps in steps of milliseconds, so a submission took
30 ms instead of 3.

`database is locked` never reaches a caller for a lock that is merely held long. A write
transaction waits for the write lock in its `BEGIN IMMEDIATE` — the only statement of it that
can meet the lock: in WAL mode, once a transaction holds it, nothing else it runs waits for
another connection, and reads never wait for writers. When a writer holds the lock past the
busy timeout (SQLITE_BUSY_TIMEOUT_MS), that `BEGIN` is tried again, up to
SQLITE_LOCKED_RETRIES more times, with a warning: nothing of the transaction has run yet, so
a retry is always safe, and a long write costs the others latency, not an error.

A process's own writers queue on a lock of its engine (`_WriteTurns`) before their
`BEGIN IMMEDIATE`, and the next is woken once the one before has committed or rolled back.
Left to SQLite's busy handler, a writer that met the lock slept in growing steps (up to 100 ms)
and retried: in a burst the API's event loop, whose submissions write, slept there for ~40 %
of its busy time while the control loop's writes were long done. Writers of other processes
still meet the busy handler, as before; a turn not given within WRITE_TURN_TIMEOUT_S goes
on to the `BEGIN` regardless, which then waits and fails as before.
PostgreSQL is `postgresql+psycopg://…`. `Store.migrate()` brings the schema to the newest
Alembic revision; the migration scripts ship inside the package (`shoal/store/migrations`).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from shoal.store.job_changes import JobChanges

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
#: How long SQLite's busy handler waits for a lock before answering `database is locked`.
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: How many more busy timeouts a write transaction waits for the write lock before its
#: error goes up: a writer holding it for minutes is a fault, not load.
SQLITE_LOCKED_RETRIES = 8
#: How long a writer waits for its turn among its process's writers before it goes to its
#: `BEGIN IMMEDIATE` regardless (which then waits for SQLite's lock, and fails, as before).
WRITE_TURN_TIMEOUT_S = 300.0


#: The execution option that marks a read-only transaction (see `_sqlite_pragmas`).
READ_ONLY = "shoal_read_only"


class Store:
    """An engine and its session factories: `sessions.begin()` for one all-or-nothing write
    transaction, `reads.begin()` for a consistent read that writes nothing."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sessions: sessionmaker[Session] = sessionmaker(engine, expire_on_commit=False)
        self.reads: sessionmaker[Session] = sessionmaker(
            engine.execution_options(**{READ_ONLY: True}), expire_on_commit=False)
        self.job_changes = JobChanges(engine)
        """What committed transactions did to jobs, for watchers (`job_changes`)."""

    @property
    def url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    def alembic_config(self) -> Config:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.set_main_option("sqlalchemy.url",
                               self.engine.url.render_as_string(hide_password=False)
                               .replace("%", "%%"))
        return config

    def migrate(self, revision: str = "head") -> None:
        """Upgrade the schema to `revision` (the newest by default).

        On SQLite, foreign keys are off while it runs: a migration that changes a
        constraint rebuilds the table (Alembic's batch mode: copy, drop, rename), and
        dropping `jobs` with foreign keys on would cascade to every task and event."""
        config = self.alembic_config()
        sqlite = self.engine.dialect.name == "sqlite"
        with self.engine.connect() as connection:
            driver: Any = connection.connection.driver_connection
            if sqlite:  # outside any transaction, where SQLite ignores the pragma
                driver.execute("PRAGMA foreign_keys=OFF")
            try:
                with connection.begin():
                    config.attributes["connection"] = connection
                    command.upgrade(config, revision)
            finally:
                if sqlite:
                    driver.execute("PRAGMA foreign_keys=ON")

    def close(self) -> None:
        self.engine.dispose()


def _sqlite_pragmas(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide where transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            # First: switching a new database to WAL takes its lock and must wait for it too.
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    turns = _WriteTurns()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        read_only = connection.get_execution_options().get(READ_ONLY, False)
        # Straight to the driver: exec_driver_sql would run the whole statement machinery
        # (events, result set-up) for a statement that returns nothing, on every transaction.
        driver = connection.connection.driver_connection
        if read_only:
            driver.execute("BEGIN")
            return
        turns.take(driver)
        try:
            _begin_immediate(driver)
        except BaseException:
            turns.give_back(driver)
            raise

    # SQLAlchemy's commit and rollback events come before its own call to the driver. The
    # turn's holder ends its transaction here, so the next writer is woken after the COMMIT
    # (or ROLLBACK) has run, not racing it; SQLAlchemy's call then finds no transaction open,
    # which the driver takes as nothing to do.
    @event.listens_for(engine, "commit")
    def _on_commit(connection: Any) -> None:
        turns.end(connection.connection.driver_connection, commit=True)

    @event.listens_for(engine, "rollback")
    def _on_rollback(connection: Any) -> None:
        turns.end(connection.connection.driver_connection, commit=False)

    @event.listens_for(engine, "checkin")
    def _on_checkin(dbapi_connection: Any, _record: Any) -> None:
        turns.give_back(dbapi_connection)  # a transaction that ended without either event


class _WriteTurns:
    """The write transactions of one engine's connections, one at a time: a writer waits
    here, and is woken by the previous one's end, instead of polling SQLite's lock.
    Given back by the connection that holds it (twice is harmless)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._guard = threading.Lock()
        self._holder: object | None = None

    def take(self, driver: object) -> None:
        if self._lock.acquire(timeout=WRITE_TURN_TIMEOUT_S):
            with self._guard:
                self._holder = driver

    def end(self, driver: sqlite3.Connection, commit: bool) -> None:
        """End the transaction of the turn's holder (commit or roll back) and give the
        turn back; for any other connection, only what `give_back` does."""
        if self._holder is driver:
            if commit:
                driver.commit()
            else:
                driver.rollback()
        self.give_back(driver)

    def give_back(self, driver: object) -> None:
        with self._guard:
            if self._holder is not driver:
                return
            self._holder = None
            self._lock.release()


def _begin_immediate(driver: sqlite3.Connection) -> None:
    """Take the write lock, waiting up to SQLITE_LOCKED_RETRIES more busy timeouts."""
    for retry in range(SQLITE_LOCKED_RETRIES + 1):
        try:
            driver.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if not is_locked(exc) or retry == SQLITE_LOCKED_RETRIES:
                raise
            log.warning("the store's write lock is held past %d ms (a long write); "
                        "waiting again (%d/%d)", SQLITE_BUSY_TIMEOUT_MS, retry + 1,
                        SQLITE_LOCKED_RETRIES)


def is_locked(exc: BaseException) -> bool:
    """Whether `exc` is SQLite's `database is locked` (SQLITE_BUSY), raw or wrapped."""
    inner = getattr(exc, "orig", exc)
    if not isinstance(inner, sqlite3.OperationalError):
        return False
    code = getattr(inner, "sqlite_errorcode", None)
    return (code & 0xFF) == sqlite3.SQLITE_BUSY if code is not None \
        else "database is locked" in str(inner)


def open_store(url: str) -> Store:
    """Open (without migrating) the store at `url`."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        # The driver's own timeout covers the connect itself, before the pragmas run.
        engine = create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        _sqlite_pragmas(engine)
    else:
        engine = create_engine(parsed, pool_pre_ping=True)
    return Store(engine)
