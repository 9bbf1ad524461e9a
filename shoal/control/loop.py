"""The control loop: reconcile on start, then cycle, launch, poll and record, on one thread.

Ownership and threading. Every change to the scheduler model, the executor's processes and
the store's task/job states happens on the loop's thread (the one calling `start`, `step`,
`run_forever`). `submit` and `cancel` may be called from any thread (the API's): they do
their store work (creating the job, checking it exists) in the caller's thread and then put a
command on a queue that the loop drains at the start of each step; `wake` makes the loop
run at once. `pending_reason` reads a dict the loop replaces whole, which is safe to read.

Order of effects. A cycle's binds are persisted in one transaction *before* any launch, and
each launch is idempotent per (task, attempt), the attempt being the store's bind count. So
a crash between persisting and launching launches the task at restart, and a crash between
launching and recording RUNNING re-adopts the process instead of starting a second one.

Ending a job. A job succeeds when all its tasks succeed; the first task failure (non-zero
exit, signal, lost process, failed launch) fails it, OpenPAI's default rule. Its other tasks
are stopped (SIGTERM, then SIGKILL after `grace_period`, by the executor) and end CANCELLED;
its pending tasks are CANCELLED at once. `cancel` stops a job the same way. Tasks being
stopped are RELEASING and keep their resources in the model until their process group is
gone; the job goes terminal only then, so a restart in between still sees the job and
finishes stopping it (RELEASING tasks at restart mean a stop was under way). A lost process
fails its task and job: there are no retries yet.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from shoal.api import (
    Job,
    JobState,
    Node,
    PendingReason,
    PriorityClass,
    TaskRef,
    TaskState,
    VirtualCluster,
)
from shoal.api.decisions import Decisions
from shoal.control.launching import describe, exit_code_of, launch_spec
from shoal.control.records import MasterPorts
from shoal.executors.local import LocalExecutor, RunningTask, TaskStatus
from shoal.executors.wrapper import STATUS_FILE
from shoal.scheduler.actions.enqueue import admission_check
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.profile import Profile
from shoal.scheduler.session import Hooks, Session
from shoal.store import NotFoundError, Repository
from shoal.store.repository import TaskRecord

log = logging.getLogger(__name__)

#: How often running tasks are polled (seconds).
POLL_INTERVAL = 0.2
#: Actions whose evictions/resizes this loop does not apply yet.
EVICTING_ACTIONS = frozenset({"preempt", "reclaim", "elastic"})
#: Pending-reason changes kept per job (the store has no event kind for them yet).
PENDING_HISTORY = 20


class UnsupportedProfileError(ValueError):
    """The profile asks for something the control loop cannot apply yet."""


@dataclass(slots=True)
class _Tracked:
    """A task with a process (or a launch attempt) the loop watches."""

    handle: RunningTask
    state: TaskState
    """Its state in the store, kept here so that no read is needed per poll."""


class ControlPlane:
    def __init__(self, repository: Repository, executor: LocalExecutor, nodes: Sequence[Node],
                 profile: Profile, *, virtual_clusters: Sequence[VirtualCluster] = (),
                 priority_classes: Sequence[PriorityClass] = (),
                 clock: Callable[[], float] = time.time, interval: float = 5.0,
                 grace_period: float = 30.0) -> None:
        evicting = EVICTING_ACTIONS.intersection(profile.doc.actions)
        if evicting:
            raise UnsupportedProfileError(
                f"profile {profile.name!r} uses {', '.join(sorted(evicting))}: the control "
                "loop does not apply evictions or resizes yet")
        self.repository = repository
        self.executor = executor
        self.nodes = tuple(nodes)
        self.profile = profile
        self.virtual_clusters = tuple(virtual_clusters)
        self.priority_classes = tuple(priority_classes)
        self.clock = clock
        self.interval = interval
        self.grace_period = grace_period
        # Plugins keep no state between cycles (as in the simulator): one set serves all.
        self._hooks = Hooks(profile.plugins())
        self._actions = profile.actions()
        self.wake = threading.Event()
        self._commands: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._model: SchedulerModel | None = None
        self._tasks: dict[TaskRef, _Tracked] = {}
        self._ending: dict[str, tuple[JobState, str]] = {}
        """Jobs being stopped → the terminal state and cause they get when all have stopped."""
        self._ports = MasterPorts(executor.root / "control" / "master-ports")
        self._pending: dict[str, PendingReason] = {}
        self.pending_history: dict[str, list[tuple[float, PendingReason]]] = {}
        self.cycles = 0
        self.last_decisions: Decisions | None = None

    # ---- the API's side (any thread) ----------------------------------------------------

    def submit(self, job: Job, idempotency_key: str | None = None) -> tuple[Job, bool]:
        """Store the job (PENDING) and have the loop add it to the model; returns the job as
        stored and whether this call created it (False: an idempotent replay). Store errors
        (AlreadyExistsError, IdempotencyConflict) are raised here, in the caller's thread."""
        if not job.submitted:
            job = replace(job, submitted=self.clock())
        stored, created = self.repository.submit_job(job, idempotency_key=idempotency_key)
        if created:
            self._command(lambda: self._admit(stored.name))
        return stored, created

    def feasibility(self, job: Job) -> PendingReason | None:
        """Why `job` could never run on this control plane's cluster (for the API to reject
        it at submission); None if it could."""
        return admission_check(job, self.nodes, self.virtual_clusters, self.priority_classes,
                               self.profile)

    def cancel(self, name: str, cause: str = "cancelled by request") -> Job:
        """Ask the loop to stop the job; returns the job as stored now. Cancelling a
        finished job changes nothing; an unknown one raises NotFoundError."""
        job = self.repository.get_job(name)
        if job is None:
            raise NotFoundError(f"no job {name!r}")
        if not job.state.terminal:
            self._command(lambda: self._cancel(name, cause))
        return job

    def pending_reason(self, name: str) -> PendingReason | None:
        """Why the job waited after the latest cycle, or None."""
        return self._pending.get(name)

    def pending_reasons(self) -> dict[str, PendingReason]:
        return dict(self._pending)

    def _command(self, command: Callable[[], None]) -> None:
        self._commands.put(command)
        self.wake.set()

    # ---- the loop -----------------------------------------------------------------------

    @property
    def model(self) -> SchedulerModel:
        if self._model is None:
            raise RuntimeError("the control plane is not started: call start() first")
        return self._model

    def run_forever(self, stop_event: threading.Event) -> None:
        """Cycle on every wake-up (submit, cancel, task exit) and at least every `interval`
        seconds; poll tasks every POLL_INTERVAL. Returns when `stop_event` is set; running
        tasks are left running (a restart re-adopts them)."""
        if self._model is None:
            self.start()
        next_cycle = 0.0
        while not stop_event.is_set():
            try:
                self._drain()
                self.poll()
                now = time.monotonic()
                if self.wake.is_set() or now >= next_cycle:
                    self.wake.clear()
                    self.run_cycle()
                    next_cycle = now + self.interval
            except Exception:  # keep serving: a store hiccup must not kill the loop
                log.exception("control loop step failed; retrying")
                self._reload_model()
            self.wake.wait(POLL_INTERVAL)

    def step(self) -> Decisions:
        """One synchronous turn: apply queued commands, poll tasks, run a cycle."""
        if self._model is None:
            self.start()
        self._drain()
        self.poll()
        return self.run_cycle()

    def _drain(self) -> None:
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                return
            command()

    # ---- reconcile ------------------------------------------------------------------------

    def start(self) -> None:
        """Rebuild the model from the store and take charge of every task that holds
        resources: adopt live processes, collect outcomes recorded while we were down,
        launch bound tasks never launched, and finish stops that were under way."""
        jobs = self.repository.snapshot_jobs()
        self._model = SchedulerModel(self.nodes, self.virtual_clusters,
                                     self.priority_classes, now=self.clock())
        self._model.add_jobs(jobs)
        records = self.repository.task_records(j.name for j in jobs)
        for job in jobs:
            for task in job.tasks:
                if task.state.holds_resources:
                    self._take_over(records[task.ref])
            states = {t.state for t in job.tasks}
            if TaskState.RELEASING in states:
                final = JobState.FAILED if TaskState.FAILED in states else JobState.CANCELLED
                self._teardown(job.name, final, "stop resumed after a control-plane restart")
            elif not any(ref.job == job.name for ref in self._tasks):
                self._settle(job.name)

    def _take_over(self, rec: TaskRecord) -> None:
        ref = rec.ref
        if rec.pid:
            status_path = self.executor.task_dir(ref.job, ref.group, ref.index,
                                                 rec.attempts) / STATUS_FILE
            handle = self.executor.adopt(rec.pid, rec.pid_start_time or 0.0, status_path)
            if handle is None:
                # Gone with no recorded outcome: a handle on it polls as LOST.
                out, err = self.executor.log_paths(ref.job, ref.group, ref.index)
                handle = RunningTask(ref.job, ref.group, ref.index, rec.attempts, rec.pid,
                                     rec.pid_start_time or 0.0, out, err, status_path)
            self._tasks[ref] = _Tracked(handle, rec.state)
        elif rec.state is TaskState.RELEASING:
            self.repository.transition_task(ref, TaskState.CANCELLED,
                                            "stopped before it was launched")
            self._finish_task(ref)
        else:
            self._launch(rec)  # idempotent: a claimed attempt is re-adopted, not restarted

    def _settle(self, name: str) -> None:
        """A job with no process left: end it if its tasks' states already decide it (the
        control plane went down between the last task's end and the job's)."""
        job = self.repository.get_job(name)
        if job is None or job.state.terminal:
            return
        states = [t.state for t in job.tasks]
        if states and all(s is TaskState.SUCCEEDED for s in states):
            self._end_job(name, JobState.SUCCEEDED, "all tasks succeeded")
        elif TaskState.FAILED in states:
            self._teardown(name, JobState.FAILED, "a task failed")

    def _reload_model(self) -> None:
        """After an error mid-cycle the model may hold binds the store does not: rebuild it
        from the store (processes stay tracked as they are)."""
        try:
            jobs = self.repository.snapshot_jobs()
            model = SchedulerModel(self.nodes, self.virtual_clusters, self.priority_classes,
                                   now=self.clock())
            model.add_jobs(jobs)
        except Exception:
            log.exception("cannot rebuild the scheduler model from the store")
            return
        self._model = model
        for name in self._ending:
            self._stop_wanting(name)

    # ---- cycle and launch -------------------------------------------------------------------

    def run_cycle(self) -> Decisions:
        """One scheduling cycle over the model; binds are persisted, then launched."""
        model = self.model
        model.now = self.clock()
        session = Session(model, self._hooks)
        for action in self._actions:
            action.execute(session)
        decisions = session.close()
        self.cycles += 1
        self.last_decisions = decisions
        self._note_pending(decisions, model.now)
        if decisions.binds:
            cause = f"placed by scheduling cycle {self.cycles} (profile {self.profile.name})"
            self.repository.record_binds(decisions.binds, cause)
            records = self.repository.task_records({b.task.job for b in decisions.binds})
            for bind in decisions.binds:
                self._launch(records[bind.task])
        return decisions

    def _note_pending(self, decisions: Decisions, now: float) -> None:
        pending = decisions.pending_by_job()
        for job, reason in pending.items():
            history = self.pending_history.setdefault(job, [])
            if not history or history[-1][1] != reason:
                history.append((now, reason))
                del history[:-PENDING_HISTORY]
                log.info("job %s waits: %s", job, reason.message)
        self._pending = pending

    def _launch(self, rec: TaskRecord) -> None:
        ref = rec.ref
        try:
            spec = launch_spec(self.model.jobs[ref.job].job, rec, self._ports.get(ref.job))
            handle = self.executor.launch(spec)
        except (ValueError, OSError) as exc:
            self._task_failed(ref, f"cannot launch: {exc}", None)
            return
        tracked = _Tracked(handle, rec.state)
        self._tasks[ref] = tracked
        if handle.pid > 0 and rec.state is TaskState.BOUND:
            self.repository.transition_task(
                ref, TaskState.RUNNING, f"process {handle.pid} started on node {rec.node}",
                pid=handle.pid, pid_start_time=handle.pid_start_time)
            tracked.state = TaskState.RUNNING
        # pid 0: nothing runs (the status file says why, or it polls LOST): poll ends it.

    # ---- poll -----------------------------------------------------------------------------

    def poll(self) -> bool:
        """Poll every watched task and record the ones that ended; True if any did."""
        ended = False
        for ref, tracked in list(self._tasks.items()):
            status = self.executor.poll(tracked.handle)
            if status.running:
                continue
            del self._tasks[ref]
            ended = True
            self._task_ended(ref, tracked, status)
        if ended:
            self.wake.set()
        return ended

    def _task_ended(self, ref: TaskRef, tracked: _Tracked, status: TaskStatus) -> None:
        how, code = describe(status), exit_code_of(status)
        if ref.job in self._ending or tracked.state is TaskState.RELEASING:
            cause = self._ending.get(ref.job, (JobState.CANCELLED, "stop requested"))[1]
            self.repository.transition_task(ref, TaskState.CANCELLED,
                                            f"stopped ({how}): {cause}", exit_code=code)
            self._finish_task(ref)
            self._maybe_end(ref.job)
            return
        if status.task_state() is TaskState.SUCCEEDED:
            self.repository.transition_task(ref, TaskState.SUCCEEDED, f"process {how}",
                                            exit_code=code)
            self._finish_task(ref)
            self._settle(ref.job)
        else:
            self._task_failed(ref, f"process {how}", code)

    def _task_failed(self, ref: TaskRef, cause: str, code: int | None) -> None:
        self.repository.transition_task(ref, TaskState.FAILED, cause, exit_code=code)
        self._finish_task(ref)
        self._teardown(ref.job, JobState.FAILED, f"task {ref} failed: {cause}")

    def _finish_task(self, ref: TaskRef) -> None:
        self.model.finish_task(ref)

    # ---- stopping jobs ----------------------------------------------------------------------

    def _admit(self, name: str) -> None:
        if name in self.model.jobs:
            return  # already loaded by start(): the submit raced the reconcile
        job = self.repository.get_job(name)
        if job is not None and not job.state.terminal:
            self.model.add_job(job)

    def _cancel(self, name: str, cause: str) -> None:
        job = self.repository.get_job(name)
        if job is None or job.state.terminal or name in self._ending:
            return
        self._teardown(name, JobState.CANCELLED, cause)

    def _stop_wanting(self, name: str) -> None:
        self.model.withdraw(name)

    def _teardown(self, name: str, final: JobState, cause: str) -> None:
        """Stop a job: no more binds, pending tasks CANCELLED, running ones RELEASING and
        signalled; the job ends `final` once no process of it is left."""
        self._ending.setdefault(name, (final, cause))
        self._stop_wanting(name)
        job = self.repository.get_job(name)
        for task in job.tasks if job is not None else ():
            if task.state is TaskState.PENDING:
                self.repository.transition_task(task.ref, TaskState.CANCELLED, cause)
        for ref, tracked in self._tasks.items():
            if ref.job != name:
                continue
            if tracked.state in (TaskState.BOUND, TaskState.RUNNING):
                self.repository.transition_task(ref, TaskState.RELEASING, cause)
                tracked.state = TaskState.RELEASING
            self.executor.request_stop(tracked.handle, self.grace_period)
        self._maybe_end(name)

    def _maybe_end(self, name: str) -> None:
        if name in self._ending and not any(ref.job == name for ref in self._tasks):
            final, cause = self._ending.pop(name)
            self._end_job(name, final, cause)

    def _end_job(self, name: str, final: JobState, cause: str) -> None:
        self.repository.transition_job(name, final, cause)
        if name in self.model.jobs:
            self.model.remove_job(name)
        self._ports.forget(name)
        self._pending.pop(name, None)
        self.wake.set()

