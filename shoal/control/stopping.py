"""Stopping a job's tasks, the half of the control loop (`shoal.control.loop`) that ends
jobs: a base class of `ControlPlane`, on the loop's thread.

Stopping. Whatever ends a job (success, failure, job retry, `cancel`) is first stored in one
transaction (`Repository.stop_job`: the failed task, pending tasks CANCELLED — kept for a
retry —, running ones RELEASING, the state the job will get); only then are processes
signalled (SIGTERM, then SIGKILL after `grace_period`, by the executor). Stopped tasks end
CANCELLED (PENDING for a job retry) and keep their resources in the model until their
process group is gone; the job goes terminal (or back to PENDING) only then
(`Repository.finish_stop`). A `cancel` during a job retry's stop turns it into a
cancellation; other stops already end the job. A restart in between reads the stop under
way from the store and finishes it; a restart in the middle of a retry finds the task
PENDING (placed again as a new attempt) or its old attempt's exit status (retried then),
never both.
"""

from __future__ import annotations

from dataclasses import dataclass

from shoal.api import Job, JobState, TaskRef, TaskState
from shoal.executors.contract import Executor, RecordedAttempt
from shoal.executors.task import RunningTask
from shoal.scheduler.model import SchedulerModel
from shoal.store import Repository
from shoal.store.repository import TaskRecord
from shoal.store.stops import FailedTask


@dataclass(slots=True)
class Tracked:
    """A task with a process (or a launch attempt) the loop watches."""

    handle: RunningTask
    state: TaskState
    """Its state in the store, kept here so that no read is needed per poll."""


class Stopping:
    """`ControlPlane` supplies the store, the executor, the model, the tracked tasks, and
    what a finished task and an ended job mean to it."""

    repository: Repository
    executor: Executor
    grace_period: float
    _tasks: dict[TaskRef, Tracked]
    _ending: dict[str, tuple[JobState, str]]
    """Jobs being stopped → the terminal state and cause they get when all have stopped."""

    @property
    def model(self) -> SchedulerModel:
        raise NotImplementedError

    def _finish_task(self, ref: TaskRef) -> None:
        raise NotImplementedError

    def _job_done(self, job: Job) -> None:
        raise NotImplementedError

    def _settle_launches(self, *, wait: bool = True) -> bool:
        """Take up the launches in flight (`shoal.control.inflight`): whatever stops a task
        first does, so that a task being launched is tracked with its process. True if
        any batch was taken up (what its failures decided may have moved any job)."""
        raise NotImplementedError

    def _adopt(self, rec: TaskRecord) -> RunningTask:
        """A handle on the recorded process of `rec` (one that polls LOST if it is gone)."""
        assert rec.pid
        recorded = self._recorded(rec)
        handle = self.executor.adopt(_attempt(rec))
        # None: gone with no recorded outcome; the handle of the record polls as LOST.
        return recorded if handle is None else handle

    def _recorded(self, rec: TaskRecord) -> RunningTask:
        """A handle built from the store's record of `rec`'s process alone: it polls as
        running while that process lives, and as its recorded outcome (or LOST) after."""
        return self.executor.recorded(_attempt(rec))

    def _cancel(self, name: str, cause: str) -> None:
        job = self.repository.get_job(name)
        if job is None or job.state.terminal:
            return
        # A cancel overrides a job retry under way; any other stop already ends the job.
        if self._ending.get(name, (JobState.PENDING, ""))[0] is JobState.PENDING:
            self._teardown(name, JobState.CANCELLED, cause)

    def _stop_wanting(self, name: str) -> None:
        self.model.withdraw(name)

    def _teardown(self, name: str, final: JobState, cause: str,
                  failed: FailedTask | None = None, *, requeue: bool = False,
                  hold: str | None = None) -> None:
        """End a job as `final` (PENDING: retry it whole; with `requeue`, requeue it and
        count no retry, held too with `hold`, `Repository.stop_job`): store the decision and
        the tasks' moves first, then signal the processes; the job ends once none is left."""
        ending = self._ending.get(name)
        if self._settle_launches() and failed is None:
            # A failed launch of the job, taken up just now, may have stopped it already.
            stored = self.repository.get_job(name)
            if stored is None or stored.state.terminal or self._ending.get(name) != ending:
                return
        job = self.repository.stop_job(name, final, cause, failed=failed, requeue=requeue,
                                       hold=hold)
        if failed is not None:
            self._finish_task(failed.ref)
        self._carry_out_stop(job, final, cause)

    def _carry_out_stop(self, job: Job, final: JobState, cause: str) -> None:
        """Carry out a stop the store has just recorded (`stop_job`, or a gang restart's
        `restart_gang`): withdraw the job, signal the processes of its RELEASING tasks;
        the job ends — or is put back, with `final` PENDING — once none is left."""
        name = job.name
        self._stop_wanting(name)
        releasing = [t.ref for t in job.tasks if t.state is TaskState.RELEASING]
        if not releasing:
            self._ending.pop(name, None)
            self._job_done(job)
            return
        self._ending[name] = (final, cause)
        for ref in releasing:
            if ref in self._tasks:
                self._tasks[ref].state = TaskState.RELEASING
            else:  # bound but never launched: nothing to wait for
                self._stopped(ref, "before it was launched", None)
        self._signal(name)
        self._maybe_end(name)

    def _signal(self, name: str) -> None:
        for ref, tracked in self._tasks.items():
            if ref.job == name:
                self.executor.request_stop(tracked.handle, self.grace_period)

    def _stopped(self, ref: TaskRef, how: str, code: int | None, *,
                 ended_at: float | None = None) -> None:
        """A task of a job being stopped has no process left: CANCELLED, or back to
        PENDING when the job is being retried (`ended_at`: when the engine saw it end)."""
        final, cause = self._ending.get(ref.job, (JobState.CANCELLED, "stop requested"))
        target = TaskState.PENDING if final is JobState.PENDING else TaskState.CANCELLED
        self.repository.transition_task(ref, target, f"stopped ({how}): {cause}",
                                        exit_code=code, ended_at=ended_at)
        self._finish_task(ref)

    def _maybe_end(self, name: str) -> None:
        if name in self._ending and not any(ref.job == name for ref in self._tasks):
            del self._ending[name]
            self._job_done(self.repository.finish_stop(name))


def _attempt(rec: TaskRecord) -> RecordedAttempt:
    """What the store recorded of `rec`'s current attempt, as the executor takes it."""
    ref = rec.ref
    return RecordedAttempt(ref.job, ref.group, ref.index, rec.attempts, rec.pid or 0,
                           rec.pid_start_time or 0.0)
