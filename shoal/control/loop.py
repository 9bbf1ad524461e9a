"""The control loop: reconcile on start, then cycle, launch, poll and record, on one thread.

Ownership and threading. Every change to the scheduler model, the executor's processes and
the store's task/job states happens on the loop's thread (the one calling `start`, `step`,
`run_forever`). `submit` and `cancel` may be called from any thread (the API's): they do
their store work (creating the job, checking it exists) in the caller's thread and then put a
command on a queue that the loop drains at the start of each step; `wake` makes the loop
run at once. `pending_reason` reads a table the loop changes under a lock
(`shoal.control.waiting`), which is safe to read.

When to cycle. A cycle runs on every event (submit, cancel, task exit, a catalog change)
and at least every `interval` seconds. Events that come faster than cycles share them: the
next event-driven cycle waits CYCLE_BACKOFF times the last one's deciding time, and for the
batch of launches in flight (`shoal.control.inflight`), so that what arrives while one batch
starts is placed and launched together (the periodic cycle does not wait). And an event
cycle is skipped when the model proves it moot (`SchedulerModel.cycle_may_place`: nothing
released since a cycle that decided nothing, and no new job's task fits anywhere) — the
common case of submissions queuing on a full cluster; such jobs get their reason without a
cycle, and the periodic cycle still runs. Pending reasons join the jobs' histories in
batches (`shoal.control.waiting`).

Order of effects. A cycle's binds are persisted in one transaction *before* any launch, and
each launch is idempotent per (task, attempt), the attempt being the store's bind count. So
a crash between persisting and launching launches the task at restart, and a crash between
launching and recording RUNNING re-adopts the process instead of starting a second one. The
launches are `shoal.control.launches`': a cycle's bound tasks, checked on this thread, go to
the engine as one batch (`Executor.launch_many`) on a launch worker
(`shoal.control.inflight`) while the loop goes on serving, one failed launch stopping or
corrupting none of the others; the batch's starts are recorded RUNNING in one transaction
when its results are in, and whatever stops, evicts or fails a task first takes up the
batches in flight. Polling and recording how tasks ended is `shoal.control.exits`' (a poll's
successes in one transaction); deciding what one task's end means,
`shoal.control.task_ends`'.

Ending a job is `shoal.control.completion`'s decision (OpenPAI's rules, pure): a task that
ends badly — non-zero exit, signal, LOST, a failed launch — is retried in place while its
group's `taskRetryCount` allows (a new attempt, same MASTER_PORT), a LOST member of a gang
restarts its whole gang (`shoal.control.gang_restart`), and a job that would fail is retried
whole while `jobRetryCount` allows. The loop carries each verdict out.

A run past its job's time limit is stopped as a cancel is and the job fails, unretried
(`shoal.control.time_limits`; the loop waits no longer than until the earliest deadline). A
new job that takes an ended job's name has the ended job's engine files moved to its
history name first (`shoal.control.retired`).

Stopping a job is `shoal.control.stopping`'s: stored first, processes signalled after. When a
job ends, the work its tasks submitted into its own virtual cluster is stopped with it, and
its tasks' token revoked (`shoal.control.job_scope`). A cycle's evictions (preempt, reclaim,
an elastic job shrunk) are stored with its binds and applied by `shoal.control.evicting`:
the evicted processes are stopped and the tasks bound in their place start once they are
gone (`shoal.control.handover`); the notice of why, and by when, is written into the job's
membership file before they are signalled. An elastic job's tasks learn its size from their
environment and its membership file (`shoal.control.membership`); every task its port and
its job's roles' addresses (`shoal.control.endpoints`).

Gates. A job whose dependencies have not succeeded, or that is held, is kept out of the model
until they have, or it is released; a job's end opens or cancels what depends on it. Holds,
releases and requeues are carried out on the loop's thread (`shoal.control.gating`).
"""

from __future__ import annotations

import functools
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace

from shoal.api import (
    Job,
    JobState,
    Node,
    PendingKind,
    PendingReason,
    PriorityClass,
    TaskRef,
    VirtualCluster,
)
from shoal.api.decisions import Decisions, Reserve
from shoal.api.flavors import ResourceFlavor
from shoal.api.objects import job_of_virtual_cluster
from shoal.control import completion
from shoal.control.admin_ops import AdminOps
from shoal.control.endpoints import Endpoints, TaskPorts
from shoal.control.exits import Exiting
from shoal.control.expiry import DEFAULT_JOB_TTL, JobExpiry
from shoal.control.gating import Gating
from shoal.control.handover import Handover
from shoal.control.inflight import LaunchFlights
from shoal.control.job_scope import TaskCredentials, ended_with, orphaned, work_inside
from shoal.control.launches import Launching
from shoal.control.launching import NodeAddresses
from shoal.control.membership import Membership
from shoal.control.metrics_hooks import (
    NO_OBSERVER,
    NOTHING_BOUND,
    ControlObserver,
    cycle_report,
)
from shoal.control.node_watch import NodeWatch, NodeWatching
from shoal.control.records import MasterPorts
from shoal.control.retired import move_retired_files
from shoal.control.scale_up import ScaleUpHook, shortfall
from shoal.control.stopping import Tracked
from shoal.control.task_ends import TaskEnding
from shoal.control.time_limits import TimeLimiting, TimeLimits
from shoal.control.usage_charge import UsageKeeper
from shoal.control.waiting import WaitingReasons
from shoal.core.snapshot import SnapshotError
from shoal.executors.contract import Executor
from shoal.scheduler.actions.enqueue import AdmissionCheck
from shoal.scheduler.gates import Gates
from shoal.scheduler.introspection import VirtualClusterStatus, virtual_cluster_status
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.profile import Profile
from shoal.scheduler.session import Hooks, Session
from shoal.spec.imports import Original
from shoal.store import NotFoundError, Repository

log = logging.getLogger(__name__)

#: How often running tasks are polled (seconds).
POLL_INTERVAL = 0.2
#: How long an API thread waits for the loop to answer a question about its model (s).
STATUS_TIMEOUT = 10.0
#: An event starts a cycle at once, but no sooner than MIN_CYCLE_GAP seconds, nor
#: CYCLE_BACKOFF times the last cycle's scheduling time (its decisions, not the launches that
#: follow them), after the last cycle ended. A burst of
#: submissions then shares cycles instead of paying one each (a cycle walks every pending
#: job), and the loop spends at most a fifth of its time cycling, leaving the GIL to the API.
MIN_CYCLE_GAP = 0.005
CYCLE_BACKOFF = 4.0
#: Actions that may place a job that fits nowhere by evicting others: a profile with one of
#: them cycles on every event (no cycle is proven moot). The elastic action needs no such
#: care: it grows jobs only into idle capacity, which a moot cycle proves there is none of
#: for what arrived, and its cooldowns wake the loop themselves (`regrow_at`).
PREEMPTING_ACTIONS = frozenset({"preempt", "reclaim"})
#: Why a job that arrived on a full cluster waits, when no cycle was run for it.
UNPLACEABLE_NOW = PendingReason(
    PendingKind.INSUFFICIENT_RESOURCES,
    "no node has room for any of its tasks now; it waits for resources to be released")


class ControlPlane(TaskEnding, Launching, NodeWatching, Exiting, Gating, TimeLimiting,
                   AdminOps):
    def __init__(self, repository: Repository, executor: Executor, nodes: Sequence[Node],
                 profile: Profile, *, virtual_clusters: Sequence[VirtualCluster] = (),
                 priority_classes: Sequence[PriorityClass] = (),
                 resource_flavors: Sequence[ResourceFlavor] = (),
                 clock: Callable[[], float] = time.time, interval: float = 5.0,
                 grace_period: float = 30.0, scale_up: ScaleUpHook | None = None,
                 server_url: str | None = None, job_ttl: float = DEFAULT_JOB_TTL,
                 observer: ControlObserver = NO_OBSERVER) -> None:
        """`server_url`: where the API this control plane serves listens, given to tasks
        with a job token (`shoal.control.job_scope`); None: tasks get no token. `job_ttl`:
        seconds after its end that a job is removed (0: never; `shoal.control.expiry`).
        `observer`: told what the loop does, for metrics (`shoal.control.metrics_hooks`)."""
        self.observer = observer
        self.repository = repository
        self.executor = executor
        self.scale_up = scale_up
        """Called with what is missing when jobs wait for capacity (`scale_up.py`)."""
        self.nodes = tuple(nodes)
        """As the model takes them, kept live by `shoal.control.node_watch`."""
        self._node_watch = NodeWatch(self.nodes)
        self.profile = profile
        self.virtual_clusters = tuple(virtual_clusters)
        self.priority_classes = tuple(priority_classes)
        self.resource_flavors = tuple(resource_flavors)
        """Issue 16's node pools, given to every model the loop builds."""
        self.clock = clock
        self._credentials = TaskCredentials(repository, server_url)
        self._expiry = JobExpiry(repository, job_ttl, forget=executor.forget_job)
        self.interval = interval
        self.grace_period = grace_period
        # Plugins keep no state between cycles (as in the simulator): one set serves all.
        self._hooks = Hooks(profile.plugins())
        self._always_cycles = bool(PREEMPTING_ACTIONS.intersection(profile.doc.actions)) \
            or any(getattr(p, "time_dependent", False) for p in profile.plugins())
        """No event cycle is ever proven moot: the profile's order moves with the clock, or
        it may evict to place what fits nowhere."""
        self._admission = AdmissionCheck(self.nodes, self.virtual_clusters,
                                         self.priority_classes, profile)
        self._admission_lock = threading.Lock()
        self._actions = profile.actions()
        self.wake = threading.Event()
        self._commands: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._model: SchedulerModel | None = None
        self._tasks: dict[TaskRef, Tracked] = {}
        self._ending: dict[str, tuple[JobState, str]] = {}
        """Jobs being stopped → the terminal state and cause they get when all have stopped."""
        master_ports = executor.root / "control" / "master-ports"
        task_ports = TaskPorts(executor.root / "control" / "task-ports",
                               also_taken=(master_ports,))
        # A job's MASTER_PORT is never a live task's port (`shoal.control.endpoints`).
        self._ports = MasterPorts(master_ports, task_ports.fresh)
        self._addresses = NodeAddresses(executor.nodes)
        """Each node's address, for MASTER_ADDR: `update` it with each listing of nodes."""
        self._handover = Handover()
        """Evicted tasks still stopping, and the bound tasks that wait for them."""
        self._endpoints = Endpoints(task_ports, self._addresses, self._ports.get,
                                    self._ports.known)
        """Each task's port and each role's addresses (`shoal.control.endpoints`)."""
        self._membership = Membership(executor, self._endpoints)
        self.regrow_at: float | None = None
        """When the latest cycle's elastic action can grow a job next (the clock's time)."""
        self._waiting = WaitingReasons()
        """Per waiting job, the reason last written to its history, and when."""
        self._gates = Gates()
        """Jobs kept out of the model: dependencies, holds (`shoal.control.gating`)."""
        self._gate_reasons: dict[str, PendingReason] = {}
        self._gate_lock = threading.Lock()
        self._looping = False
        """`run_forever` is running: the model belongs to its thread."""
        self._flights = LaunchFlights(executor, self.wake.set)
        """Batches of launches the launch worker carries out (`shoal.control.inflight`)."""
        self.cycles = 0
        self.last_cycle_seconds = 0.0
        """How long the latest cycle took to decide (wall clock; launches not included)."""
        self.last_decisions: Decisions | None = None
        self._usage = UsageKeeper(repository, profile)
        """Decayed usage per virtual cluster and user: charged each cycle, kept in the store."""
        self._limits = TimeLimits()
        """The jobs in the model that have a time limit (`shoal.control.time_limits`)."""

    # ---- the API's side (any thread) ----------------------------------------------------

    def submit(self, job: Job, idempotency_key: str | None = None, *, wake: bool = True,
               generated_from: str | None = None, original: Original | None = None
               ) -> tuple[Job, bool]:
        """Store the job (PENDING) and have the loop add it to the model; returns the job as
        stored and whether this call created it (False: an idempotent replay). Store errors
        (AlreadyExistsError, IdempotencyConflict) are raised here, in the caller's thread.
        An ended job of that name is kept in history (`shoal.store.job_names`; not for a
        name generated from `generated_from`), its files moved before the new job is
        admitted (`shoal.control.retired`). An imported job is stored with its `original`.

        `wake=False` leaves the loop to `wake_up()`, which the API calls once its answer
        has been sent: a loop woken at once competes with the answer for the GIL. A wake-up
        that never comes costs at most POLL_INTERVAL: the loop takes up queued commands on
        every turn."""
        if not job.submitted:
            job = replace(job, submitted=self.clock())
        done = self.repository.submit(job, idempotency_key=idempotency_key,
                                      generated_from=generated_from, original=original)
        stored, created = done.job, done.created
        if created:
            if done.retired is not None:
                self._commands.put(lambda: move_retired_files(self.repository, self.executor))
            self._commands.put(lambda: self._admit(stored))
            if wake:
                self.wake_up()
        return stored, created

    def submit_jobs(self, jobs: Sequence[Job], idempotency_key: str | None = None, *,
                    originals: Mapping[str, Original] | None = None, wake: bool = True
                    ) -> tuple[tuple[Job, ...], bool]:
        """`submit` for the jobs one document became, stored all or none
        (`Repository.submit_jobs`), each with its original document if it has one."""
        now = self.clock()
        jobs = tuple(job if job.submitted else replace(job, submitted=now) for job in jobs)
        stored, created = self.repository.submit_jobs(jobs, idempotency_key=idempotency_key,
                                                      originals=originals)
        if created:
            for job in stored:
                self._commands.put(functools.partial(self._admit, job))
            if wake:
                self.wake_up()
        return stored, created

    def wake_up(self) -> None:
        """Have the loop take up what was queued for it now."""
        self.wake.set()

    def feasibility(self, job: Job) -> PendingReason | None:
        """Why `job` could never run on this control plane's cluster (for the API to reject
        it at submission); None if it could. The API's threads share one
        `AdmissionCheck`, which checks one job at a time, hence the lock. A job submitted
        into a job's own virtual cluster (or a sub-cluster of it) is checked against
        those."""
        owner = job_of_virtual_cluster(job.queue)
        scoped = () if owner is None else tuple(self.repository.job_virtual_clusters(owner))
        with self._admission_lock:
            return self._admission(job, scoped)

    def add_sub_clusters(self, job: str, sub_clusters: Sequence[VirtualCluster]) -> Job:
        """Store sub-clusters of a running job's own virtual cluster (store errors are raised
        here, in the caller's thread) and have the loop add them to the model; returns the
        job as stored now."""
        stored = self.repository.add_sub_clusters(job, sub_clusters)
        self._command(lambda: self._add_sub_clusters(job, sub_clusters))
        return stored

    def _add_sub_clusters(self, job: str, sub_clusters: Sequence[VirtualCluster]) -> None:
        try:
            self.model.add_sub_clusters(job, sub_clusters)
        except SnapshotError:  # the job ended or was retried since: the store says what is
            self._reload_model()

    def reload_catalog(self) -> None:
        """Take up the virtual clusters, priority classes and resource flavors the store holds
        now (the API added some): the admission check at once, the scheduler model at the
        loop's next turn — a rebuild from the store, as after an error, queued behind the commands
        already waiting so that no job submitted later is admitted into the old model."""
        virtual_clusters = tuple(self.repository.list_virtual_clusters())
        priority_classes = tuple(self.repository.list_priority_classes())
        resource_flavors = tuple(self.repository.list_resource_flavors())
        admission = AdmissionCheck(self._node_watch.declared(), virtual_clusters,
                                   priority_classes, self.profile)
        with self._admission_lock:
            self.virtual_clusters, self.priority_classes = virtual_clusters, priority_classes
            self.resource_flavors = resource_flavors
            self._admission = admission
        self._command(self._reload_model)

    def delete(self, name: str) -> bool:
        """Delete a job (see `shoal.control.expiry`): one that has ended is removed now
        (True); one that has not is marked, cancelled by the loop, and removed once its
        tasks have stopped (False). Raises NotFoundError."""
        summary = self.repository.request_delete(name)
        if summary.job.state.terminal and self._expiry.removed_now(name):
            return True
        self._expiry.watch(name)
        self._command(lambda: self._cancel(name, "deleted by request"))
        return False

    def cancel(self, name: str, cause: str = "cancelled by request") -> Job:
        """Ask the loop to stop the job; returns the job as stored now, without its tasks
        (read by the API's thread: a large job's are not loaded). Cancelling a finished
        job changes nothing; an unknown one raises NotFoundError."""
        summary = self.repository.job_summary(name)
        if summary is None:
            raise NotFoundError(f"no job {name!r}")
        if not summary.job.state.terminal:
            self._command(lambda: self._cancel(name, cause))
        return summary.job

    def pending_reason(self, name: str) -> PendingReason | None:
        """Why the job waited after the latest cycle (or waits for a dependency or a
        release), or None."""
        return self.gate_reason(name) or self._waiting.get(name)

    def pending_reasons(self) -> dict[str, PendingReason]:
        return {**self._waiting.all(), **self.gate_reasons()}

    def virtual_cluster_status(self) -> dict[str, VirtualClusterStatus]:
        """Every virtual cluster as the model sees it now (introspection). Read in the loop's
        thread, which owns the model, when the loop runs; here when it does not."""
        if not self._looping:
            return virtual_cluster_status(self.model)
        answer: Future[dict[str, VirtualClusterStatus]] = Future()
        self._command(lambda: answer.set_result(virtual_cluster_status(self.model)))
        return answer.result(timeout=STATUS_TIMEOUT)

    def _command(self, command: Callable[[], None]) -> None:
        self._commands.put(command)
        self.wake_up()

    # ---- the loop -----------------------------------------------------------------------

    @property
    def looping(self) -> bool:
        """`run_forever` is running: the model belongs to its thread."""
        return self._looping

    @property
    def model(self) -> SchedulerModel:
        if self._model is None:
            raise RuntimeError("the control plane is not started: call start() first")
        return self._model

    def run_forever(self, stop_event: threading.Event) -> None:
        """Cycle on every wake-up (submit, cancel, task exit; spaced as MIN_CYCLE_GAP says) and
        at least every `interval`
        seconds; poll tasks every POLL_INTERVAL. Returns when `stop_event` is set; running
        tasks are left running (a restart re-adopts them)."""
        if self._model is None:
            self.start()
        self._looping = True
        try:
            self._loop(stop_event)
        finally:
            try:  # what is in flight is tracked and recorded (a restart would adopt it)
                self._settle_launches()
            finally:
                self._flights.close()
                self._looping = False

    def _loop(self, stop_event: threading.Event) -> None:
        next_cycle = next_poll = earliest = 0.0
        limit_at: float | None = None
        woken = False
        while not stop_event.is_set():
            # Cleared before the commands are drained: a command queued from now on sets
            # the flag again, so it is never left waiting for the periodic cycle.
            if self.wake.is_set():
                self.wake.clear()
                woken = True
            try:
                if self._drain():  # commands queued without a wake-up count as one
                    woken = True
                self._settle_launches(wait=False)  # the batches the worker has launched
                if time.monotonic() >= next_poll:
                    self.poll()
                    self._watch_nodes()
                    self._waiting.flush(self.repository)  # what skipped cycles noted
                    self._expiry.tick(self.clock())
                    self._admin_tick()  # drains, virtual clusters deleted once drained
                    next_poll = time.monotonic() + POLL_INTERVAL
                limit_at = self._enforce_time_limits()
                now = time.monotonic()
                if woken and now >= earliest and now < next_cycle and self._cycle_is_moot():
                    woken = False
                    self._note_unplaceable_arrivals()
                elif now >= next_cycle or (woken and now >= earliest and not self._flights):
                    # An event's cycle waits for the batch in flight: what arrives meanwhile
                    # is placed and launched together, in one cycle and one batch.
                    woken = False
                    self.run_cycle()
                    ended = time.monotonic()
                    next_cycle = ended + self.interval
                    if self.regrow_at is not None:  # an elastic job may grow sooner
                        next_cycle = min(next_cycle, ended + max(
                            MIN_CYCLE_GAP, self.regrow_at - self.clock()))
                    earliest = ended + max(MIN_CYCLE_GAP,
                                           CYCLE_BACKOFF * self.last_cycle_seconds)
            except Exception:  # keep serving: a store hiccup must not kill the loop
                log.exception("control loop step failed; retrying")
                self._reload_model()
            now = time.monotonic()
            wait_until = min(next_poll, math.inf if limit_at is None
                             else now + limit_at - self.clock())
            if woken and not self._flights:  # woken too soon after a cycle: let events gather
                time.sleep(max(0.0, min(earliest, wait_until) - now))
            else:
                self.wake.wait(max(0.0, min(next_cycle, wait_until) - now))

    def step(self) -> Decisions:
        """One synchronous turn: apply queued commands, poll tasks, run a cycle."""
        if self._model is None:
            self.start()
        self._drain()
        self.poll()
        self._watch_nodes()
        self._expiry.tick(self.clock())
        self._admin_tick()
        self._enforce_time_limits()
        return self.run_cycle()

    def _drain(self) -> bool:
        """Run the queued commands; True if there were any."""
        ran = False
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                return ran
            command()
            ran = True

    # ---- reconcile ------------------------------------------------------------------------

    def start(self) -> None:
        """Rebuild the model from the store and take charge of every task that holds
        resources: adopt live processes, collect outcomes recorded while we were down,
        finish stops and evictions that were under way, and launch bound tasks never
        launched (once the evicted tasks on their node have stopped)."""
        move_retired_files(self.repository, self.executor)  # before any launch
        self._resume_admin()  # drains and deletions under way
        stored = self.repository.snapshot_jobs()
        self._ending = self.repository.stopping_jobs()
        self._gates = Gates()
        jobs, unmet = self._gate_all(stored, self._ending)  # dependencies, holds
        self._model, evicted = self._model_of(jobs, self.virtual_clusters)
        self._limits.reset(jobs)
        self._usage.restore(self._model)
        self._reconcile(jobs, evicted)  # one job at a time: one bad job stops no other
        self.repository.revoke_job_tokens()  # of jobs that ended while we were down
        for name, cause in {**orphaned(self._model), **unmet}.items():
            try:
                self._cancel(name, cause)
            except Exception as exc:
                self._give_up(name, "cancelling it at start", exc)
        self._membership.refresh(self._model)

    def _settle(self, name: str) -> None:
        """Apply what the job's recorded task states decide (after a task succeeded, or at
        a restart that finds no process of the job left)."""
        job = self.repository.get_job(name)
        if job is not None and not job.state.terminal and name not in self._ending:
            self._apply(name, completion.judge(job))

    def _reload_model(self) -> None:
        """Rebuild the model from the store (processes stay tracked as they are): after an
        error mid-cycle, when it may hold binds the store does not, and when the catalog
        of virtual clusters and priority classes changed (`reload_catalog`)."""
        try:
            self._settle_launches()
            jobs = [j for j in self.repository.snapshot_jobs() if j.name not in self._gates]
            model, _ = self._model_of(jobs, self._with_carvings(self.virtual_clusters))
        except Exception:
            log.exception("cannot rebuild the scheduler model from the store")
            return
        self._usage.carry(self._model, model)
        self._model = model
        self._limits.reset(jobs)
        for name in self._ending:
            self._stop_wanting(name)

    def _with_carvings(self, virtual_clusters: Sequence[VirtualCluster]
                       ) -> tuple[VirtualCluster, ...]:
        """The virtual clusters with the carvings the current model holds, where their
        fixed-size nodes are unchanged: a catalog read before the loop recorded a carving
        must not make the rebuilt model carve it again elsewhere."""
        if self._model is None:
            return tuple(virtual_clusters)
        held = self._model.reservations
        return tuple(
            replace(vc, reservation=held.placements[vc.name])
            if vc.name in held.placements
            and held.specs[vc.name].fixed_size_nodes == vc.fixed_size_nodes else vc
            for vc in virtual_clusters)

    # ---- cycle and launch -------------------------------------------------------------------

    def run_cycle(self) -> Decisions:
        """One scheduling cycle over the model; binds are persisted, then launched."""
        model = self.model
        model.now = self.clock()
        self._usage.charge(model)
        started = time.perf_counter()
        session = Session(model, self._hooks)
        for action in self._actions:
            action.execute(session)
        # Reasons as changes since the last cycle (`shoal.control.waiting`): the decisions
        # carry none, and a backlog costs what changed.
        reasons = session.report(self._waiting.ledger)
        decisions = session.decide()
        self.regrow_at = session.regrow_at
        self.last_cycle_seconds = time.perf_counter() - started
        self.cycles += 1
        self.last_decisions = decisions
        if decisions.changes_anything():
            model.unblock()  # only a cycle that decided nothing settles the model
        else:
            model.settled()
        if decisions.reservations:
            self._record_reservations(decisions.reservations)
        self._waiting.apply(reasons, model.now)
        self._waiting.flush(self.repository)
        self._consider_scale_up()
        admissions = [r for r in decisions.resizes if r.partial_admission]
        if decisions.evictions:  # a victim may be a task whose launch is in flight
            self._settle_launches()
        bound = NOTHING_BOUND
        if decisions.binds or decisions.evictions:
            cause = f"placed by scheduling cycle {self.cycles} (profile {self.profile.name})"
            bound = self.repository.record_binds(decisions.binds, cause,
                                                 decisions.evictions, admissions)
            # The notice first: a task may read it as soon as its SIGTERM comes.
            self._membership.notify(model, decisions.evictions,
                                    self.clock() + self.grace_period)
            for evict in decisions.evictions:
                self._evict(evict)
            self._launch_bound([b.task for b in decisions.binds], records=bound)
        self.observer.cycle(cycle_report(model, decisions, self.last_cycle_seconds, bound))
        for resize in decisions.resizes:
            log.info("job %s: %s resized to %d (%s)", resize.job, resize.group,
                     resize.replicas, resize.reason)
        self._membership.refresh(model)
        return decisions

    def _record_reservations(self, changes: list[Reserve]) -> None:
        """Store where fixed-size nodes were carved, so that a restart restores them there."""
        self.repository.record_reservations(changes)
        for change in changes:
            log.info("virtual cluster %s: fixed-size nodes %s", change.virtual_cluster,
                     "carved on " + ", ".join(p.node for p in change.placements)
                     if change.placements is not None else f"given back ({change.reason})")

    def _cycle_is_moot(self) -> bool:
        """Whether the cycle an event asks for would surely place nothing (see
        `SchedulerModel.cycle_may_place`): then it is skipped, and the periodic cycle still
        runs. A profile whose order moves with the clock, or that preempts, always
        cycles."""
        return not self._always_cycles and not self.model.cycle_may_place()

    def _note_unplaceable_arrivals(self) -> None:
        """Jobs that arrived on a full cluster wait without a cycle: give them the reason a
        cycle would, in substance, and settle the model."""
        arrived = {info.name: UNPLACEABLE_NOW for info in self.model.arrivals
                   if info.name in self.model.waiting}
        self.model.settled()
        self.observer.cycle_skipped()
        self._waiting.add(arrived, self.clock())
        self._consider_scale_up()

    def _consider_scale_up(self) -> None:
        now = self.clock()
        if self.scale_up is not None and self.scale_up.ready(now):
            self.scale_up.consider(shortfall(self.model, self._waiting.all(), now))

    # ---- stopping jobs ----------------------------------------------------------------------


    def _stop_wanting(self, name: str) -> None:
        super()._stop_wanting(name)
        self._handover.forget_job(name)

    def _admit(self, job: Job) -> None:
        """Add a just-stored job to the model. It is the job as the store returned it, so no
        read is needed; a cancel that followed it is a later command on the same queue. A
        job with dependencies or a hold may be gated instead (`shoal.control.gating`)."""
        if not self._gate_in(job):
            if job.name in self.model.jobs:  # a rebuild of the model loaded it meanwhile
                self.model.remove_job(job.name)
            return
        if job.name not in self.model.jobs:  # else start() loaded it: the submit raced it
            self.model.add_job(job)
        self._limits.watch(job)
        owner = job_of_virtual_cluster(job.queue)
        if owner is not None and owner not in self.model.jobs:
            self._cancel(job.name, ended_with(job.queue, owner))

    def _job_done(self, job: Job) -> None:
        """The store ended the job, or put it back to PENDING whole (a job retry)."""
        name = job.name
        for inside in work_inside(self.model, name):
            info = self.model.jobs.get(inside)  # cancelling one may have ended the next
            if info is not None:
                self._cancel(inside, ended_with(info.job.queue, name))
        if name in self.model.jobs:
            self.model.remove_job(name)
        if job.state.terminal:
            self._limits.forget(name)
            self._credentials.revoke(name)
            self._endpoints.forget(name)  # first: it frees the master port too
            self._ports.forget(name)
            self._waiting.forget(name)
            self._gate_ended(name, job.state)  # its dependents open, or are cancelled
        else:
            log.info("job %s is back to PENDING (job retries %d/%d)", name, job.retries,
                     job.job_retry_count)
            if self._gate_requeued(job):
                self.model.add_job(job)
        self.wake.set()

    def _forget_waiting(self, name: str) -> None:
        self._waiting.forget(name)
