"""The store's refusals: every one means nothing of the request was stored."""

from __future__ import annotations


class StoreError(Exception):
    """A request the store refuses; nothing of it was stored."""


class NotFoundError(StoreError, KeyError):
    """The named job, task or user does not exist."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"


class AlreadyExistsError(StoreError):
    """A job or user of that name exists already."""


class IdempotencyConflict(StoreError):  # noqa: N818 (the name the API documents)
    """The idempotency key was used before for a different request."""
