"""Shoal's persistent store: SQLAlchemy models, Alembic migrations, and the typed repository
the control plane uses. SQLite by default (`sqlite:///path`), PostgreSQL by URL."""

from shoal.store.engine import Store, open_store
from shoal.store.repository import (
    AlreadyExistsError,
    Event,
    IdempotencyConflict,
    NotFoundError,
    Repository,
    StoreError,
    User,
    hash_token,
)

__all__ = [
    "AlreadyExistsError",
    "Event",
    "IdempotencyConflict",
    "NotFoundError",
    "Repository",
    "Store",
    "StoreError",
    "User",
    "hash_token",
    "open_store",
]
