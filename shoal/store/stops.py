"""Stopping jobs in the store: a task's retry in place, a job's end or rerun, a gang's
restart — each one transaction, as every write of `Repository` (of which `Stops` is a base
class) is.

A stop is decided first and carried out after: `stop_job` (or `restart_gang`) records the
decision, moves the tasks that hold resources to RELEASING and marks the stop under way
(`stopping`, which a restarted control plane reads back with `stopping_jobs`); the control
plane then stops their processes, and `finish_stop` completes the stop once none is left.
The mark says what completion does: end the job in a state, rerun it whole (a job retry,
`jobRetryCount`: every task from scratch, the job's `retries` one more), or put a gang back
to be placed again (`RESTARTING_GANG`: its unfinished tasks only, no job retry counted), or
requeue it (`REQUEUING`, `shoal requeue`: every task from scratch as for a job retry, but no
job retry counted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from shoal.api import Job, JobState, TaskRef, TaskState, Transition
from shoal.store import convert
from shoal.store.engine import Store
from shoal.store.errors import StoreError
from shoal.store.job_queries import TERMINAL_JOB_STATES
from shoal.store.models import EventRow, JobRow, TaskRow

JOB_STOPPING = "JobStopping"
"""A stop of the job's tasks began; `target` is the state the job gets once they stopped."""
JOB_RETRIED = "JobRetried"
"""The whole job was put back to be scheduled again (`jobRetryCount`)."""
GANG_RESTARTED = "GangRestarted"
"""A gang whose member was lost was put back to be placed again whole (`restart_gang`)."""
RESTARTING_GANG = "RestartingGang"
"""The `stopping` mark of a gang restart under way: its tasks go back to PENDING as they
stop, as for a job retry, but its completion counts no job retry (`finish_stop`)."""
REQUEUING = "Requeuing"
"""The `stopping` mark of a requeue under way (`shoal requeue`): completed as a job retry
that counts no retry."""
JOB_HELD = "JobHeld"
"""The job was held: the scheduler does not consider it until it is released."""
JOB_REQUEUED = "JobRequeued"
"""The whole job was put back to be scheduled again by request (`shoal requeue`)."""


@dataclass(frozen=True, slots=True)
class FailedTask:
    """A task whose failure is recorded in the same transaction as what it causes."""

    ref: TaskRef
    cause: str
    exit_code: int | None = None
    ended_at: float | None = None
    """When the engine saw it end (`TaskStatus.ended_at`): what its usage is charged
    until (`shoal.store.accounting.attempt_end`)."""


class Stops:
    """`Repository` supplies the store, the clock, and how rows are read and moved."""

    store: Store
    clock: Callable[[], float]

    def _job_row(self, s: Session, name: str, *, lock: bool = False) -> JobRow:
        raise NotImplementedError

    def _task_row(self, s: Session, ref: TaskRef) -> TaskRow:
        raise NotImplementedError

    @staticmethod
    def _task_in(job: JobRow, ref: TaskRef) -> TaskRow:
        raise NotImplementedError

    def _move_job(self, s: Session, row: JobRow, target: JobState, cause: str
                  ) -> Transition[JobState]:
        raise NotImplementedError

    def _move_task(self, s: Session, row: TaskRow, ref: TaskRef, target: TaskState,
                   cause: str, ended_at: float | None = None) -> Transition[TaskState]:
        raise NotImplementedError

    def retry_task(self, failed: FailedTask, cause: str) -> None:
        """Record a task's failure and its retry in place at once: FAILED (with its exit
        code), then PENDING with `cause` ("retry 1/3 after exit code 2"), one more retry
        counted. Its next bind is a new attempt, so no launch of the old one is repeated."""
        with self.store.sessions.begin() as s:
            row = self._task_row(s, failed.ref)
            self._retried(s, row, failed, cause)

    def stop_job(self, name: str, target: JobState, cause: str, *,
                 failed: FailedTask | None = None, requeue: bool = False,
                 hold: str | None = None) -> Job:
        """Decide a job's end (or, with `target` PENDING, its retry — with `requeue`, a
        requeue by request, which counts no retry; with `hold` too, the job is held, `hold`
        the cause of that event) in one transaction:
        record `failed` if given, cancel its pending tasks (kept for a retry), and move the
        tasks that hold resources to RELEASING. If none does, the job ends (or restarts) at
        once; otherwise the stop is recorded as under way (`stopping_jobs`) and `finish_stop`
        completes it once their processes are gone. Returns the job as stored now."""
        with self.store.sessions.begin() as s:
            row = self._job_row(s, name, lock=True)
            if failed is not None:
                self._failed(s, self._task_in(row, failed.ref), failed)
            if hold is not None and not row.held:
                row.held = True
                s.add(EventRow(job_id=row.id, time=self.clock(), kind=JOB_HELD, cause=hold))
            if self._release_holders(s, row, cause,
                                     cancel_pending=target is not JobState.PENDING):
                row.stopping = REQUEUING if requeue else target.value
                row.stop_cause = cause
                s.add(EventRow(job_id=row.id, time=self.clock(), kind=JOB_STOPPING,
                               target_state=target.value, cause=cause))
            else:
                self._complete_stop(s, row, target, cause, requeue=requeue)
            s.flush()
            return convert.job_from_row(row)

    def restart_gang(self, failed: FailedTask, cause: str) -> Job:
        """Decide a gang restart in one transaction: record the lost task `failed` FAILED,
        then PENDING with `cause` and one more retry counted (its own, as `retry_task`),
        and move the job's tasks that hold resources to RELEASING. If none does, the gang is
        put back at once; otherwise the restart is recorded as a stop under way
        (`stopping_jobs`, PENDING) and `finish_stop` completes it once their processes are
        gone: every unfinished task PENDING, the job PENDING, its `retries` unchanged.
        Returns the job as stored now."""
        with self.store.sessions.begin() as s:
            row = self._job_row(s, failed.ref.job, lock=True)
            self._retried(s, self._task_in(row, failed.ref), failed, cause)
            if self._release_holders(s, row, cause, cancel_pending=False):
                row.stopping, row.stop_cause = RESTARTING_GANG, cause
                s.add(EventRow(job_id=row.id, time=self.clock(), kind=JOB_STOPPING,
                               target_state=JobState.PENDING.value, cause=cause))
            else:
                self._complete_gang_restart(s, row, cause)
            s.flush()
            return convert.job_from_row(row)

    def _failed(self, s: Session, task: TaskRow, failed: FailedTask) -> None:
        """Record `failed` FAILED, with its exit code when it had one."""
        self._move_task(s, task, failed.ref, TaskState.FAILED, failed.cause, failed.ended_at)
        if failed.exit_code is not None:
            task.exit_code = failed.exit_code

    def _retried(self, s: Session, task: TaskRow, failed: FailedTask, cause: str) -> None:
        """Record `failed` FAILED, then PENDING with `cause`, one more retry counted."""
        self._failed(s, task, failed)
        self._move_task(s, task, failed.ref, TaskState.PENDING, cause)
        task.retries = (task.retries or 0) + 1

    def _release_holders(self, s: Session, row: JobRow, cause: str, *,
                         cancel_pending: bool) -> bool:
        """Move the job's BOUND and RUNNING tasks to RELEASING (and its PENDING ones to
        CANCELLED when `cancel_pending`); whether any task held resources."""
        holding = False
        for task in row.tasks:
            ref = TaskRef(row.name, task.group_name, task.task_index)
            state = TaskState(task.state)
            if state is TaskState.PENDING and cancel_pending:
                self._move_task(s, task, ref, TaskState.CANCELLED, cause)
            elif state in (TaskState.BOUND, TaskState.RUNNING):
                self._move_task(s, task, ref, TaskState.RELEASING, cause)
            holding = holding or state.holds_resources
        return holding

    def finish_stop(self, name: str) -> Job:
        """Complete the stop under way: the job ends in the state `stop_job` recorded, or is
        put back to PENDING whole for a job retry or a gang restart. Returns the job as
        stored now."""
        with self.store.sessions.begin() as s:
            row = self._job_row(s, name, lock=True)
            if row.stopping is None:
                raise StoreError(f"job {name!r} has no stop under way")
            cause = row.stop_cause or "stopped"
            if row.stopping == RESTARTING_GANG:
                self._complete_gang_restart(s, row, cause)
            elif row.stopping == REQUEUING:
                self._complete_stop(s, row, JobState.PENDING, cause, requeue=True)
            else:
                self._complete_stop(s, row, JobState(row.stopping), cause)
            s.flush()
            return convert.job_from_row(row)

    def stopping_jobs(self) -> dict[str, tuple[JobState, str]]:
        """Unfinished jobs with a stop under way → the state each gets and why (PENDING
        for a job retry and for a gang restart alike: their tasks go back to PENDING)."""
        with self.store.reads.begin() as s:
            rows = s.execute(select(JobRow.name, JobRow.stopping, JobRow.stop_cause)
                             .where(JobRow.stopping.is_not(None),
                                    JobRow.state.not_in(TERMINAL_JOB_STATES)))
            return {n: (JobState.PENDING if t in (RESTARTING_GANG, REQUEUING) else JobState(t),
                        c or "stopped") for n, t, c in rows if t is not None}

    def _complete_stop(self, s: Session, row: JobRow, target: JobState, cause: str, *,
                       requeue: bool = False) -> None:
        row.stopping = row.stop_cause = None
        if target is not JobState.PENDING:
            self._move_job(s, row, target, cause)
            return
        # A job retry: every task starts again from scratch, in-place retries forgotten.
        for task in row.tasks:
            ref = TaskRef(row.name, task.group_name, task.task_index)
            if TaskState(task.state) is not TaskState.PENDING:
                self._move_task(s, task, ref, TaskState.PENDING, cause)
            task.retries = 0
        if not requeue:
            row.retries = (row.retries or 0) + 1
        if row.virtual_cluster and row.virtual_cluster.get("subClusters"):
            # Its tasks start over, and so does what they built: the work they submitted
            # into sub-clusters is stopped with the job (`shoal.control.job_scope`).
            row.virtual_cluster = {**row.virtual_cluster, "subClusters": []}
        s.add(EventRow(job_id=row.id, time=self.clock(),
                       kind=JOB_REQUEUED if requeue else JOB_RETRIED, cause=cause))
        if JobState(row.state) is not JobState.PENDING:
            self._move_job(s, row, JobState.PENDING, cause)

    def _complete_gang_restart(self, s: Session, row: JobRow, cause: str) -> None:
        """Put a gang back to be placed again whole: its unfinished tasks PENDING (finished
        ones keep their outcome, every task its retries), the job PENDING. What its tasks
        built inside its virtual cluster is stopped with them, as for a job retry."""
        row.stopping = row.stop_cause = None
        for task in row.tasks:
            state = TaskState(task.state)
            if state is not TaskState.PENDING and not state.terminal:
                self._move_task(s, task, TaskRef(row.name, task.group_name, task.task_index),
                                TaskState.PENDING, cause)
        if row.virtual_cluster and row.virtual_cluster.get("subClusters"):
            row.virtual_cluster = {**row.virtual_cluster, "subClusters": []}
        s.add(EventRow(job_id=row.id, time=self.clock(), kind=GANG_RESTARTED, cause=cause))
        if JobState(row.state) is not JobState.PENDING:
            self._move_job(s, row, JobState.PENDING, cause)
