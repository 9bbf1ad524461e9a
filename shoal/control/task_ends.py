"""How one task's end is decided and carried out: the half of the control loop
(`shoal.control.loop`) that takes a task the executor saw end (`shoal.control.exits` polls;
the common success of a whole poll is recorded there in one transaction) and records it —
the end of a stopped or evicted task, a success, or a failure with its retries
(`shoal.control.completion`'s rules: retried in place, with its gang
(`shoal.control.gang_restart`), or the job's decision applied). A base class of
`ControlPlane`, on the loop's thread."""

from __future__ import annotations

import logging
import threading

from shoal.api import JobState, TaskRef, TaskState
from shoal.control import completion
from shoal.control.completion import Decision, Verdict
from shoal.control.evicting import Evicting
from shoal.control.gang_restart import GangRestarting, lost_detail
from shoal.control.handover import Handover
from shoal.control.launching import describe, exit_code_of, retry_reason
from shoal.control.metrics_hooks import ControlObserver, RetryKind
from shoal.control.stopping import Tracked
from shoal.executors.task import TaskStatus
from shoal.store.stops import FailedTask

log = logging.getLogger(__name__)


class TaskEnding(GangRestarting, Evicting):
    """`ControlPlane` supplies the hand-over of evictions and the loop's wake-up."""

    wake: threading.Event
    _handover: Handover
    observer: ControlObserver

    def _task_ended(self, ref: TaskRef, tracked: Tracked, status: TaskStatus) -> None:
        how, code, ended = describe(status), exit_code_of(status), status.ended_at
        if self._handover.is_evicting(ref):
            ready = self._handover.stopped(ref)
            if ref.job in self._ending:
                self._stopped(ref, how, code, ended_at=ended)
                self._maybe_end(ref.job)
            else:
                self._evicted_stopped(ref, how, code, ended_at=ended)
            self._launch_ready(ready)
        elif ref.job in self._ending or tracked.state is TaskState.RELEASING:
            self._stopped(ref, how, code, ended_at=ended)
            self._maybe_end(ref.job)
        elif status.task_state() is TaskState.SUCCEEDED:
            self.repository.transition_task(ref, TaskState.SUCCEEDED, f"process {how}",
                                            exit_code=code, ended_at=ended)
            self.model.task_succeeded(ref)
            self._settle(ref.job)
        else:
            self._task_failed(ref, f"process {how}", code, retry_reason(status),
                              lost_detail(status), ended_at=ended)

    def _task_failed(self, ref: TaskRef, cause: str, code: int | None, how: str,
                     lost: str | None = None, *, ended_at: float | None = None) -> None:
        """Retry the task in place or with its gang (`lost`: it was lost, and the detail,
        `shoal.control.gang_restart`), or record it FAILED and apply what that decides
        (`ended_at`: when the engine saw it end, what its usage is charged until)."""
        job = self.repository.get_job(ref.job)
        if job is None:
            return
        decision = completion.on_failure(job, ref, how, lost=lost)
        failed = FailedTask(ref, cause, code, ended_at)
        if decision.verdict is Verdict.RESTART_GANG:
            self.observer.retried(RetryKind.GANG)
            self._restart_gang(failed, decision.cause)
        elif decision.verdict is Verdict.RETRY_TASK:
            self.observer.retried(RetryKind.TASK)
            self.repository.retry_task(failed, decision.cause)
            log.info("task %s: %s", ref, decision.cause)
            self._requeue(ref)
            # An elastic job's retried surplus task is not waited for: it may end the job.
            self._apply(ref.job, completion.after_retry(job, ref))
        elif decision.verdict is Verdict.NOTHING:
            self.repository.transition_task(ref, TaskState.FAILED, cause, exit_code=code,
                                            ended_at=ended_at)
            self._finish_task(ref)
        else:
            self._apply(ref.job, decision, failed)

    def _requeue(self, ref: TaskRef) -> None:
        """Give a retried task's resources back and have the scheduler place it again."""
        try:
            self.model.release_task(ref)
        except KeyError:  # it held nothing in the model: it only needs to be wanted again
            info = self.model.jobs.get(ref.job)
            if info is not None:
                info.give_back(ref.group, ref.index)
                self.model.waiting[ref.job] = info
        self.wake.set()

    def _finish_task(self, ref: TaskRef) -> None:
        self.model.finish_task(ref)

    def _apply(self, name: str, decision: Decision, failed: FailedTask | None = None) -> None:
        final = {Verdict.SUCCEED: JobState.SUCCEEDED, Verdict.FAIL: JobState.FAILED,
                 Verdict.RETRY_JOB: JobState.PENDING}.get(decision.verdict)
        if final is JobState.PENDING:
            self.observer.retried(RetryKind.JOB)
        if final is not None:
            self._teardown(name, final, decision.cause, failed)
