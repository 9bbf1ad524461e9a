"""Opening a store: the SQLAlchemy engine, its session factory and schema migration.

`open_store(url)` accepts any SQLAlchemy URL; `sqlite:///path` (the default backend) gets WAL,
foreign keys and a busy timeout on every connection. Its write transactions (`sessions`)
start with `BEGIN IMMEDIATE` so that two writers queue up instead of failing on a lock
upgrade; read-only ones (`reads`) start with a plain `BEGIN`, which in WAL mode takes no lock
at all. Taking the write lock for reads too made every API read queue behind the control
loop's writes, and SQLite's busy handler sleeps in steps of milliseconds, so a submission took
30 ms instead of 3.
PostgreSQL is `postgresql+psycopg://…`. `Store.migrate()` brings the schema to the newest
Alembic revision; the migration scripts ship inside the package (`shoal/store/migrations`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000


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
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        read_only = connection.get_execution_options().get(READ_ONLY, False)
        # Straight to the driver: exec_driver_sql would run the whole statement machinery
        # (events, result set-up) for a statement that returns nothing, on every transaction.
        connection.connection.driver_connection.execute(
            "BEGIN" if read_only else "BEGIN IMMEDIATE")


def open_store(url: str) -> Store:
    """Open (without migrating) the store at `url`."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed)
        _sqlite_pragmas(engine)
    else:
        engine = create_engine(parsed, pool_pre_ping=True)
    return Store(engine)
