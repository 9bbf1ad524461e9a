"""Polling the tracked tasks and recording how they ended: the half of the control loop
(`shoal.control.loop`) between the executor's statuses and the store, a base class of
`ControlPlane`, on the loop's thread.

The common end — a task that succeeded, of a job not being stopped nor evicted — is
recorded for every task one poll saw in one transaction (`Repository.record_exits`), and a
job whose every task has then ended, and that `completion.judge` ends, ends in that same
transaction: a burst of short jobs costs one store transaction per poll, not two per job.
Every other end (a failure and its retries, a stopped or evicted task, a lost one, a job
that succeeded while tasks of it still run) takes the path of one task at a time, whose
causes and decisions `shoal.control.task_ends` owns. Should the batch raise, its tasks take
that path too, one at a time, so that one end that cannot be recorded stops no other. The
jobs a batch ended give their ports back with the journals' lines held back
(`endpoints.lines_held`): one write per journal for the batch, not two lines' per job.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from shoal.api import Job, JobState, TaskRef, TaskState
from shoal.control import completion
from shoal.control.completion import Decision, Verdict
from shoal.control.endpoints import Endpoints, lines_held
from shoal.control.handover import Handover
from shoal.control.job_scope import TaskCredentials
from shoal.control.launching import describe, exit_code_of
from shoal.control.membership import Membership
from shoal.control.metrics_hooks import ControlObserver, task_ends
from shoal.control.records import MasterPorts
from shoal.control.stopping import Stopping, Tracked
from shoal.executors.task import TaskPhase, TaskStatus
from shoal.store.task_batches import JobEnd, TaskExit

log = logging.getLogger(__name__)

#: The terminal state of a job each verdict that ends it gives.
ENDS = {Verdict.SUCCEED: JobState.SUCCEEDED, Verdict.FAIL: JobState.FAILED}

Ended = tuple[TaskRef, Tracked, TaskStatus]


class Exiting(Stopping):
    """`ControlPlane` supplies how one task's end is recorded, how a job's decision is
    applied, the node watch, the hand-over of evictions and the membership files."""

    wake: threading.Event
    clock: Callable[[], float]
    observer: ControlObserver
    _credentials: TaskCredentials
    _handover: Handover
    _membership: Membership
    _ports: MasterPorts
    _endpoints: Endpoints

    def _task_ended(self, ref: TaskRef, tracked: Tracked, status: TaskStatus) -> None:
        raise NotImplementedError

    def _apply(self, name: str, decision: Decision) -> None:
        raise NotImplementedError

    def _give_up(self, name: str, doing: str, exc: Exception) -> None:
        raise NotImplementedError

    def _watch_nodes(self, *, now: bool = False) -> None:
        raise NotImplementedError

    def poll(self) -> bool:
        """Poll every watched task (one `Executor.poll_many`) and record the ones that
        ended; True if any did."""
        watched = list(self._tasks.items())
        statuses = self.executor.poll_many([tracked.handle for _, tracked in watched])
        finished = [(ref, tracked, status)
                    for (ref, tracked), status in zip(watched, statuses, strict=True)
                    if not status.running]
        if not finished:
            return False
        # Before the model forgets what they held.
        for seen in task_ends(self.model, ((r, s) for r, _, s in finished), self.clock()):
            self.observer.task_ended(seen)
        if any(status.phase is TaskPhase.LOST for _, _, status in finished):
            self._watch_nodes(now=True)  # a node that died must not be given the retry
        successes = [end for end in finished if self._plain_success(*end)]
        self._record_successes(successes)
        chosen = {ref for ref, _, _ in successes}
        for end in finished:
            if end[0] not in chosen:
                self._one_ended(*end)
        self._membership.refresh(self.model)
        self.wake.set()
        return True

    def _plain_success(self, ref: TaskRef, tracked: Tracked, status: TaskStatus) -> bool:
        """Whether this end is a success that the batch records: its task was recorded
        RUNNING, and is neither being stopped nor evicted."""
        return (status.task_state() is TaskState.SUCCEEDED
                and tracked.state is TaskState.RUNNING
                and ref.job not in self._ending
                and not self._handover.is_evicting(ref))

    def _one_ended(self, ref: TaskRef, tracked: Tracked, status: TaskStatus) -> None:
        """Record one end on its own, unless an earlier end in this poll moved its task."""
        if self._tasks.get(ref) is not tracked:
            return
        del self._tasks[ref]
        try:
            self._task_ended(ref, tracked, status)
        except Exception as exc:  # one task's end must not keep the others unrecorded
            self._give_up(ref.job, f"recording how task {ref} ended", exc)

    def _record_successes(self, successes: list[Ended]) -> None:
        """Record these successes in one transaction (each on its own should it raise),
        then apply what they decide for their jobs."""
        if not successes:
            return
        decisions: dict[str, Decision] = {}

        def decide(job: Job) -> JobEnd | None:
            if job.name in self._ending:
                return None
            decision = decisions[job.name] = completion.judge(job)
            final = ENDS.get(decision.verdict)
            return None if final is None else JobEnd(final, decision.cause)

        exits = [TaskExit(ref, f"process {describe(status)}", exit_code_of(status),
                          status.ended_at) for ref, _, status in successes]
        try:
            recorded = self.repository.record_exits(exits, decide)
        except Exception as exc:
            log.warning("recording %d task ends at once failed (%s): recording each on "
                        "its own", len(exits), exc)
            for end in successes:
                self._one_ended(*end)
            return
        refused = set(recorded.refused)
        for ref, tracked, status in successes:
            if ref in refused:  # the store holds it elsewhere: the one-task path says why
                self._one_ended(ref, tracked, status)
            else:
                del self._tasks[ref]
                self.model.task_succeeded(ref)
        ended = {job.name: job for job in recorded.ended}
        # Their tokens were revoked with their end; the others' in one store write. Their
        # ports' journal lines are one write per journal, not two lines' each per job.
        with self._credentials.deferred(revoked=ended), \
                lines_held(self._endpoints, self._ports):
            for job in recorded.ended:
                self._stop_wanting(job.name)
                self._job_done(job)
        for name, decision in decisions.items():
            if name in ended:
                continue
            try:  # a job ended with tasks still to stop, or put back (a job retry)
                self._apply(name, decision)
            except Exception as exc:
                self._give_up(name, "ending it after its tasks succeeded", exc)
