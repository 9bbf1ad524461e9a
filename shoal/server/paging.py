"""Bounded lists for the catalog routes (nodes, virtual clusters, priority classes, a job's
virtual clusters): every list answers at most `limit` items, MAX_LIST at most.

These lists keep their shape (a JSON array, in the order the route documents); a client that
got `limit` items asks for the next ones with `after` set to the last one's name. Jobs, a
job's tasks and its events have pages of their own (`shoal.server.jobs`), served by keyset
queries in the store.
"""

from collections.abc import Callable, Sequence
from typing import Annotated, TypeVar

from fastapi import Query

from shoal.server.errors import ApiError

MAX_LIST = 1000
"""The most items one answer of a catalog list holds."""

T = TypeVar("T")

Limit = Annotated[int, Query(ge=1, le=MAX_LIST,
                             description=f"At most this many items (at most {MAX_LIST}).")]
After = Annotated[str | None, Query(
    max_length=600, description="The name of the last item of the previous answer.")]


def page(items: Sequence[T], name: Callable[[T], str], limit: int, after: str | None
         ) -> list[T]:
    """The items after the one named `after` (all from the first without it), at most
    `limit`; an `after` that names none of them is a 422 on `query.after`."""
    start = 0
    if after is not None:
        found = next((i for i, item in enumerate(items) if name(item) == after), None)
        if found is None:
            raise ApiError(422, "names nothing in this list to continue after", "query.after")
        start = found + 1
    return list(items[start:start + limit])
