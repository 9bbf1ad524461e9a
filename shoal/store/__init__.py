"""Shoal's persistent store: SQLAlchemy models, Alembic migrations, and the typed repository
the control plane uses. SQLite by default (`sqlite:///path`), PostgreSQL by URL."""

from shoal.store.accounts import User, hash_token
from shoal.store.engine import Store, open_store
from shoal.store.errors import (
    AlreadyExistsError,
    IdempotencyConflict,
    NotFoundError,
    StoreError,
)
from shoal.store.job_queries import Event, JobSummary
from shoal.store.repository import Repository

__all__ = [
    "AlreadyExistsError",
    "Event",
    "IdempotencyConflict",
    "JobSummary",
    "NotFoundError",
    "Repository",
    "Store",
    "StoreError",
    "User",
    "hash_token",
    "open_store",
]
