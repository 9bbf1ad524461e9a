"""Reads of jobs whose size does not grow with a job's tasks, and the removal of jobs.

What the API lists and shows is bounded whatever a job's size: a job's summary
(`JobSummary`) counts its tasks per state in one grouped query and never loads them; its
tasks and its history are read a keyset page at a time (`task_page`, `event_page`: `after`
names the last item of the previous page, so a page is one index range scan however deep it
is). Removing jobs (`delete_jobs`, `delete_expired`) takes their tasks, events and job
tokens with them, in one transaction per batch, and only ever removes jobs that have ended:
a job that still runs is cancelled first and removed by the control loop once its processes
have stopped (`request_delete` marks it). `JobQueries` is a base class of `Repository`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, func, or_, select
from sqlalchemy.orm import Session, selectinload

from shoal.api import Job, JobState, Task, TaskRef, TaskState
from shoal.store import convert
from shoal.store.accounts import User
from shoal.store.cache import ReadThroughCache
from shoal.store.engine import Store
from shoal.store.errors import NotFoundError
from shoal.store.models import EventRow, JobOriginalRow, JobRow, TaskRow, TokenRow

TERMINAL_JOB_STATES = tuple(s.value for s in JobState if s.terminal)
#: Names per `IN (…)` list: well under SQLite's bound on parameters.
CHUNK = 500
#: Jobs removed per transaction by `delete_expired`: a sweep of a large backlog is many
#: short transactions, not one that holds the write lock for long.
DELETE_BATCH = 200


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of a job's history; `id` orders it and is the cursor of `event_page`."""

    job: str
    time: float
    kind: str
    cause: str
    task: TaskRef | None = None
    source: str | None = None
    target: str | None = None
    id: int = 0


@dataclass(frozen=True, slots=True)
class JobSummary:
    """A job without its tasks: `job.tasks` is empty and `task_counts` says how many of its
    tasks are in each state (states with none left out)."""

    job: Job
    task_counts: Mapping[TaskState, int]
    elastic_size: int | None
    """An elastic job's elastic-group tasks that are bound or running; None: rigid."""
    updated: float
    ended: float | None
    delete_requested: bool
    imported: str | None = None
    """The format of the document it was imported from (`shoal.spec.imports.ImportFormat`'s
    value); None: written as `shoal/v1`."""


class JobQueries:
    """The bounded reads and the removals of `Repository` (which supplies `store` and
    `clock`)."""

    store: Store
    clock: Callable[[], float]
    _tokens: ReadThroughCache[User | None]

    # ---- whole jobs (the control loop's and the tests' reads) -----------------------------

    def list_jobs(self, *, state: JobState | None = None, queue: str | None = None,
                  user: str | None = None, limit: int = 50, after: str | None = None
                  ) -> list[Job]:
        """Jobs with their tasks, in submission order (`list_job_summaries`' order)."""
        with self.store.reads.begin() as s:
            query = _filtered(s, select(JobRow).options(selectinload(JobRow.tasks)),
                              state, queue, user, after)
            return [convert.job_from_row(r) for r in s.scalars(query.limit(limit))]

    def job_events(self, name: str) -> list[Event]:
        """The job's whole history, oldest first (unbounded: the API pages `event_page`)."""
        with self.store.reads.begin() as s:
            job_id = _job_id(s, name)
            rows = s.scalars(select(EventRow).where(EventRow.job_id == job_id)
                             .order_by(EventRow.id))
            return [_event(name, r) for r in rows]

    # ---- bounded reads (the API's) ---------------------------------------------------------

    def job_summary(self, name: str) -> JobSummary | None:
        with self.store.reads.begin() as s:
            row = s.scalar(select(JobRow).where(JobRow.name == name))
            return None if row is None else _summaries(s, [row])[0]

    def job_summaries_by_id(self, ids: Iterable[int]) -> list[JobSummary]:
        """The summaries of those of these jobs (by row id) that exist, in one read."""
        wanted = sorted(set(ids))
        with self.store.reads.begin() as s:
            rows: list[JobRow] = []
            for start in range(0, len(wanted), CHUNK):
                rows += s.scalars(select(JobRow).where(
                    JobRow.id.in_(wanted[start:start + CHUNK])))
            return _summaries(s, rows)

    def list_job_summaries(self, *, state: JobState | None = None, queue: str | None = None,
                           user: str | None = None, limit: int = 50,
                           after: str | None = None) -> list[JobSummary]:
        """Jobs in submission order, `(submitted, name)`; `after` is the last name of the
        previous page (keyset pagination: stable while jobs are added). An `after` that
        names no job raises NotFoundError."""
        with self.store.reads.begin() as s:
            query = _filtered(s, select(JobRow), state, queue, user, after)
            return _summaries(s, list(s.scalars(query.limit(limit))))

    def task_page(self, name: str, *, limit: int, after: tuple[str, int] | None = None
                  ) -> list[Task]:
        """Up to `limit` of the job's tasks in task order (its groups in spec order, each by
        index), after the task `(group, index)` if given. NotFoundError: no such job, or
        no such task to page after."""
        with self.store.reads.begin() as s:
            job_id = _job_id(s, name)
            query = select(TaskRow).where(TaskRow.job_id == job_id)
            if after is not None:
                mark = s.scalar(select(TaskRow.id).where(
                    TaskRow.job_id == job_id, TaskRow.group_name == after[0],
                    TaskRow.task_index == after[1]))
                if mark is None:
                    raise NotFoundError(f"job {name!r} has no task {after[0]}-{after[1]}")
                query = query.where(TaskRow.id > mark)
            rows = s.scalars(query.order_by(TaskRow.id).limit(limit))
            return [convert.task_from_row(name, r) for r in rows]

    def event_page(self, name: str, *, limit: int, after: int | None = None,
                   latest: bool = False) -> list[Event]:
        """Up to `limit` entries of the job's history, oldest first, after the event with
        id `after` if given; with `latest`, the last `limit` entries instead."""
        with self.store.reads.begin() as s:
            job_id = _job_id(s, name)
            query = select(EventRow).where(EventRow.job_id == job_id)
            if after is not None:
                query = query.where(EventRow.id > after)
            if latest:
                rows = list(s.scalars(query.order_by(EventRow.id.desc()).limit(limit)))
                rows.reverse()
            else:
                rows = list(s.scalars(query.order_by(EventRow.id).limit(limit)))
            return [_event(name, r) for r in rows]

    def existing(self, names: Iterable[str]) -> set[str]:
        """Those of the names that are jobs in the store."""
        wanted = sorted(set(names))
        found: set[str] = set()
        with self.store.reads.begin() as s:
            for start in range(0, len(wanted), CHUNK):
                found.update(s.scalars(select(JobRow.name).where(
                    JobRow.name.in_(wanted[start:start + CHUNK]))))
        return found

    # ---- removal -------------------------------------------------------------------------

    def request_delete(self, name: str) -> JobSummary:
        """Mark the job for removal once it has ended (the control loop's `JobExpiry` removes
        it then); returns its summary as stored now."""
        with self.store.sessions.begin() as s:
            row = s.scalar(select(JobRow).where(JobRow.name == name).with_for_update())
            if row is None:
                raise NotFoundError(f"no job {name!r}")
            row.delete_requested = True
            s.flush()
            return _summaries(s, [row])[0]

    def delete_jobs(self, names: Iterable[str]) -> list[str]:
        """Remove those of the named jobs that have ended, with their tasks, events and job
        tokens (their idempotency keys go with their rows); returns the names removed. A
        job that has not ended, or does not exist, is left alone."""
        wanted = sorted(set(names))
        removed: list[str] = []
        for start in range(0, len(wanted), CHUNK):
            removed += self._delete_where(JobRow.name.in_(wanted[start:start + CHUNK]), CHUNK)
        return removed

    def delete_expired(self, ended_before: float | None) -> list[str]:
        """Remove the ended jobs that either ended before `ended_before` (None: no TTL) or
        were asked to be deleted; returns their names. Works in batches of DELETE_BATCH."""
        which: ColumnElement[bool] = JobRow.delete_requested.is_(True)
        if ended_before is not None:
            which = or_(which, JobRow.ended < ended_before)
        removed: list[str] = []
        while True:
            batch = self._delete_where(which, DELETE_BATCH)
            removed += batch
            if len(batch) < DELETE_BATCH:
                return removed

    def _delete_where(self, which: ColumnElement[bool], limit: int) -> list[str]:
        with self.store.sessions.begin() as s:
            found = s.execute(select(JobRow.id, JobRow.name)
                              .where(which, JobRow.state.in_(TERMINAL_JOB_STATES))
                              .order_by(JobRow.id).limit(limit)).all()
            if not found:
                return []
            ids = [job_id for job_id, _ in found]
            names = [name for _, name in found]
            if self.store.job_changes.listening:  # watchers are told what was removed
                self.store.job_changes.deleted(s.connection(), _summaries(
                    s, list(s.scalars(select(JobRow).where(JobRow.id.in_(ids))))))
            # Explicit rather than left to ON DELETE CASCADE, which SQLite honours only
            # with its foreign_keys pragma on.
            s.execute(delete(EventRow).where(EventRow.job_id.in_(ids)))
            s.execute(delete(JobOriginalRow).where(JobOriginalRow.job_id.in_(ids)))
            s.execute(delete(TaskRow).where(TaskRow.job_id.in_(ids)))
            s.execute(delete(TokenRow).where(TokenRow.job.in_(names)))
            s.execute(delete(JobRow).where(JobRow.id.in_(ids)))
        self._tokens.invalidate()  # a removed job's token may be cached
        return names


def _job_id(s: Session, name: str) -> int:
    job_id = s.scalar(select(JobRow.id).where(JobRow.name == name))
    if job_id is None:
        raise NotFoundError(f"no job {name!r}")
    return job_id


def _event(name: str, r: EventRow) -> Event:
    return Event(job=name, time=r.time, kind=r.kind, cause=r.cause,
                 task=None if r.task is None else TaskRef.parse(r.task),
                 source=r.source_state, target=r.target_state, id=r.id)


def _filtered(s: Session, query: Any, state: JobState | None, queue: str | None,
              user: str | None, after: str | None) -> Any:
    if state is not None:
        query = query.where(JobRow.state == state.value)
    if queue is not None:
        query = query.where(JobRow.queue == queue)
    if user is not None:
        query = query.where(JobRow.user == user)
    if after is not None:
        mark = s.scalar(select(JobRow.submitted).where(JobRow.name == after))
        if mark is None:
            raise NotFoundError(f"no job {after!r} to page after")
        query = query.where(or_(JobRow.submitted > mark,
                                and_(JobRow.submitted == mark, JobRow.name > after)))
    return query.order_by(JobRow.submitted, JobRow.name)


def _summaries(s: Session, rows: Sequence[JobRow]) -> list[JobSummary]:
    """The rows' summaries: their task counts in one grouped query, never the tasks."""
    counts: dict[int, dict[tuple[str, TaskState], int]] = {r.id: {} for r in rows}
    ids = list(counts)
    formats: dict[int, str] = {}
    for start in range(0, len(ids), CHUNK):
        for job_id, format_ in s.execute(
                select(JobOriginalRow.job_id, JobOriginalRow.format)
                .where(JobOriginalRow.job_id.in_(ids[start:start + CHUNK]))):
            formats[job_id] = format_
        grouped = s.execute(
            select(TaskRow.job_id, TaskRow.group_name, TaskRow.state, func.count())
            .where(TaskRow.job_id.in_(ids[start:start + CHUNK]))
            .group_by(TaskRow.job_id, TaskRow.group_name, TaskRow.state))
        for job_id, group, state, n in grouped:
            counts[job_id][(group, TaskState(state))] = n
    out: list[JobSummary] = []
    for row in rows:
        job = convert.job_from_row(row, with_tasks=False)
        by_state: dict[TaskState, int] = {}
        for (_, state), n in counts[row.id].items():
            by_state[state] = by_state.get(state, 0) + n
        elastic = job.elastic
        size = None if elastic is None else sum(
            n for (group, state), n in counts[row.id].items()
            if group == elastic.group and state in (TaskState.BOUND, TaskState.RUNNING))
        out.append(JobSummary(job=job, task_counts=by_state,
                              elastic_size=size, updated=row.updated, ended=row.ended,
                              delete_requested=bool(row.delete_requested),
                              imported=formats.get(row.id)))
    return out
