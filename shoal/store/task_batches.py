"""Batched task writes: a cycle's binds, the starts of its launches, and the successes one
poll of the executor saw, each recorded in one transaction (a base class of `Repository`).

A burst of launches used to cost one ORM unit of work per task state change — half of the
server's time. Here the rows are read once, the moves checked against the task lifecycle
in Python, and written with SQLAlchemy Core executemany statements (tasks, jobs' `updated`,
events): one transaction, a few statements, whatever the batch's size.

Binds are all or nothing (`Repository.record_binds`' promise): a bind the lifecycle refuses,
or of a job or task the store does not hold, raises and stores none of the batch — the
same refusals, in the same order, as the unit of work that evictions and partial
admissions still go through (`Repository._record_binds_one_by_one`).

Starts and exits never let one task poison the others: a task the store does not hold in
the state the move needs (a stop moved it meanwhile) is left out and returned, and the rest
is recorded. The caller records what was left out on its own (`Repository.transition_task`),
and falls back to one transaction per task should a whole batch raise.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from sqlalchemy import (
    JSON,
    BindParameter,
    Connection,
    Row,
    Text,
    TypeDecorator,
    bindparam,
    delete,
    insert,
    select,
    type_coerce,
    update,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.orm import Session

from shoal.api import (
    JOB_LIFECYCLE,
    TASK_LIFECYCLE,
    Bind,
    Job,
    JobState,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskRef,
    TaskState,
)
from shoal.api.lifecycle import IllegalTransitionError
from shoal.store import convert
from shoal.store.accounting import EndedAttempt, attempt_end, outcome_of, record_ended
from shoal.store.accounts import User
from shoal.store.cache import ReadThroughCache
from shoal.store.driver_writes import execute_many
from shoal.store.engine import Store
from shoal.store.errors import NotFoundError
from shoal.store.models import EventRow, JobRow, TaskRow, TokenRow

JOB_STATE = "JobStateChanged"
TASK_STATE = "TaskStateChanged"
#: Jobs per `IN (…)` list: well under SQLite's bound parameters.
CHUNK = 500

_INSERT_EVENTS = insert(EventRow)
_START_TASKS = (update(TaskRow).where(TaskRow.id == bindparam("task_id"))
                .values(state=TaskState.RUNNING.value, pid=bindparam("new_pid"),
                        pid_start_time=bindparam("new_start")))
_END_TASKS = (update(TaskRow).where(TaskRow.id == bindparam("task_id"))
              .values(state=bindparam("new_state"), exit_code=bindparam("new_code")))
_BIND_TASKS = (update(TaskRow).where(TaskRow.id == bindparam("task_id"))
               .values(state=TaskState.BOUND.value, node=bindparam("new_node"),
                       gpus=bindparam("new_gpus", type_=JSON),
                       started=bindparam("now"), attempts=bindparam("new_attempts"),
                       exit_code=None))
_RUN_JOBS = update(JobRow).where(JobRow.id == bindparam("job_id")).values(
    state=JobState.RUNNING.value, updated=bindparam("now"), ended=None)
_TOUCH_JOBS = update(JobRow).where(JobRow.id == bindparam("job_id")).values(
    updated=bindparam("now"))
# The reads, built once with their `IN` lists as parameters: building a statement (its
# columns coerced, its cache key) cost more than running it, several times per batch.
_NAMES: BindParameter[list[str]] = bindparam("names", expanding=True)
_IDS: BindParameter[list[int]] = bindparam("ids", expanding=True)
#: Jobs by name, their rows locked in name order, as the one-job writers lock theirs.
_LOCK_JOBS = (select(JobRow.id, JobRow.name, JobRow.state).where(JobRow.name.in_(_NAMES))
              .order_by(JobRow.name).with_for_update())
_BIND_TASK_ROWS = (select(JobRow.name, TaskRow.id, TaskRow.job_id, TaskRow.group_name,
                          TaskRow.task_index, TaskRow.state, TaskRow.attempts, TaskRow.pid,
                          TaskRow.pid_start_time)
                   .join(TaskRow, TaskRow.job_id == JobRow.id).where(JobRow.name.in_(_NAMES)))
_TASK_ROWS = select(TaskRow.id, TaskRow.job_id, TaskRow.group_name, TaskRow.task_index,
                    TaskRow.state, TaskRow.attempts).where(TaskRow.job_id.in_(_IDS))
_GANG_ROWS = select(JobRow.id, sql_cast(JobRow.spec, Text), JobRow.scheduler_name,
                    JobRow.min_available, JobRow.elastic).where(JobRow.id.in_(_IDS))
_REVOKE_TOKENS = delete(TokenRow).where(TokenRow.job.in_(_NAMES))
_END_JOBS = update(JobRow).where(JobRow.id == bindparam("job_id")).values(
    state=bindparam("new_state"), updated=bindparam("now"), ended=bindparam("now"),
    stopping=None, stop_cause=None)


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """One task as the store has it, with the process fields a restart needs to re-adopt it
    (pid, start time, attempt count, exit code), which `Task` values do not carry."""

    ref: TaskRef
    state: TaskState
    node: str | None
    gpus: tuple[int, ...]
    pid: int | None
    pid_start_time: float | None
    attempts: int
    exit_code: int | None


@dataclass(frozen=True, slots=True)
class TaskStart:
    """A task's process started for its current attempt: BOUND → RUNNING."""

    ref: TaskRef
    attempt: int
    """The bind count the launch was for: a task bound again since is not this start's."""
    pid: int
    pid_start_time: float
    cause: str


@dataclass(frozen=True, slots=True)
class TaskExit:
    """A task's process ended with success: → SUCCEEDED with its exit code."""

    ref: TaskRef
    cause: str
    exit_code: int | None
    ended_at: float | None = None
    """When the engine saw it end (`TaskStatus.ended_at`): what its usage is charged
    until (`shoal.store.accounting.attempt_end`)."""


@dataclass(frozen=True, slots=True)
class JobEnd:
    """What a job's task states decide for it: a terminal state, and why."""

    state: JobState
    cause: str


@dataclass(frozen=True, slots=True)
class RecordedExits:
    """What `record_exits` did."""

    refused: tuple[TaskRef, ...]
    """Exits not recorded: the store does not hold these tasks where the move starts."""
    ended: tuple[Job, ...]
    """Jobs ended in the same transaction, as stored now (every task of theirs ended), their
    tasks' tokens revoked in it (`Repository.revoke_tokens_of`)."""


@dataclass(frozen=True, slots=True)
class _Row:
    task_id: int
    job_id: int
    state: TaskState
    attempts: int


@dataclass(frozen=True, slots=True)
class _BindRow:
    task_id: int
    job_id: int
    state: TaskState
    attempts: int
    pid: int | None
    pid_start_time: float | None


class TaskBatches:
    """`Repository` supplies the store, the clock and the cache of tokens."""

    store: Store
    clock: Callable[[], float]
    _tokens: ReadThroughCache[User | None]

    def _bind_batch(self, s: Session, binds: Sequence[Bind], cause: str
                    ) -> dict[TaskRef, TaskRecord]:
        """Bind these tasks in `s`'s transaction: each PENDING → BOUND on its node and GPUs
        (a new attempt, bound now, no exit code yet), an event each, and each job whose gang
        minimum is now held PENDING → RUNNING. Raises, writing nothing, at the first bind
        the store cannot take. Returns the bound tasks' records as stored."""
        now = self.clock()
        jobs, rows = self._bind_rows(s, {bind.task.job for bind in binds})
        states = {ref: row.state for ref, row in rows.items()}
        touched: dict[str, None] = {}  # the jobs in the order their first bind came
        tasks: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        stored: dict[TaskRef, TaskRecord] = {}
        for bind in binds:
            ref = bind.task
            if ref.job not in jobs:
                raise NotFoundError(f"no job {ref.job!r}")
            row = rows.get(ref)
            if row is None:
                raise NotFoundError(f"no task {ref}")
            # Against the state this batch left it in: the same task twice is refused.
            move = TASK_LIFECYCLE.move(states[ref], TaskState.BOUND, cause)
            states[ref] = TaskState.BOUND
            touched[ref.job] = None
            tasks.append({"task_id": row.task_id, "new_node": bind.node,
                          "new_gpus": list(bind.gpus), "now": now,
                          "new_attempts": row.attempts + 1})
            events.append(_event(row.job_id, ref, now, move.source, TaskState.BOUND, cause))
            stored[ref] = TaskRecord(ref, TaskState.BOUND, bind.node, tuple(bind.gpus),
                                     row.pid, row.pid_start_time, row.attempts + 1, None)
        if not tasks:
            return stored
        pending = {jobs[name][0]: name for name in touched
                   if jobs[name][1] is JobState.PENDING}
        specs = self._gangs(s, pending)
        held: dict[str, list[Task]] = {name: [] for name in pending.values()}
        for ref, state in states.items():
            if ref.job in held and state in (TaskState.BOUND, TaskState.RUNNING):
                held[ref.job].append(Task(ref.job, ref.group, ref.index, state))
        running: list[dict[str, Any]] = []
        touches: list[dict[str, Any]] = []
        for name in touched:
            job_id, job_state = jobs[name]
            job = specs.get(job_id)
            if job is None or not job.gang_met(held[name]):
                touches.append({"job_id": job_id, "now": now})
                continue
            why = (f"{len(held[name])} of {job.replicas} tasks bound "
                   f"(gang minimum {job.gang_minimum}): {cause}")
            move_job = JOB_LIFECYCLE.move(job_state, JobState.RUNNING, why)
            running.append({"job_id": job_id, "now": now})
            events.append({"job_id": job_id, "task": None, "time": now, "kind": JOB_STATE,
                           "source_state": move_job.source.value,
                           "target_state": JobState.RUNNING.value, "cause": why})
        connection, changes = s.connection(), self.store.job_changes
        execute_many(connection, _BIND_TASKS, tasks, changes)
        execute_many(connection, _RUN_JOBS, running, changes)
        execute_many(connection, _TOUCH_JOBS, touches, changes)
        execute_many(connection, _INSERT_EVENTS, events, changes)
        return stored

    @staticmethod
    def _bind_rows(s: Session, names: set[str]
                   ) -> tuple[dict[str, tuple[int, JobState]], dict[TaskRef, _BindRow]]:
        """These jobs' ids and states, and every task row of theirs, locking the jobs' rows
        in name order as the one-job writers lock theirs."""
        ordered = sorted(names)
        jobs: dict[str, tuple[int, JobState]] = {}
        out: dict[TaskRef, _BindRow] = {}
        for first in range(0, len(ordered), CHUNK):
            chunk = ordered[first:first + CHUNK]
            connection = s.connection()
            for job_id, name, state in connection.execute(_LOCK_JOBS, {"names": chunk}):
                jobs[name] = (job_id, JobState(state))
            found = connection.execute(_BIND_TASK_ROWS, {"names": chunk})
            for name, task_id, job_id, group, index, state, attempts, pid, start in found:
                out[TaskRef(name, group, index)] = _BindRow(task_id, job_id, TaskState(state),
                                                            attempts, pid, start)
        return jobs, out

    @staticmethod
    def _gangs(s: Session, names: dict[int, str]) -> dict[int, Job]:
        """These jobs as far as their gang goes (groups, scheduler, `minAvailable`,
        elasticity: what `Job.gang_met` reads), the rest of them left out: read as columns,
        not rows, since loading whole rows was half of a burst's batch."""
        ids = sorted(names)
        out: dict[int, Job] = {}
        for first in range(0, len(ids), CHUNK):
            found = s.connection().execute(_GANG_ROWS, {"ids": ids[first:first + CHUNK]})
            for job_id, spec, scheduler, min_available, elastic in found:
                out[job_id] = Job(names[job_id], _groups(spec),
                                  scheduler_name=SchedulerName(scheduler),
                                  min_available=min_available,
                                  elastic=convert.elastic_from_json(elastic))
        return out

    def record_starts(self, starts: Sequence[TaskStart]) -> tuple[TaskRef, ...]:
        """Record these starts in one transaction: each task RUNNING with its pid and start
        time, an event each. Returns the starts left out — tasks the store does not hold
        BOUND for that attempt (not recorded; nothing else of the batch is affected)."""
        if not starts:
            return ()
        now = self.clock()
        with self.store.sessions.begin() as s:
            rows = self._rows(s, (start.ref for start in starts))
            refused: list[TaskRef] = []
            tasks: list[dict[str, Any]] = []
            events: list[dict[str, Any]] = []
            for start in starts:
                row = rows.get(start.ref)
                if row is None or row.state is not TaskState.BOUND \
                        or row.attempts != start.attempt:
                    refused.append(start.ref)
                    continue
                TASK_LIFECYCLE.move(row.state, TaskState.RUNNING, start.cause)
                tasks.append({"task_id": row.task_id, "new_pid": start.pid,
                              "new_start": start.pid_start_time})
                events.append(_event(row.job_id, start.ref, now, row.state,
                                     TaskState.RUNNING, start.cause))
            connection, changes = s.connection(), self.store.job_changes
            if tasks:
                execute_many(connection, _START_TASKS, tasks, changes)
                execute_many(connection, _TOUCH_JOBS, _touched(rows, tasks, now), changes)
                execute_many(connection, _INSERT_EVENTS, events, changes)
            return tuple(refused)

    def record_exits(self, exits: Sequence[TaskExit],
                     decide: Callable[[Job], JobEnd | None]) -> RecordedExits:
        """Record these successes in one transaction: each task SUCCEEDED with its exit
        code, an event each. Then each job they belong to that is neither ended nor being
        stopped is given, as stored now, to `decide`; a job it ends whose every task has
        ended (nothing to stop, no pending task to cancel) ends in the same transaction. A
        job it ends that still has tasks to stop or cancel is left to the caller
        (`Repository.stop_job`). The tokens of the jobs it ends are revoked in the same
        transaction: their end and their tokens' are one write, not two.

        The jobs and their tasks are read once, before anything is written: the moves,
        the attempts they end (`shoal.store.accounting`) and the jobs' verdicts are all
        worked out from those rows, the tasks moved in them as the batch moves them."""
        if not exits:
            return RecordedExits((), ())
        now = self.clock()
        with self.store.sessions.begin() as s:
            connection = s.connection()
            jobs, rows = _exit_rows(connection, {e.ref.job for e in exits})
            refused: list[TaskRef] = []
            moved: dict[int, TaskExit] = {}  # task id → its exit
            events: list[dict[str, Any]] = []
            for end in exits:
                row = rows.get(end.ref)
                try:
                    if row is None:
                        raise IllegalTransitionError(f"no task {end.ref}")
                    source = TaskState(row.state)
                    TASK_LIFECYCLE.move(source, TaskState.SUCCEEDED, end.cause)
                except IllegalTransitionError:
                    refused.append(end.ref)
                    continue
                moved[row.id] = end
                events.append(_event(row.job_id, end.ref, now, source, TaskState.SUCCEEDED,
                                     end.cause))
            if not moved:
                return RecordedExits(tuple(refused), ())
            record_ended(s, _ended_attempts(jobs, rows, moved, now))
            changes = self.store.job_changes
            execute_many(connection, _END_TASKS, [
                {"task_id": task_id, "new_state": TaskState.SUCCEEDED.value,
                 "new_code": end.exit_code} for task_id, end in moved.items()], changes)
            touched = sorted({rows[end.ref].job_id for end in moved.values()})
            ended = self._end_jobs(s, [jobs[job_id] for job_id in touched], moved, decide,
                                   now, events)
            execute_many(connection, _INSERT_EVENTS, events, changes)
            names = sorted(job.name for job in ended)
            for first in range(0, len(names), CHUNK):
                connection.execute(_REVOKE_TOKENS, {"names": names[first:first + CHUNK]})
        if ended:
            self._tokens.invalidate()  # committed: a token cached as valid is not any more
        return RecordedExits(tuple(refused), ended)

    def _end_jobs(self, s: Session, held: Sequence[_HeldJob], moved: Mapping[int, TaskExit],
                  decide: Callable[[Job], JobEnd | None], now: float,
                  events: list[dict[str, Any]]) -> tuple[Job, ...]:
        """End the jobs `decide` ends whose tasks have all ended (`moved`: the tasks this
        batch moved, SUCCEEDED with their exit code); touch the others."""
        ended: list[Job] = []
        ends: list[dict[str, Any]] = []
        touched: list[dict[str, Any]] = []
        for one in held:
            row = one.row
            job = convert.job_from_row(cast(JobRow, row), groups=_groups(row.spec_text),
                                       task_values=tuple(_task_after(row.name, task, moved)
                                                         for task in one.tasks))
            end = None if row.stopping is not None or job.state.terminal \
                else decide(job)
            if end is None or not end.state.terminal \
                    or not all(t.state.terminal for t in job.tasks):
                touched.append({"job_id": row.id, "now": now})
                continue
            move = JOB_LIFECYCLE.move(job.state, end.state, end.cause)
            ends.append({"job_id": row.id, "new_state": end.state.value, "now": now})
            events.append({"job_id": row.id, "task": None, "time": now, "kind": JOB_STATE,
                           "source_state": move.source.value,
                           "target_state": end.state.value, "cause": end.cause})
            ended.append(replace(job, state=end.state))
        connection, changes = s.connection(), self.store.job_changes
        execute_many(connection, _END_JOBS, ends, changes)
        execute_many(connection, _TOUCH_JOBS, touched, changes)
        return tuple(ended)

    @staticmethod
    def _rows(s: Session, refs: Iterable[TaskRef]) -> dict[TaskRef, _Row]:
        """The task rows of `refs`' jobs (every task of them), locking the jobs' rows."""
        names = sorted({ref.job for ref in refs})
        out: dict[TaskRef, _Row] = {}
        connection = s.connection()  # Core rows: an ORM result's set-up cost more than the rows
        for first in range(0, len(names), CHUNK):
            # Lock the jobs first, in name order, as the one-job writers lock theirs.
            locked = connection.execute(_LOCK_JOBS, {"names": names[first:first + CHUNK]})
            ids: dict[int, str] = {job_id: name for job_id, name, _ in locked}
            found = connection.execute(_TASK_ROWS, {"ids": list(ids)})
            for task_id, job_id, group, index, state, attempts in found:
                out[TaskRef(ids[job_id], group, index)] = _Row(task_id, job_id,
                                                               TaskState(state), attempts)
        return out


@dataclass(frozen=True, slots=True)
class _HeldJob:
    """A job row as an exit batch reads it (every column, its spec as text) and its task
    rows in id order."""

    row: Row[Any]
    tasks: list[Row[Any]]


class _JsonText(TypeDecorator[Any]):
    """A JSON column read as its text and parsed here, its commonest values without the
    parser: an exit batch reads eight JSON columns per job (`null` in most, `[]` for a
    task's GPUs), and parsing each through SQLAlchemy's JSON type was a tenth of the batch.
    The same values as the JSON type gives (`json.loads` of the text)."""

    impl = Text
    cache_ok = True

    def process_result_value(self, value: Any, dialect: Any) -> Any:
        if value is None or value == "null":
            return None
        if value == "[]":
            return []
        if value == "{}":
            return {}
        return json.loads(value)


def _json_as_text(column: Any) -> Any:
    """`column`, a JSON one read through `_JsonText` under its own name; others as they are."""
    if not isinstance(column.type, JSON):
        return column
    return type_coerce(sql_cast(column, Text), _JsonText()).label(column.name)


_JOBS, _TASKS = JobRow.__table__, TaskRow.__table__
#: A job's columns, its spec as text: a burst's jobs share one spec, parsed once (`_groups`).
_JOB_COLUMNS = [_json_as_text(c) for c in _JOBS.c if c.name != "spec"] \
    + [sql_cast(_JOBS.c.spec, Text).label("spec_text")]
_EXIT_JOBS = (select(*_JOB_COLUMNS).where(_JOBS.c.name.in_(_NAMES)).order_by(_JOBS.c.name)
              .with_for_update())
_EXIT_TASKS = select(*(_json_as_text(c) for c in _TASKS.c)).where(
    _TASKS.c.job_id.in_(_IDS)).order_by(_TASKS.c.id)


def _exit_rows(connection: Connection, names: set[str]
               ) -> tuple[dict[int, _HeldJob], dict[TaskRef, Row[Any]]]:
    """These jobs (by id) with their tasks, and each task row by its ref; the jobs' rows
    locked in name order, as the one-job writers lock theirs. Core rows, not ORM rows:
    loading rows was most of a burst's exit batch. A Core row names its columns as the
    mapped class does, so `convert` reads it as one."""
    ordered = sorted(names)
    jobs: dict[int, _HeldJob] = {}
    refs: dict[TaskRef, Row[Any]] = {}
    for first in range(0, len(ordered), CHUNK):
        chunk: dict[int, _HeldJob] = {}
        for row in connection.execute(_EXIT_JOBS, {"names": ordered[first:first + CHUNK]}):
            chunk[row.id] = _HeldJob(row, [])
        for task in connection.execute(_EXIT_TASKS, {"ids": list(chunk)}):
            held = chunk[task.job_id]
            held.tasks.append(task)
            refs[TaskRef(held.row.name, task.group_name, task.task_index)] = task
        jobs.update(chunk)
    return jobs, refs


def _ended_attempts(jobs: Mapping[int, _HeldJob], rows: Mapping[TaskRef, Row[Any]],
                    moved: Mapping[int, TaskExit], now: float) -> list[EndedAttempt]:
    """The attempts that end as the `moved` tasks go SUCCEEDED (`shoal.store.accounting`),
    in task id order, from the rows read before the move."""
    out: list[EndedAttempt] = []
    for task_id in sorted(moved):
        end = moved[task_id]
        task = rows[end.ref]
        job = jobs[task.job_id].row
        outcome = outcome_of(TaskState(task.state), TaskState.SUCCEEDED, job.stopping)
        if outcome is None:
            continue
        start = now if task.started is None else task.started
        group = next((g for g in _groups(job.spec_text) if g.name == task.group_name), None)
        out.append(EndedAttempt(
            task.job_id, end.ref.job, f"{task.group_name}/{task.task_index}", task.attempts,
            job.queue, job.user or "", task.node or "", start,
            attempt_end(start, now, end.ended_at),
            Resources() if group is None else group.resources, outcome))
    return out


def _task_after(job: str, row: Row[Any], moved: Mapping[int, TaskExit]) -> Task:
    """A task as the batch leaves it: SUCCEEDED with its exit code where it moved it."""
    end = moved.get(row.id)
    if end is None:
        return convert.task_from_row(job, cast(TaskRow, row))
    return convert.task_from_row(job, cast(TaskRow, row), ended=TaskState.SUCCEEDED,
                                 exit_code=end.exit_code)


def _event(job_id: int, ref: TaskRef, now: float, source: TaskState, target: TaskState,
           cause: str) -> dict[str, Any]:
    return {"job_id": job_id, "task": str(ref), "time": now, "kind": TASK_STATE,
            "source_state": source.value, "target_state": target.value, "cause": cause}


def _touched(rows: dict[TaskRef, _Row], tasks: list[dict[str, Any]], now: float
             ) -> list[dict[str, Any]]:
    """One `updated` stamp per job of the moved tasks."""
    moved = {task["task_id"] for task in tasks}
    jobs = sorted({row.job_id for row in rows.values() if row.task_id in moved})
    return [{"job_id": job_id, "now": now} for job_id in jobs]


@functools.lru_cache(maxsize=256)
def _groups(spec: str) -> tuple[TaskGroup, ...]:
    """A job's task groups from its stored spec's text: a burst's jobs mostly share one, and
    reading it afresh for each bound job was most of `_gangs`. The groups are frozen and
    only read (for `Job.gang_met`), so one copy serves them all."""
    return tuple(convert.group_from_dict(g) for g in json.loads(spec))
