"""The migrated schema matches the models, on both backends; the migrations ship in the
package; migrating twice is harmless."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from shoal.store import Store
from shoal.store.engine import MIGRATIONS
from shoal.store.models import Base


def test_migrations_match_models(store: Store) -> None:
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_migrate_is_idempotent_and_at_head(store: Store) -> None:
    store.migrate()
    with store.engine.connect() as conn:
        assert MigrationContext.configure(conn).get_current_revision() == "0020"
        tables = set(inspect(conn).get_table_names())
    assert set(Base.metadata.tables) <= tables


def test_migrations_live_inside_the_package() -> None:
    assert (MIGRATIONS / "env.py").is_file()
    assert (MIGRATIONS / "versions" / "0001_initial.py").is_file()
    assert MIGRATIONS.parent.name == "store"


def test_sqlite_pragmas(tmp_path: object) -> None:
    from pathlib import Path

    from shoal.store import open_store

    store = open_store(f"sqlite:///{Path(str(tmp_path)) / 'sub' / 'x.db'}")
    try:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    finally:
        store.close()
