"""Submitting jobs to the store: one job (`submit`, which takes over the name of a job that
has ended, keeping that one in history: `shoal.store.job_names`), or the several jobs one
document became (`submit_jobs`), each with the document it was imported from; idempotent
replays by key; and reading an imported job's original back (`job_original`).

Inserts are Core statements compiled once, on a bare connection: a submission is the API's
hottest write. A `Repository` is a `Submissions`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    JSON,
    Connection,
    Dialect,
    Insert,
    Integer,
    String,
    bindparam,
    insert,
    literal,
    literal_column,
    select,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from shoal.api import (
    BUILTIN_PRIORITY_CLASSES,
    Job,
    JobState,
    Node,
    PriorityClass,
    TaskState,
    VirtualCluster,
)
from shoal.api.objects import renamed
from shoal.spec.checks import Known
from shoal.spec.imports import ImportFormat, Original
from shoal.store import convert
from shoal.store.cache import ReadThroughCache
from shoal.store.driver_insert import DriverInsert, compiled_for
from shoal.store.errors import AlreadyExistsError, IdempotencyConflict, NotFoundError
from shoal.store.job_names import JobNames, Submission, history_run, name_clash
from shoal.store.job_queries import CHUNK
from shoal.store.models import EventRow, JobOriginalRow, JobRow, TaskRow

SUBMITTED = "Submitted"

_INSERT_JOB = insert(JobRow).returning(JobRow.id)
_INSERT_JOBS = insert(JobRow).returning(JobRow.id, sort_by_parameter_order=True)
"""`_INSERT_JOB` for many jobs at once, their ids in the order of the parameters."""
_INSERT_EVENT = insert(EventRow)
_INSERT_ORIGINAL = insert(JobOriginalRow)
CLASH_TRIES = 3
"""How many times a submission that races another one of the same name tries again."""


def _insert_tasks() -> Insert:
    """One statement per task group that has the database write its `replicas` PENDING
    rows (`WITH RECURSIVE` counts the indices, on SQLite and PostgreSQL alike): what a
    submission costs in Python is then one parameter set per group, not one row per task —
    10,000 tasks took 146 ms as an executemany of rows, 8 ms so."""
    seq = select(literal_column("0", Integer).label("i")).cte("seq", recursive=True)
    seq = seq.union_all(select((seq.c.i + literal_column("1", Integer)).label("i"))
                        .where(seq.c.i + literal_column("1", Integer)
                               < bindparam("replicas", type_=Integer)))
    return insert(TaskRow).from_select(
        ["job_id", "group_name", "task_index", "state", "gpus", "attempts", "retries"],
        select(bindparam("job_id", type_=Integer), bindparam("group", type_=String),
               seq.c.i, literal(TaskState.PENDING.value, String), literal([], JSON),
               literal_column("0", Integer), literal_column("0", Integer)))


_INSERT_TASKS = _insert_tasks()


class Submissions(JobNames):
    """The job submissions of a `Repository` (its `store` and `clock`)."""

    _catalog: ReadThroughCache[tuple[Any, ...]]

    if TYPE_CHECKING:  # `Repository`'s own
        def list_nodes(self) -> list[Node]: ...
        def list_virtual_clusters(self) -> list[VirtualCluster]: ...
        def list_priority_classes(self) -> list[PriorityClass]: ...

    def known_names(self) -> Known:
        """The names a submitted document may refer to: the virtual clusters, the nodes and
        the priority classes (the built-in ones too), as sets. Kept with the catalog, and
        built again after any write to it: a submission's checks then cost nothing that
        grows with the cluster."""
        def load() -> tuple[Known]:
            return (Known(
                queues=frozenset(vc.name for vc in self.list_virtual_clusters()),
                nodes=frozenset(node.name for node in self.list_nodes()),
                priority_classes=frozenset(pc.name for pc in (
                    *BUILTIN_PRIORITY_CLASSES, *self.list_priority_classes()))),)
        known: Known = self._catalog.get("known-names", load)[0]
        return known

    def submit_job(self, job: Job, *, idempotency_key: str | None = None) -> tuple[Job, bool]:
        """`submit` of a name that must be new: an ended job of that name is a clash too."""
        done = self.submit(job, idempotency_key=idempotency_key, reuse=False)
        return done.job, done.created

    def submit(self, job: Job, *, idempotency_key: str | None = None, reuse: bool = True,
               generated_from: str | None = None, original: Original | None = None
               ) -> Submission:
        """Store a new job in PENDING with its task rows. A retry with the same key by the
        same user returns the stored job; the key with another spec is refused. Keys are the
        user's own: another user's job with the same key is neither returned nor named. The
        job returned does not list its tasks (a new job's are all PENDING; `JobInfo` reads
        that from its groups), nor does a replay's. With `reuse`, the name of a job that
        has ended is taken and that job kept in history (`shoal.store.job_names`).
        `generated_from`: the job's name was generated from this prefix
        (`metadata.generateName`): a retry with the same key matches whatever name the
        first try drew, and a generated name is never reused.

        The insert is tried first and the unique constraints on the name and the key decide:
        a new job (the common case) costs one transaction with no lookups, and a clash — a
        replay, a concurrent submit that won the race, or an ended job's name — is sorted
        out afterwards. `original`: the document the job was imported from, stored with it.
        """
        now = self.clock()
        pending = replace(job, state=JobState.PENDING, tasks=())
        refused = AlreadyExistsError(f"job {job.name!r} exists already")
        for _ in range(CLASH_TRIES):
            if self._inserted(pending, idempotency_key, now, original):
                return Submission(pending, True)
            replayed = self._replayed(job, idempotency_key, generated_from)
            if replayed is not None:
                return replayed
            if not reuse or generated_from is not None:
                raise AlreadyExistsError(f"job {job.name!r} exists already")
            try:
                taken = self._take_name(pending, idempotency_key, now, original)
            except AlreadyExistsError as exc:
                taken, refused = None, exc
                if idempotency_key is None:
                    raise
            if taken is not None:
                return taken
            # Raced by another submission of the name: a retry with the same key is a
            # replay once that one has committed; otherwise try again.
            replayed = self._replayed(job, idempotency_key, generated_from)
            if replayed is not None:
                return replayed
        raise refused

    def insert_new(self, jobs: Sequence[tuple[Job, str | None]]) -> tuple[Job, ...] | None:
        """New jobs of separate submissions (each with its idempotency key; none imported)
        stored in one transaction, with the rows `submit` stores for a new job; None, and
        none of them stored, when the store refuses any (a name or key taken, or another
        error: each is then `submit`ted alone, which answers it as it always did). One
        transaction for what arrived together: a burst's submissions share SQLite's write
        lock and commit. On SQLite its statements run on the driver's cursor
        (`shoal.store.driver_insert`: the same rows, without SQLAlchemy's execution per
        statement); elsewhere as three `executemany` statements."""
        if not jobs:
            return ()
        now = self.clock()
        pending = tuple(_as_pending(job) for job, _ in jobs)
        columns = [convert.job_columns(job, idempotency_key=key, now=now)
                   for job, (_, key) in zip(pending, jobs, strict=True)]
        try:
            with self.store.engine.begin() as connection:
                if connection.dialect.name == "sqlite":
                    self.store.job_changes.changed(
                        connection, _driver_inserts(connection, columns, pending, now))
                    return pending
                ids = connection.execute(_INSERT_JOBS, columns).scalars().all()
                tasks = _task_sets(ids, pending)
                if tasks:
                    connection.execute(_INSERT_TASKS, tasks)
                connection.execute(_INSERT_EVENT, _submitted_events(ids, pending, now))
        except (DBAPIError, sqlite3.Error):
            return None
        return pending

    def submit_jobs(self, jobs: Sequence[Job], *, idempotency_key: str | None = None,
                    originals: Mapping[str, Original] | None = None
                    ) -> tuple[tuple[Job, ...], bool]:
        """`submit_job` for the jobs one document became (a Volcano job, Sedna's phases, an
        array), all or none, in one transaction, each with its original document when
        `originals` names it. The key is stored on the first job; a replay is recognised by
        it and answers the stored jobs of the same names, each compared with its spec. Their
        names must be new: unlike `submit`, an ended job's name is not taken over.

        The inserts are tried first and the unique constraints on the names and the key
        decide: a new submission (the common case) costs one transaction with no lookups,
        and a clash — a replay, or a concurrent submit that won the race — is sorted out
        afterwards."""
        if not jobs:
            raise ValueError("a submission holds at least one job")
        now = self.clock()
        pending = tuple(replace(job, state=JobState.PENDING, tasks=()) for job in jobs)
        originals = originals or {}
        try:
            with self.store.engine.begin() as connection:
                for i, job in enumerate(pending):
                    self._insert_job(connection, job, idempotency_key if i == 0 else None, now,
                                     originals.get(job.name))
            return pending, True
        except DBAPIError as exc:
            if not name_clash(exc):
                raise
            with self.store.reads.begin() as s:
                first = jobs[0]
                existing = None if idempotency_key is None else \
                    self._by_key(s, first.user, idempotency_key)
                if existing is None:
                    taken = self._taken(s, [j.name for j in jobs])
                    raise AlreadyExistsError(f"job {taken!r} exists already") from None
                return self._replay_all(s, existing, jobs, idempotency_key or ""), False

    @staticmethod
    def _taken(s: Session, names: Sequence[str]) -> str:
        """The first of the names that a stored job has (the clash to report)."""
        found = set(s.scalars(select(JobRow.name).where(JobRow.name.in_(names[:CHUNK]))))
        return next((n for n in names if n in found), names[0])

    def _replay_all(self, s: Session, existing: JobRow, jobs: Sequence[Job], key: str
                    ) -> tuple[Job, ...]:
        out = [self._replay(existing, jobs[0], key)]
        if len(jobs) == 1:
            return tuple(out)
        rows = {r.name: r for r in s.scalars(select(JobRow).where(
            JobRow.name.in_([j.name for j in jobs[1:]])))}
        for job in jobs[1:]:
            row = rows.get(job.name)
            if row is None or row.user != existing.user or row.submitted != existing.submitted:
                raise IdempotencyConflict(
                    f"idempotency key {key!r} was used for a submission without job "
                    f"{job.name!r}")
            out.append(self._replay(row, job, key))
        return tuple(out)

    def job_original(self, name: str) -> Original | None:
        """The document the job was imported from; None for a job written as `shoal/v1`.
        NotFoundError: no such job."""
        with self.store.reads.begin() as s:
            found = s.execute(select(JobRow.id, JobOriginalRow.format, JobOriginalRow.document)
                              .outerjoin(JobOriginalRow, JobOriginalRow.job_id == JobRow.id)
                              .where(JobRow.name == name)).first()
        if found is None:
            raise NotFoundError(f"no job {name!r}")
        _, format_, document = found
        return None if format_ is None else Original(ImportFormat(format_), document)

    def _inserted(self, job: Job, idempotency_key: str | None, now: float,
                  original: Original | None = None) -> bool:
        """Insert the job; False when its name (or key) is taken."""
        try:
            # Core inserts with constant statements (compiled once) on a bare connection:
            # the ORM's unit of work, even its bulk mode, cost three times as much, and a
            # submission is the API's hottest write.
            with self.store.engine.begin() as connection:
                self._insert_job(connection, job, idempotency_key, now, original)
            return True
        except DBAPIError as exc:
            if not name_clash(exc):
                raise
            return False

    def _replayed(self, job: Job, key: str | None, generated_from: str | None
                  ) -> Submission | None:
        """The submission that `key` made before, if any (IdempotencyConflict when it was
        made with another spec)."""
        if key is None:
            return None
        with self.store.reads.begin() as s:
            existing = self._by_key(s, job.user, key)
            if existing is None:
                return None
            return Submission(self._replay(existing, job, key, generated_from), False)

    def _insert_job(self, connection: Connection, job: Job, idempotency_key: str | None,
                    now: float, original: Original | None = None) -> int:
        job_id: int = connection.execute(_INSERT_JOB, convert.job_columns(
            job, idempotency_key=idempotency_key, now=now)).scalar_one()
        connection.execute(_INSERT_TASKS, [
            {"job_id": job_id, "group": g.name, "replicas": g.replicas}
            for g in job.groups if g.replicas > 0])
        connection.execute(_INSERT_EVENT, {
            "job_id": job_id, "time": now, "kind": SUBMITTED,
            "target_state": JobState.PENDING.value,
            "cause": f"submitted to queue {job.queue}"})
        if original is not None:
            connection.execute(_INSERT_ORIGINAL, {
                "job_id": job_id, "format": original.format.value,
                "document": original.document})
        return job_id

    @staticmethod
    def _by_key(s: Session, user: str | None, key: str) -> JobRow | None:
        owner = JobRow.user.is_(None) if user is None else JobRow.user == user
        return s.scalar(select(JobRow).where(owner, JobRow.idempotency_key == key))

    @staticmethod
    def _replay(existing: JobRow, job: Job, key: str, generated_from: str | None = None
                ) -> Job:
        # The name the first try drew, or the history name its job was moved to since.
        if (generated_from is not None and existing.name.startswith(generated_from)) \
                or history_run(job.name, existing.name) is not None:
            job = renamed(job, existing.name)
        if convert.row_spec(existing) != convert.job_spec(job):
            raise IdempotencyConflict(
                f"idempotency key {key!r} was used for job {existing.name!r} "
                "with a different spec")
        return convert.job_from_row(existing, with_tasks=False)


def _task_sets(ids: Sequence[int], jobs: Sequence[Job]) -> list[dict[str, Any]]:
    """`_INSERT_TASKS`'s parameter sets: one per task group of each job that has tasks."""
    return [{"job_id": job_id, "group": g.name, "replicas": g.replicas}
            for job_id, job in zip(ids, jobs, strict=True)
            for g in job.groups if g.replicas > 0]


def _submitted_events(ids: Sequence[int], jobs: Sequence[Job], now: float
                      ) -> list[dict[str, Any]]:
    return [{"job_id": job_id, "time": now, "kind": SUBMITTED,
             "target_state": JobState.PENDING.value,
             "cause": f"submitted to queue {job.queue}"}
            for job_id, job in zip(ids, jobs, strict=True)]


_TASK_KEYS = frozenset(("job_id", "group", "replicas"))
_EVENT_KEYS = frozenset(("job_id", "time", "kind", "target_state", "cause"))


def _driver_statements(dialect: Dialect, job_keys: frozenset[str]
                       ) -> tuple[DriverInsert, ...]:
    """The jobs, tasks and events inserts for `dialect`, compiled once."""
    return (compiled_for(_INSERT_JOB, dialect, job_keys),
            compiled_for(_INSERT_TASKS, dialect, _TASK_KEYS),
            compiled_for(_INSERT_EVENT, dialect, _EVENT_KEYS))


def _as_pending(job: Job) -> Job:
    """The job as it is stored new: PENDING, no tasks. A submission's job already is (the
    API refuses a document with tasks, and the loader makes jobs PENDING): it is kept, not
    copied — `replace` of a Job's 30 fields cost ~15 µs a submission (issue 18)."""
    if job.state is JobState.PENDING and not job.tasks:
        return job
    return replace(job, state=JobState.PENDING, tasks=())


def _driver_inserts(connection: Connection, columns: Sequence[dict[str, Any]],
                    jobs: Sequence[Job], now: float) -> list[int]:
    """`insert_new`'s rows written on the driver's cursor, in `connection`'s transaction:
    each job's row (one statement each: its id comes back in order), then every task
    group's and every job's event in one `executemany` each. Returns the jobs' ids."""
    insert_job, insert_tasks, insert_event = _driver_statements(
        connection.dialect, frozenset(columns[0]))
    driver = connection.connection.driver_connection
    assert driver is not None
    cursor = driver.cursor()
    try:
        ids: list[int] = []
        for params in columns:
            cursor.execute(insert_job.sql, insert_job.row(params))
            ids.append(cursor.fetchone()[0])
        tasks = _task_sets(ids, jobs)
        if tasks:
            cursor.executemany(insert_tasks.sql, insert_tasks.rows(tasks))
        cursor.executemany(insert_event.sql,
                           insert_event.rows(_submitted_events(ids, jobs, now)))
    finally:
        cursor.close()
    return ids
