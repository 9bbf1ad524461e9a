"""The store's typed API: what the control plane reads and writes, one transaction per call.

Every public method is all-or-nothing: it runs in one transaction and, on any error, stores
nothing. State changes go through the lifecycle tables of `shoal.api.lifecycle` and leave an
event with their cause. `record_binds` persists a whole cycle's evictions and binds at
once: the control plane calls it *before* stopping or launching anything, so a crash never
loses a decision nor launches a task twice. Users and tokens are `shoal.store.accounts`' (a
base class of `Repository`), nodes' conditions `shoal.store.nodes`', and the stops of jobs —
a task's retry, a job's end or rerun, a gang's restart — `shoal.store.stops`'.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import (
    JSON,
    Connection,
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
from sqlalchemy.orm import Session, selectinload

from shoal.api import (
    JOB_LIFECYCLE,
    TASK_LIFECYCLE,
    Bind,
    Evict,
    Job,
    JobState,
    Node,
    PriorityClass,
    Reserve,
    Resize,
    TaskRef,
    TaskState,
    Transition,
    VirtualCluster,
)
from shoal.api.flavors import ResourceFlavor
from shoal.api.lifecycle import IllegalTransitionError
from shoal.api.objects import is_sub_cluster, job_of_virtual_cluster, renamed
from shoal.spec.imports import ImportFormat, Original
from shoal.store import convert
from shoal.store.accounts import TOKEN_CACHE_TTL, Accounts, User
from shoal.store.cache import ReadThroughCache
from shoal.store.engine import Store
from shoal.store.errors import (
    AlreadyExistsError,
    IdempotencyConflict,
    NotFoundError,
    StoreError,
)
from shoal.store.job_controls import JobControls
from shoal.store.job_names import JobNames, Submission, history_run, name_clash
from shoal.store.job_queries import CHUNK, TERMINAL_JOB_STATES, JobQueries
from shoal.store.models import (
    EventRow,
    JobOriginalRow,
    JobRow,
    NodeRow,
    PriorityClassRow,
    ResourceFlavorRow,
    TaskRow,
    VirtualClusterRow,
)
from shoal.store.nodes import NodeInventory
from shoal.store.stops import Stops
from shoal.store.task_batches import JOB_STATE, TASK_STATE, TaskBatches
from shoal.store.task_batches import TaskRecord as _TaskRecord
from shoal.store.usage import UsageRecords

SUBMITTED = "Submitted"
WAITING = "Waiting"
PARTIALLY_ADMITTED = "PartiallyAdmitted"
"""The scheduler admitted the job with fewer replicas of a group (Kueue's partial admission):
its stored size became the admitted one."""
"""Why the scheduler left the job waiting (its pending reason), recorded when it changes."""
TaskRecord = _TaskRecord
"""Made where binds are batched (`task_batches`); the control plane knows it from here."""
_INSERT_JOB = insert(JobRow).returning(JobRow.id)
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


@dataclass(frozen=True, slots=True)
class Waiting:
    """Why a job waited, as of `time`: one WAITING event to record."""

    job: str
    time: float
    cause: str


class Repository(Stops, JobControls, TaskBatches, JobQueries, JobNames, Accounts,
                 NodeInventory, UsageRecords):
    """Typed reads and writes over a migrated `Store`. `clock` stamps events and rows."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock
        self._catalog: ReadThroughCache[tuple[Any, ...]] = ReadThroughCache(clock)
        self._tokens: ReadThroughCache[User | None] = ReadThroughCache(clock, TOKEN_CACHE_TTL)

    # ---- jobs ----------------------------------------------------------------------------

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

    def get_job(self, name: str) -> Job | None:
        with self.store.reads.begin() as s:
            row = s.scalar(select(JobRow).where(JobRow.name == name)
                           .options(selectinload(JobRow.tasks)))
            return None if row is None else convert.job_from_row(row)

    def snapshot_jobs(self) -> tuple[Job, ...]:
        """Every job that is not finished, with its tasks, in submission order."""
        with self.store.reads.begin() as s:
            rows = s.scalars(select(JobRow).options(selectinload(JobRow.tasks))
                             .where(JobRow.state.not_in(TERMINAL_JOB_STATES))
                             .order_by(JobRow.submitted, JobRow.name))
            return tuple(convert.job_from_row(r) for r in rows)

    def task_records(self, jobs: Iterable[str]) -> dict[TaskRef, TaskRecord]:
        """The task records of the named jobs, process fields included."""
        names = sorted(set(jobs))
        if not names:
            return {}
        with self.store.reads.begin() as s:
            rows = s.execute(select(JobRow.name, TaskRow).join(TaskRow.job)
                             .where(JobRow.name.in_(names)))
            out: dict[TaskRef, TaskRecord] = {}
            for job, row in rows:
                ref = TaskRef(job, row.group_name, row.task_index)
                out[ref] = TaskRecord(ref, TaskState(row.state), row.node,
                                      tuple(int(g) for g in row.gpus), row.pid,
                                      row.pid_start_time, row.attempts, row.exit_code)
            return out

    def record_waiting(self, waits: Sequence[Waiting]) -> None:
        """Append a WAITING event per entry, all in one transaction; entries of jobs that no
        longer exist are skipped."""
        by_job: dict[str, list[Waiting]] = {}
        for wait in waits:
            by_job.setdefault(wait.job, []).append(wait)
        names = list(by_job)
        with self.store.sessions.begin() as s:
            for start in range(0, len(names), 500):  # well under SQLite's bound parameters
                chunk = names[start:start + 500]
                ids = s.execute(select(JobRow.name, JobRow.id).where(JobRow.name.in_(chunk)))
                rows = [{"job_id": job_id, "time": w.time, "kind": WAITING, "cause": w.cause}
                        for name, job_id in ids for w in by_job[name]]
                if rows:
                    s.connection().execute(_INSERT_EVENT, rows)

    # ---- transitions ---------------------------------------------------------------------

    def transition_job(self, name: str, target: JobState, cause: str) -> Transition[JobState]:
        with self.store.sessions.begin() as s:
            row = self._job_row(s, name)
            return self._move_job(s, row, target, cause)

    def transition_task(self, ref: TaskRef, target: TaskState, cause: str, *,
                        node: str | None = None, gpus: Sequence[int] | None = None,
                        pid: int | None = None, pid_start_time: float | None = None,
                        exit_code: int | None = None) -> Transition[TaskState]:
        """Move one task; the keyword fields, when given, are recorded with the move. Back in
        PENDING a task forgets its node, GPUs and process."""
        with self.store.sessions.begin() as s:
            row = self._task_row(s, ref)
            move = self._move_task(s, row, ref, target, cause)
            if node is not None:
                row.node = node
            if gpus is not None:
                row.gpus = list(gpus)
            if pid is not None:
                row.pid = pid
            if pid_start_time is not None:
                row.pid_start_time = pid_start_time
            if exit_code is not None:
                row.exit_code = exit_code
            return move

    def record_binds(self, binds: Sequence[Bind], cause: str,
                     evictions: Sequence[Evict] = (),
                     admissions: Sequence[Resize] = ()) -> dict[TaskRef, TaskRecord]:
        """Persist one cycle's evictions, partial admissions and binds together. An evicted
        task that has a process goes RELEASING (its node and pid kept: it is stopped, then
        PENDING, `evicted_task_stopped`); one that never started goes straight back to
        PENDING. A job left holding none of its tasks goes back to PENDING. A partially
        admitted job's group gets the admitted replicas and loses the task rows above them
        (never started: they never will). Bound tasks → BOUND on their node and GPUs, and
        each job whose gang minimum is now held → RUNNING. Any bad move stores none of
        them. Returns the bound tasks' records as stored, so that their launch needs no
        read.

        A cycle of binds alone (a burst's) is written as one batch of statements
        (`TaskBatches._bind_batch`); one that evicts or admits partially goes through the
        unit of work, moving its tasks one by one."""
        if not evictions and not admissions:
            with self.store.sessions.begin() as s:
                return self._bind_batch(s, binds, cause)
        return self._record_binds_one_by_one(binds, cause, evictions, admissions)

    def _record_binds_one_by_one(self, binds: Sequence[Bind], cause: str,
                                 evictions: Sequence[Evict] = (),
                                 admissions: Sequence[Resize] = ()
                                 ) -> dict[TaskRef, TaskRecord]:
        """`record_binds` through the unit of work: each task moved by `_move_task`."""
        with self.store.sessions.begin() as s:
            # Every job the cycle touched, read (and locked) at once: a burst binds a task
            # of hundreds of jobs, and two queries per job were most of this transaction.
            jobs = self._job_rows(s, {e.task.job for e in evictions}
                                  | {a.job for a in admissions} | {b.task.job for b in binds})
            touched: dict[str, JobRow] = {}

            def job_of(name: str) -> JobRow:
                if name not in jobs:
                    raise NotFoundError(f"no job {name!r}")
                touched[name] = jobs[name]
                return jobs[name]

            for evict in evictions:
                row = self._task_in(job_of(evict.task.job), evict.task)
                self._move_task(s, row, evict.task, TaskState.RELEASING,
                                f"evicted: {evict.reason}")
                if not row.pid:
                    self._move_task(s, row, evict.task, TaskState.PENDING,
                                    "stopped before it was launched")
            for admission in admissions:
                self._admit_partially(s, job_of(admission.job), admission)
            stored: dict[TaskRef, TaskRecord] = {}
            for bind in binds:
                row = self._task_in(job_of(bind.task.job), bind.task)
                self._move_task(s, row, bind.task, TaskState.BOUND, cause)
                row.node = bind.node
                row.gpus = list(bind.gpus)
                stored[bind.task] = TaskRecord(bind.task, TaskState.BOUND, bind.node,
                                              tuple(bind.gpus), row.pid, row.pid_start_time,
                                              row.attempts, row.exit_code)
            evicted = {e.task.job: e.reason for e in evictions}
            for job_row in touched.values():
                job = convert.job_from_row(job_row)
                bound = [t for t in job.tasks if t.state in (TaskState.BOUND, TaskState.RUNNING)]
                held = len(bound)
                if job.state is JobState.PENDING and job.gang_met(bound):
                    self._move_job(s, job_row, JobState.RUNNING,
                                   f"{held} of {job.replicas} tasks bound "
                                   f"(gang minimum {job.gang_minimum}): {cause}")
                elif job.state is JobState.RUNNING and held == 0 and job.name in evicted:
                    self._move_job(s, job_row, JobState.PENDING,
                                   f"evicted whole: {evicted[job.name]}")
        return stored

    def evicted_task_stopped(self, ref: TaskRef, how: str, exit_code: int | None) -> None:
        """An evicted task's process is gone: RELEASING → PENDING, to be placed again as a
        new attempt. However its process ended, this is no failure and costs no retry."""
        with self.store.sessions.begin() as s:
            row = self._task_row(s, ref)
            if exit_code is not None:
                row.exit_code = exit_code
            self._move_task(s, row, ref, TaskState.PENDING, f"stopped after eviction ({how})")

    def _admit_partially(self, s: Session, row: JobRow, admission: Resize) -> None:
        """Group `admission.group` of job `row` has `admission.replicas` replicas for good."""
        if not any(g["name"] == admission.group for g in row.spec):
            raise NotFoundError(f"job {row.name!r} has no task group {admission.group!r}")
        dropped = [t for t in row.tasks if t.group_name == admission.group
                   and t.task_index >= admission.replicas]
        for task in dropped:
            if TaskState(task.state) is not TaskState.PENDING:
                raise IllegalTransitionError(
                    f"task {row.name}/{task.group_name}/{task.task_index} is "
                    f"{task.state}: a partial admission drops only tasks that never started")
            row.tasks.remove(task)
        # A new list: the JSON column is not tracked for changes in place.
        row.spec = [dict(g, replicas=admission.replicas) if g["name"] == admission.group
                    else g for g in row.spec]
        now = self.clock()
        row.updated = now
        s.add(EventRow(job_id=row.id, time=now, kind=PARTIALLY_ADMITTED,
                       cause=admission.reason))

    @staticmethod
    def _job_rows(s: Session, names: Iterable[str]) -> dict[str, JobRow]:
        """The rows of these jobs (those that exist) with their tasks, locked, in name
        order as `_job_row`'s one-job writers lock theirs."""
        ordered = sorted(set(names))
        out: dict[str, JobRow] = {}
        for first in range(0, len(ordered), 500):  # well under SQLite's bound parameters
            rows = s.scalars(select(JobRow).where(JobRow.name.in_(ordered[first:first + 500]))
                             .options(selectinload(JobRow.tasks)).order_by(JobRow.name)
                             .with_for_update())
            out.update((row.name, row) for row in rows)
        return out

    def _job_row(self, s: Session, name: str, *, lock: bool = False) -> JobRow:
        query = select(JobRow).where(JobRow.name == name).options(selectinload(JobRow.tasks))
        if lock:
            query = query.with_for_update()
        row = s.scalar(query)
        if row is None:
            raise NotFoundError(f"no job {name!r}")
        return row

    def _task_row(self, s: Session, ref: TaskRef) -> TaskRow:
        return self._task_in(self._job_row(s, ref.job, lock=True), ref)

    @staticmethod
    def _task_in(job: JobRow, ref: TaskRef) -> TaskRow:
        for task in job.tasks:
            if task.group_name == ref.group and task.task_index == ref.index:
                return task
        raise NotFoundError(f"no task {ref}")

    def _move_job(self, s: Session, row: JobRow, target: JobState, cause: str
                  ) -> Transition[JobState]:
        move = JOB_LIFECYCLE.move(JobState(row.state), target, cause)
        now = self.clock()
        row.state = target.value
        row.updated = now
        row.ended = now if target.terminal else None
        s.add(EventRow(job_id=row.id, time=now, kind=JOB_STATE, source_state=move.source.value,
                       target_state=target.value, cause=cause))
        return move

    def _move_task(self, s: Session, row: TaskRow, ref: TaskRef, target: TaskState,
                   cause: str) -> Transition[TaskState]:
        move = TASK_LIFECYCLE.move(TaskState(row.state), target, cause)
        now = self.clock()
        row.state = target.value
        if target is TaskState.BOUND:
            row.started = now
            row.attempts += 1
            row.exit_code = None
        elif target is TaskState.PENDING:
            row.node, row.gpus, row.started = None, [], None
            row.pid = row.pid_start_time = None
        row.job.updated = now
        s.add(EventRow(job_id=row.job_id, task=str(ref), time=now, kind=TASK_STATE,
                       source_state=move.source.value, target_state=target.value, cause=cause))
        return move

    # ---- nodes, virtual clusters, priority classes ---------------------------------------

    def put_node(self, node: Node) -> None:
        with self.store.sessions.begin() as s:
            s.add(convert.node_to_row(node, s.get(NodeRow, node.name)))
        self._catalog.invalidate()

    def list_nodes(self) -> list[Node]:
        def load() -> tuple[Node, ...]:
            with self.store.reads.begin() as s:
                return tuple(convert.node_from_row(r)
                             for r in s.scalars(select(NodeRow).order_by(NodeRow.name)))
        return list(self._catalog.get("nodes", load))

    def put_virtual_cluster(self, vc: VirtualCluster) -> None:
        """Create or replace a virtual cluster. One created is stamped with the time (its
        place in the reservation queue); one replaced keeps its carving unless its
        fixed-size nodes changed."""
        with self.store.sessions.begin() as s:
            row = s.get(VirtualClusterRow, vc.name)
            if row is None:
                row = VirtualClusterRow(name=vc.name, created=self.clock())
            s.add(convert.vc_to_row(vc, row))
        self._catalog.invalidate()

    def record_reservations(self, changes: Iterable[Reserve]) -> None:
        """Store where the scheduler carved virtual clusters' fixed-size nodes (or that it
        gave them back), so that a restart restores them there."""
        with self.store.sessions.begin() as s:
            for change in changes:
                carving = convert.reservation_to_json(change.placements)
                job = job_of_virtual_cluster(change.virtual_cluster)
                if job is None or is_sub_cluster(change.virtual_cluster):
                    row = s.get(VirtualClusterRow, change.virtual_cluster)
                    if row is not None:
                        row.reservation = carving
                    continue
                found = s.scalars(select(JobRow).where(JobRow.name == job)).first()
                if found is not None and found.virtual_cluster is not None:
                    # A new dict: the JSON column notices assignment, not mutation.
                    found.virtual_cluster = {**found.virtual_cluster, "reservation": carving}
        self._catalog.invalidate()

    def add_sub_clusters(self, job: str, sub_clusters: Sequence[VirtualCluster]) -> Job:
        """Add sub-clusters to a live job's own virtual cluster, all or none: refused when
        the job has ended, has no virtual cluster of its own, or has a sub-cluster of one of
        these names already. Returns the job as stored now."""
        with self.store.sessions.begin() as s:
            row = s.scalars(select(JobRow).where(JobRow.name == job)
                            .with_for_update()).first()
            if row is None:
                raise NotFoundError(f"no job {job!r}")
            if row.state in TERMINAL_JOB_STATES:
                raise StoreError(f"job {job!r} has ended ({row.state}): its virtual cluster "
                                 "is gone")
            if row.virtual_cluster is None:
                raise StoreError(f"job {job!r} has no virtual cluster of its own "
                                 "(spec.virtualCluster)")
            existing = convert.sub_clusters_from_json(row.virtual_cluster)
            taken = {vc.name for vc in existing}
            for vc in sub_clusters:
                if vc.name in taken:
                    raise AlreadyExistsError(f"virtual cluster {vc.name!r} exists already")
                taken.add(vc.name)
            row.virtual_cluster = {**row.virtual_cluster, "subClusters": [
                convert.sub_cluster_to_json(vc) for vc in (*existing, *sub_clusters)]}
            row.updated = self.clock()
            return convert.job_from_row(row)

    def job_virtual_clusters(self, job: str | None = None) -> list[VirtualCluster]:
        """The virtual clusters live jobs carry — their own and the sub-clusters their tasks
        created inside it — of every live job, or of `job` only. Whether each exists in the
        scheduler now is the scheduler's to say (a job's own is created when its queue can
        guarantee it)."""
        with self.store.reads.begin() as s:
            query = select(JobRow.name, JobRow.queue, JobRow.virtual_cluster).where(
                JobRow.state.not_in(TERMINAL_JOB_STATES), JobRow.virtual_cluster.is_not(None))
            if job is not None:
                query = query.where(JobRow.name == job)
            rows = s.execute(query.order_by(JobRow.submitted, JobRow.name)).all()
        out: list[VirtualCluster] = []
        for name, queue, data in rows:
            own = convert.job_vc_from_json(name, queue, data)
            if own is not None:
                out.append(own)
            out.extend(convert.sub_clusters_from_json(data))
        return out

    def list_virtual_clusters(self) -> list[VirtualCluster]:
        """Every virtual cluster, in creation order (the reservation queue's)."""
        def load() -> tuple[VirtualCluster, ...]:
            with self.store.reads.begin() as s:
                return tuple(convert.vc_from_row(r) for r in s.scalars(
                    select(VirtualClusterRow).order_by(VirtualClusterRow.created,
                                                       VirtualClusterRow.name)))
        return list(self._catalog.get("virtual-clusters", load))

    def put_priority_class(self, pc: PriorityClass) -> None:
        with self.store.sessions.begin() as s:
            s.add(convert.priority_class_to_row(pc, s.get(PriorityClassRow, pc.name)))
        self._catalog.invalidate()

    def put_resource_flavor(self, flavor: ResourceFlavor) -> None:
        with self.store.sessions.begin() as s:
            s.add(convert.resource_flavor_to_row(flavor, s.get(ResourceFlavorRow, flavor.name)))
        self._catalog.invalidate()

    def list_resource_flavors(self) -> list[ResourceFlavor]:
        def load() -> tuple[ResourceFlavor, ...]:
            with self.store.reads.begin() as s:
                return tuple(convert.resource_flavor_from_row(r) for r in s.scalars(
                    select(ResourceFlavorRow).order_by(ResourceFlavorRow.name)))
        return list(self._catalog.get("resource-flavors", load))

    def list_priority_classes(self) -> list[PriorityClass]:
        def load() -> tuple[PriorityClass, ...]:
            with self.store.reads.begin() as s:
                return tuple(convert.priority_class_from_row(r) for r in s.scalars(
                    select(PriorityClassRow).order_by(PriorityClassRow.value,
                                                      PriorityClassRow.name)))
        return list(self._catalog.get("priority-classes", load))

