"""Batched task writes: the starts of a cycle's launches, and the successes one poll of the
executor saw, each recorded in one transaction (a base class of `Repository`).

A burst of launches used to cost one ORM unit of work per task state change — half of the
server's time. Here the rows are read once, the moves checked against the task lifecycle
in Python, and written with SQLAlchemy Core executemany statements (tasks, jobs' `updated`,
events): one transaction, a few statements, whatever the batch's size.

A batch never lets one task poison the others: a task the store does not hold in the state
the move needs (a stop moved it meanwhile) is left out and returned, and the rest is
recorded. The caller records what was left out on its own (`Repository.transition_task`),
and falls back to one transaction per task should a whole batch raise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.orm import Session, selectinload

from shoal.api import JOB_LIFECYCLE, TASK_LIFECYCLE, Job, JobState, TaskRef, TaskState
from shoal.api.lifecycle import IllegalTransitionError
from shoal.store import convert
from shoal.store.engine import Store
from shoal.store.models import EventRow, JobRow, TaskRow

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
_TOUCH_JOBS = update(JobRow).where(JobRow.id == bindparam("job_id")).values(
    updated=bindparam("now"))
_END_JOBS = update(JobRow).where(JobRow.id == bindparam("job_id")).values(
    state=bindparam("new_state"), updated=bindparam("now"), ended=bindparam("now"),
    stopping=None, stop_cause=None)


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
    """Jobs ended in the same transaction, as stored now (every task of theirs ended)."""


@dataclass(frozen=True, slots=True)
class _Row:
    task_id: int
    job_id: int
    state: TaskState
    attempts: int


class TaskBatches:
    """`Repository` supplies the store and the clock."""

    store: Store
    clock: Callable[[], float]

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
            connection = s.connection()
            if tasks:
                connection.execute(_START_TASKS, tasks)
                connection.execute(_TOUCH_JOBS, _touched(rows, tasks, now))
                connection.execute(_INSERT_EVENTS, events)
            return tuple(refused)

    def record_exits(self, exits: Sequence[TaskExit],
                     decide: Callable[[Job], JobEnd | None]) -> RecordedExits:
        """Record these successes in one transaction: each task SUCCEEDED with its exit
        code, an event each. Then each job they belong to that is neither ended nor being
        stopped is given, as stored now, to `decide`; a job it ends whose every task has
        ended (nothing to stop, no pending task to cancel) ends in the same transaction. A
        job it ends that still has tasks to stop or cancel is left to the caller
        (`Repository.stop_job`)."""
        if not exits:
            return RecordedExits((), ())
        now = self.clock()
        with self.store.sessions.begin() as s:
            rows = self._rows(s, (e.ref for e in exits))
            refused: list[TaskRef] = []
            tasks: list[dict[str, Any]] = []
            events: list[dict[str, Any]] = []
            for end in exits:
                row = rows.get(end.ref)
                try:
                    if row is None:
                        raise IllegalTransitionError(f"no task {end.ref}")
                    TASK_LIFECYCLE.move(row.state, TaskState.SUCCEEDED, end.cause)
                except IllegalTransitionError:
                    refused.append(end.ref)
                    continue
                tasks.append({"task_id": row.task_id, "new_state": TaskState.SUCCEEDED.value,
                              "new_code": end.exit_code})
                events.append(_event(row.job_id, end.ref, now, row.state,
                                     TaskState.SUCCEEDED, end.cause))
            connection = s.connection()
            if not tasks:
                return RecordedExits(tuple(refused), ())
            connection.execute(_END_TASKS, tasks)
            touched = {rows[e.ref].job_id for e in exits if e.ref not in refused}
            ended = self._end_jobs(s, touched, decide, now, events)
            connection.execute(_INSERT_EVENTS, events)
            return RecordedExits(tuple(refused), ended)

    def _end_jobs(self, s: Session, job_ids: set[int], decide: Callable[[Job], JobEnd | None],
                  now: float, events: list[dict[str, Any]]) -> tuple[Job, ...]:
        """End the jobs `decide` ends whose tasks have all ended; touch the others."""
        ended: list[Job] = []
        ends: list[dict[str, Any]] = []
        touched: list[dict[str, Any]] = []
        ids = sorted(job_ids)
        for first in range(0, len(ids), CHUNK):
            found = s.scalars(select(JobRow).where(JobRow.id.in_(ids[first:first + CHUNK]))
                              .options(selectinload(JobRow.tasks)))
            for row in found:
                job = convert.job_from_row(row)
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
        # The ORM rows were only read: the writes go through Core, and the session must
        # not flush stale copies of them at commit.
        s.expunge_all()
        connection = s.connection()
        if ends:
            connection.execute(_END_JOBS, ends)
        if touched:
            connection.execute(_TOUCH_JOBS, touched)
        return tuple(ended)

    @staticmethod
    def _rows(s: Session, refs: Iterable[TaskRef]) -> dict[TaskRef, _Row]:
        """The task rows of `refs`' jobs (every task of them), locking the jobs' rows."""
        names = sorted({ref.job for ref in refs})
        out: dict[TaskRef, _Row] = {}
        for first in range(0, len(names), CHUNK):
            chunk = names[first:first + CHUNK]
            # Lock the jobs first, in name order, as the one-job writers lock theirs.
            s.execute(select(JobRow.id).where(JobRow.name.in_(chunk))
                      .order_by(JobRow.name).with_for_update())
            found = s.execute(
                select(JobRow.name, TaskRow.id, TaskRow.job_id, TaskRow.group_name,
                       TaskRow.task_index, TaskRow.state, TaskRow.attempts)
                .join(TaskRow, TaskRow.job_id == JobRow.id).where(JobRow.name.in_(chunk)))
            for name, task_id, job_id, group, index, state, attempts in found:
                out[TaskRef(name, group, index)] = _Row(task_id, job_id, TaskState(state),
                                                        attempts)
        return out


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
