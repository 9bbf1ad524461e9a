"""The launch path: how bound tasks become processes, so that no launch can poison another
— the half of the control loop (`shoal.control.loop`) between the store's binds and the
executor, and the reconciliation at start. A base class of `ControlPlane`, on the loop's
thread, as `shoal.control.evicting` is.

A cycle's launches are one batch (`Executor.launch_many`: the local executor forks a whole
batch's wrappers from one request to its launcher). While the loop runs, the batch goes to
a worker thread, in chunks, and the loop takes each chunk's results up on a later turn
(`shoal.control.inflight` says what stays ordered); `step` and the take-over at start
launch on the loop's thread. Each launch still fails on its own. A launch that fails — the
spec cannot be built or launched (no command, a NUL byte, `=` in an env name: refused at
submission, but a store may hold older jobs), the executor returns an exception for it, the
store cannot record the start — fails that task as a failed launch (retried in place, or
failing or retrying its job, as `shoal.control.completion` decides) and the others are
launched regardless. An error nobody planned for fails the task's job with a cause naming
it, after a log line with the traceback.

A batch's starts are recorded together (`Repository.record_starts`: one transaction, not
one per task). Every process a batch started is tracked (as BOUND) as soon as the batch's
results are taken up, before any start is recorded or any failure applied, so that a stop
decided before its start is recorded — a failed launch next to it failing their job —
reaches it, and the store never holds a started task without its pid. A batch that raises
is recorded one start at a time.

The executor is called only for a (task, attempt) the store holds as BOUND for that attempt,
with no process, none being launched, and whose job the model still holds and is not
stopping. The loop's thread is the only writer of task states, so the records read for a
batch stay true until one of its tasks fails: what that failure decides (a job retried
whole, a job failed, the work inside a job's virtual cluster cancelled with it) may move any
task, so the records are read again after each failure, and a failed launch is applied only
if its task is still BOUND for that attempt. A process that started but whose start cannot
be recorded is killed at once (it never runs outside Shoal's accounting of resources), and
the task fails its launch.

At start, every job's tasks are taken over one job at a time (`_reconcile`): one job whose
take-over raises is failed with the cause and logged, and the others are taken over still.
A process the executor cannot adopt is watched by its record (its pid and start time). A
job failed for an unplanned error first has every process its store records tracked, so
that its stop reaches them all: no process is left running outside Shoal's accounting.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from shoal.api import Job, JobState, TaskRef, TaskState
from shoal.api.lifecycle import IllegalTransitionError
from shoal.control.endpoints import Endpoints, lines_held
from shoal.control.evicting import Evicting
from shoal.control.inflight import Launch, LaunchFlights, LaunchResult, launch_now
from shoal.control.job_scope import TaskCredentials
from shoal.control.launching import NodeAddresses, launch_spec, rank_zero_node
from shoal.control.membership import Membership
from shoal.control.metrics_hooks import ControlObserver, LaunchOutcome
from shoal.control.records import MasterPorts
from shoal.control.stopping import Tracked
from shoal.executors.task import RunningTask, TaskLaunch, check_spec
from shoal.store.repository import TaskRecord
from shoal.store.task_batches import TaskStart

log = logging.getLogger(__name__)

#: At most this much of an exception's text goes into a cause (a store keeps causes).
CAUSE_CHARS = 300
#: How long a process whose start could not be recorded gets to stop: none, it has done
#: nothing worth saving.
UNRECORDED_GRACE = 0.0


def brief(exc: BaseException) -> str:
    """An exception's text for a cause: its type when it has none, at most CAUSE_CHARS."""
    text = str(exc) or type(exc).__name__
    return text if len(text) <= CAUSE_CHARS else text[:CAUSE_CHARS] + "…"


class Outcome(StrEnum):
    """What became of one bound task handed to the launch path."""

    STARTED = "started"
    """Handed to the engine: launched and tracked, or in a batch in flight."""
    WAITING = "waiting"
    """It waits for the evicted tasks on its node to stop (`shoal.control.handover`)."""
    SKIPPED = "skipped"
    """Not ours to launch now: not BOUND in the store, launched already, or its job left."""
    FAILED = "failed"
    """The launch failed and that was recorded: other tasks may have moved meanwhile."""


@dataclass(frozen=True, slots=True)
class Started:
    """A process started for a bound task, whose start is not recorded yet."""

    rec: TaskRecord
    handle: RunningTask


class Launching(Evicting):
    """`ControlPlane` supplies the task credentials, master ports, nodes' addresses,
    membership files, tasks' endpoints and what a failed task means."""

    _credentials: TaskCredentials
    _ports: MasterPorts
    _addresses: NodeAddresses
    _membership: Membership
    _endpoints: Endpoints
    _flights: LaunchFlights
    _looping: bool
    observer: ControlObserver

    def _task_failed(self, ref: TaskRef, cause: str, code: int | None, how: str, *,
                     ended_at: float | None = None) -> None:
        raise NotImplementedError

    # ---- batches ----------------------------------------------------------------------------

    def _launch_bound(self, refs: Sequence[TaskRef], *, wait: bool = True,
                      records: dict[TaskRef, TaskRecord] | None = None) -> None:
        """Launch these bound tasks as one batch (`Executor.launch_many`) and record their
        starts together; `wait`: a task whose node still has evicted tasks stopping waits
        for them (False: they have just stopped). While the loop runs, the batch goes to
        the launch worker (`shoal.control.inflight`) and its results are taken up on a
        later turn; otherwise (`step`, a start's take-over) it launches here and now.
        `records`: the tasks' records as the cycle's binds stored them (else they are
        read)."""
        if not refs:
            return
        jobs = {r.job for r in refs}
        if records is None:
            records = self._records(jobs)
        self._credentials.prepare(self.model.jobs[name].job for name in jobs
                                  if name in self.model.jobs)
        batch: list[Launch] = []
        # The ports chosen for the batch reach the disk in one write per journal, before
        # the batch is handed over (a task launched must find its ports after a restart).
        with lines_held(self._endpoints, self._ports):
            for ref in refs:
                if self._prepare(ref, records.get(ref), batch, wait=wait) is Outcome.FAILED:
                    # What the failure decided may have moved any task, those queued too.
                    records = self._records(jobs)
                    batch = [launch for launch in batch
                             if self._still_launchable(launch, records)]
        if batch:
            self._launch_batch(batch)

    def _launch_batch(self, batch: list[Launch]) -> None:
        """Hand a batch to the launch worker while the loop runs; else launch it now."""
        if self._looping:
            self._flights.hand_over(batch)
        else:
            self._landed(launch_now(self.executor, batch))

    def _launch_ready(self, refs: Sequence[TaskRef]) -> None:
        """Launch bound tasks that waited for evicted ones, if still bound and unlaunched."""
        self._launch_bound(refs, wait=False)

    def _records(self, jobs: Iterable[str]) -> dict[TaskRef, TaskRecord]:
        names = set(jobs)
        return self.repository.task_records(names) if names else {}

    def _settle_launches(self, *, wait: bool = True) -> bool:
        """Take up the results of the chunks in flight (`wait`: all of them, waiting for
        the worker; else those that are in, oldest first), their starts recorded together;
        True if there were any. Called before anything
        that may stop, evict or fail a task whose launch may be in flight, so that the stop
        finds it tracked."""
        # The chunks that are in are recorded as one batch: one transaction for their starts.
        landed = [pair for chunk in self._flights.done(wait=wait) for pair in chunk]
        if landed:
            self._landed(landed)
        return bool(landed)

    def _landed(self, batch: list[tuple[Launch, LaunchResult]]) -> bool:
        """A batch's results: every process started is tracked (as BOUND) at once and the
        starts are recorded in one transaction, then each failed launch fails its task.
        True if any failed."""
        started: list[Started] = []
        failed: list[tuple[TaskRecord, Exception]] = []
        for launch, result in batch:
            if isinstance(result, RunningTask):
                # Tracked at once: a stop decided before its start is recorded reaches it.
                self._tasks[launch.rec.ref] = Tracked(result, TaskState.BOUND)
                if result.pid > 0:  # else nothing runs: its status says why, or it is LOST
                    started.append(Started(launch.rec, result))
            elif isinstance(result, Exception):
                failed.append((launch.rec, result))
            else:  # KeyboardInterrupt, SystemExit: not a launch's failure
                raise result
        self.observer.launched(LaunchOutcome.STARTED, len(started))
        self.observer.launched(LaunchOutcome.FAILED, len(failed))
        self._record_starts(started)
        for rec, exc in failed:
            self._launch_failed(rec, exc)
        return bool(failed)

    def _launch_failed(self, rec: TaskRecord, exc: Exception) -> None:
        """The engine could not launch `rec`'s attempt: fail the task as a failed launch,
        unless what an earlier failure decided moved it already (its job stopped)."""
        ref = rec.ref
        try:
            fresh = self._records([ref.job]).get(ref)
            if fresh is None or fresh.state is not TaskState.BOUND \
                    or fresh.attempts != rec.attempts or ref in self._tasks:
                return
            why = brief(exc)
            self._task_failed(ref, f"cannot launch: {why}", None, f"a failed launch ({why})")
        except Exception as error:
            self._give_up(ref.job, f"launching task {ref}", error)

    # ---- one task ---------------------------------------------------------------------------

    def _prepare(self, ref: TaskRef, rec: TaskRecord | None, batch: list[Launch], *,
                 wait: bool) -> Outcome:
        """Add one bound task to `batch` if it is still ours to launch (its spec built);
        never raises. A spec that cannot be built fails the task as a failed launch
        (FAILED, as an unplanned error fails its job)."""
        try:
            if rec is None or not self._launchable(rec):
                return Outcome.SKIPPED
            if wait and rec.node is not None and self._handover.must_wait(ref, rec.node):
                log.info("task %s waits for the evicted tasks on %s to stop", ref, rec.node)
                return Outcome.WAITING
            try:
                spec = self._launch_spec(rec)
                check_spec(spec)  # before its peers in the batch start, not after
            except Exception as exc:  # whatever the cause, the task cannot start
                why = brief(exc)
                self.observer.launched(LaunchOutcome.FAILED, 1)
                self._task_failed(ref, f"cannot launch: {why}", None,
                                  f"a failed launch ({why})")
                return Outcome.FAILED
        except Exception as exc:  # one task's launch must never stop the others
            self._give_up(ref.job, f"launching task {ref}", exc)
            return Outcome.FAILED
        batch.append(Launch(rec, spec))
        return Outcome.STARTED

    def _launchable(self, rec: TaskRecord) -> bool:
        """Whether the store holds `rec`'s attempt as BOUND with no process, no process of
        it is tracked nor being launched, and its job is in the model and not being
        stopped."""
        ref = rec.ref
        info = self.model.jobs.get(ref.job)
        if rec.state is not TaskState.BOUND or rec.pid or ref in self._tasks \
                or ref in self._flights:
            return False
        if info is None or info.stopping or ref.job in self._ending:
            log.warning("task %s is bound in the store but its job is %s: not launched",
                        ref, "not scheduled" if info is None else "being stopped")
            return False
        return True

    def _still_launchable(self, launch: Launch, records: dict[TaskRef, TaskRecord]) -> bool:
        fresh = records.get(launch.rec.ref)
        return fresh is not None and fresh.attempts == launch.rec.attempts \
            and self._launchable(fresh)

    def _record_starts(self, started: list[Started]) -> None:
        """Record the starts of `started` (emptied) that are still tracked as BOUND, in one
        transaction; each on its own should that raise. A start the store refuses (its
        task is no longer BOUND for that attempt) has its process stopped."""
        batch = [s for s in started if self._still_starting(s)]
        started.clear()
        if not batch:
            return
        starts = [TaskStart(s.rec.ref, s.rec.attempts, s.handle.pid, s.handle.pid_start_time,
                            f"process {s.handle.pid} started on node {s.rec.node}")
                  for s in batch]
        try:
            refused = set(self.repository.record_starts(starts))
        except Exception as exc:
            log.warning("recording %d starts at once failed (%s): recording each on its own",
                        len(batch), brief(exc))
            for one in batch:
                if self._still_starting(one):  # a failure before may have stopped it
                    self._record_start(one)
            return
        for one in batch:
            ref = one.rec.ref
            if ref in refused:
                self._unrecorded(one.rec, one.handle, IllegalTransitionError(
                    f"task {ref} is no longer bound for attempt {one.rec.attempts}"))
            else:
                self._tasks[ref].state = TaskState.RUNNING
                self._observe_start(one.rec)

    def _still_starting(self, started: Started) -> bool:
        tracked = self._tasks.get(started.rec.ref)
        return tracked is not None and tracked.handle is started.handle \
            and tracked.state is TaskState.BOUND

    def _record_start(self, started: Started) -> None:
        """Record one start on its own; a start that cannot be recorded is stopped."""
        rec, handle = started.rec, started.handle
        try:
            self.repository.transition_task(
                rec.ref, TaskState.RUNNING, f"process {handle.pid} started on node {rec.node}",
                pid=handle.pid, pid_start_time=handle.pid_start_time)
        except Exception as exc:  # the process must not outlive its record
            self._unrecorded(rec, handle, exc)
            return
        self._tasks[rec.ref].state = TaskState.RUNNING
        self._observe_start(rec)

    def _observe_start(self, rec: TaskRecord) -> None:
        """A task's first attempt is running: how long after its job's submission."""
        info = self.model.jobs.get(rec.ref.job)
        if rec.attempts == 1 and info is not None and info.job.submitted:
            self.observer.started(max(0.0, self.clock() - info.job.submitted))

    def _launch_spec(self, rec: TaskRecord) -> TaskLaunch:
        info = self.model.jobs[rec.ref.job]
        env = {**self._credentials.env(info.job, info.account),
               **self._membership.env(info),
               **self._endpoints.env(self.model, info, rec.ref, rec.node or "")}
        return launch_spec(info.job, rec, self._ports.get(rec.ref.job), env,
                           info.elastic_size() if info.job.elastic is not None else None,
                           self._addresses.address(rank_zero_node(self.model, info, rec)))

    def _unrecorded(self, rec: TaskRecord, handle: RunningTask, exc: Exception) -> None:
        """A process started but its start cannot be stored: kill it now, then fail the
        launch — unless the store holds the task in another state (not ours to fail)."""
        ref = rec.ref
        self._tasks.pop(ref, None)
        status = self.executor.stop(handle, UNRECORDED_GRACE)
        if status.running:  # cannot be killed: watched as BOUND, failed when it ends
            log.error("task %s: process %d started but its start cannot be recorded (%s), "
                      "and it cannot be stopped; watching it", ref, handle.pid, brief(exc))
            self._tasks[ref] = Tracked(handle, TaskState.BOUND)
            return
        log.error("task %s: process %d started but its start cannot be recorded (%s); "
                  "stopped it", ref, handle.pid, brief(exc))
        if not isinstance(exc, IllegalTransitionError):
            why = brief(exc)
            self._task_failed(ref, f"cannot record its start: {why}", None,
                              f"a start that could not be recorded ({why})")

    # ---- errors -----------------------------------------------------------------------------

    def _give_up(self, name: str, doing: str, exc: Exception) -> None:
        """Something unplanned raised while `doing` for job `name`: log it with the
        traceback and fail the job with that cause, so that nothing of it is left half
        launched; the caller goes on with the other jobs."""
        log.error("job %s: %s failed: %s", name, doing, exc, exc_info=exc)
        try:
            self._settle_launches()  # its tasks being launched are tracked, and stopped
            job = self.repository.get_job(name)
            if job is not None and not job.state.terminal and name not in self._ending:
                self._watch_recorded(name)  # so that the stop reaches every process
                self._teardown(name, JobState.FAILED, f"{doing} failed: {brief(exc)}")
        except Exception:
            log.exception("job %s: cannot fail it either; a restart will try again", name)

    def _watch_recorded(self, name: str) -> None:
        """Track every process the store records for the job that is not tracked yet."""
        for rec in self._records([name]).values():
            if rec.pid and rec.state.holds_resources and rec.ref not in self._tasks:
                self._tasks[rec.ref] = Tracked(self._recorded(rec), rec.state)

    # ---- reconcile at start ------------------------------------------------------------------

    def _reconcile(self, jobs: Sequence[Job], evicted: Sequence[TaskRef]) -> None:
        """Take charge of every task that holds resources, one job at a time: evictions
        under way first (bound tasks on their nodes wait for them), then each job's tasks,
        stops and settlement."""
        held = {j.name for j in jobs if any(t.state.holds_resources for t in j.tasks)}
        records = self._records(held)
        failures = 0
        for ref in evicted:
            try:
                self._resume_eviction(records[ref])
            except Exception as exc:
                self._give_up(ref.job, f"resuming the eviction of task {ref}", exc)
                failures += 1
        skip = set(evicted)
        for job in jobs:
            if failures:  # what a failure decided may have moved any task: read again
                records, failures = self._records(held), 0
            try:
                failures = self._reconcile_job(job, records, skip)
            except Exception as exc:
                self._give_up(job.name, "taking over its tasks at start", exc)
                failures = 1

    def _reconcile_job(self, job: Job, records: dict[TaskRef, TaskRecord],
                       evicted: set[TaskRef]) -> int:
        """Take over one job's tasks; returns how many of its launches failed."""
        failures = stale = 0
        stopping = job.name in self._ending
        if stopping:
            self._stop_wanting(job.name)
        for task in job.tasks:
            if stale:
                records, stale = self._records([job.name]), 0
            rec = records.get(task.ref)
            if rec is None or not rec.state.holds_resources or task.ref in evicted:
                continue
            if self._take_over(rec) is Outcome.FAILED:
                failures, stale = failures + 1, 1
        if stopping:
            self._signal(job.name)
            self._maybe_end(job.name)
        elif not any(ref.job == job.name for ref in self._tasks):
            self._settle(job.name)
        return failures

    def _take_over(self, rec: TaskRecord) -> Outcome:
        ref = rec.ref
        if rec.pid:
            try:
                handle = self._adopt(rec)
            except Exception as exc:  # watch it by its record: never lose a process
                log.error("task %s: cannot adopt process %d (%s); watching it by its record",
                          ref, rec.pid, brief(exc), exc_info=exc)
                handle = self._recorded(rec)
            self._tasks[ref] = Tracked(handle, rec.state)
            return Outcome.STARTED
        if rec.state is TaskState.RELEASING:
            self._stopped(ref, "before it was launched", None)
            return Outcome.SKIPPED
        # idempotent: a claimed attempt is re-adopted, not restarted
        batch: list[Launch] = []
        outcome = self._prepare(ref, rec, batch, wait=True)
        if batch and self._landed(launch_now(self.executor, batch)):
            return Outcome.FAILED
        return outcome
