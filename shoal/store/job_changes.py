"""Which jobs each committed transaction changed: the store's change feed, which watchers of
`GET /api/v1/jobs?watch=true` follow (`shoal.server.job_watch`).

Only `shoal up` writes the store (`shoal.control.ownership`), so every change to a job passes
through this process's engine, whichever thread makes it (the control loop, an API worker,
the event loop's submissions). The feed listens there, below every write path, rather than
asking each path to report what it touched:

- every statement that inserts into `events` or `tasks`, or updates `jobs` (by the unit of
  work, bound as `jobs_id`, or by the batched statements, `job_id`), names the job ids it
  touches in its parameters. Each state change of a job or task writes an event, so a new
  write path is seen without knowing about the feed;
- the ids gathered on a connection are handed over at its COMMIT, and published once the
  connection is back in the pool: after the commit, so a reader that asks the store then
  sees the change. A rollback drops them;
- removing jobs (`JobQueries._delete_where`) takes their events with them; it reports the
  jobs removed, as they were last stored, with `deleted`.

It costs nothing while nobody listens (one attribute check per statement), and never a read:
what a listener does with the ids, and when, is its business.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, event

if TYPE_CHECKING:
    from shoal.store.job_queries import JobSummary

#: The tables whose inserted or updated rows name the jobs they concern, and the parameter
#: names that carry a job's id.
_TABLES = frozenset({"events", "tasks", "jobs"})
_JOB_KEYS = ("job_id", "jobs_id")
_OPEN = "shoal.job_changes.open"
_COMMITTED = "shoal.job_changes.committed"


@dataclass(frozen=True, slots=True)
class JobChange:
    """What one or more committed transactions did to jobs: `changed` (ids) were added or
    changed; `deleted` were removed, as they were last stored."""

    changed: frozenset[int] = frozenset()
    deleted: tuple[JobSummary, ...] = ()


@dataclass(slots=True)
class _Pending:
    changed: set[int] = field(default_factory=set)
    deleted: list[JobSummary] = field(default_factory=list)


Listener = Callable[[JobChange], None]


class JobChanges:
    """The feed of one engine. Listeners are called in the thread that released the
    connection, after its commit: they must be quick (queue the change, wake a reader)."""

    def __init__(self, engine: Engine) -> None:
        self._listeners: tuple[Listener, ...] = ()
        self._lock = threading.Lock()
        event.listen(engine, "before_execute", self._executing)
        event.listen(engine, "commit", self._committing)
        event.listen(engine, "rollback", self._rolled_back)
        event.listen(engine.pool, "checkin", self._checked_in)

    @property
    def listening(self) -> bool:
        return bool(self._listeners)

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with each change committed from now on; returns what stops it."""
        with self._lock:
            self._listeners = (*self._listeners, listener)

        def stop() -> None:
            with self._lock:
                self._listeners = tuple(x for x in self._listeners if x is not listener)
        return stop

    def deleted(self, connection: Connection, summaries: Sequence[JobSummary]) -> None:
        """These jobs are removed in `connection`'s transaction (published at its commit)."""
        if self._listeners and summaries:
            _pending(connection.info, _OPEN).deleted.extend(summaries)

    def changed(self, connection: Connection, ids: Iterable[int]) -> None:
        """These jobs were written in `connection`'s transaction by statements run on the
        driver, which the engine's events do not see (published at its commit)."""
        if self._listeners:
            _pending(connection.info, _OPEN).changed.update(ids)

    # ---- the engine's events ----------------------------------------------------------------

    def _executing(self, connection: Connection, clause: Any, multiparams: Any,
                   params: Any, _options: Any) -> None:
        if not self._listeners or not getattr(clause, "is_dml", False):
            return
        table = getattr(clause, "table", None)
        if getattr(table, "name", None) not in _TABLES or getattr(clause, "is_delete", False):
            return
        ids = _job_ids(multiparams, params)
        if not ids and getattr(clause, "is_insert", False):  # `.values(job_id=...)`
            ids = _job_ids((), clause.compile().params)
        if ids:
            _pending(connection.info, _OPEN).changed.update(ids)

    @staticmethod
    def _committing(connection: Connection) -> None:
        done = connection.info.pop(_OPEN, None)
        if done is not None:
            committed = _pending(connection.info, _COMMITTED)
            committed.changed |= done.changed
            committed.deleted += done.deleted

    @staticmethod
    def _rolled_back(connection: Connection) -> None:
        connection.info.pop(_OPEN, None)

    def _checked_in(self, _dbapi_connection: Any, record: Any) -> None:
        info = record.info
        info.pop(_OPEN, None)  # a transaction never committed
        done = info.pop(_COMMITTED, None)
        if done is None:
            return
        change = JobChange(frozenset(done.changed), tuple(done.deleted))
        for listener in self._listeners:
            listener(change)


def _pending(info: dict[Any, Any], key: str) -> _Pending:
    found = info.get(key)
    if found is None:
        found = info[key] = _Pending()
    return found


def _job_ids(multiparams: Any, params: Any) -> set[int]:
    """The job ids a statement's parameters carry (one set, many sets, or both)."""
    sets: Iterable[Any] = multiparams or ()
    if sets and isinstance(sets, Sequence) and len(sets) == 1 \
            and isinstance(sets[0], Sequence) and not isinstance(sets[0], Mapping):
        sets = sets[0]  # a list of parameter sets passed as one argument
    ids: set[int] = set()
    for one in (*sets, params or {}):
        if isinstance(one, Mapping):
            for key in _JOB_KEYS:
                value = one.get(key)
                if isinstance(value, int):
                    ids.add(value)
    return ids
