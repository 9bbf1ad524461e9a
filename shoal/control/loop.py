"""The control loop: reconcile on start, then cycle, launch, poll and record, on one thread.

Ownership and threading. Every change to the scheduler model, the executor's processes and
the store's task/job states happens on the loop's thread (the one calling `start`, `step`,
`run_forever`). `submit` and `cancel` may be called from any thread (the API's; those
requests are `shoal.control.requests`'): they do their store work (creating the job,
checking it exists) in the caller's thread and then put a command on a queue that the loop
drains at the start of each step; `wake` makes the loop run at once. `pending_reason`
reads a table the loop changes under a lock (`shoal.control.waiting`), which is safe to
read.

When to cycle. A cycle runs on every event (submit, cancel, task exit, a catalog change)
and at least every `interval` seconds. Events that come faster than cycles share them: the
next event-driven cycle waits CYCLE_BACKOFF times the last one's deciding time, and for
the launches in flight (`shoal.control.inflight`), so that what arrives while one batch
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
the engine in chunks (`Executor.launch_many`) on a launch worker
(`shoal.control.inflight`) while the loop goes on serving, one failed launch stopping or
corrupting none of the others; the starts of the chunks that are done are recorded
RUNNING in one transaction, while the next chunk launches, and whatever stops, evicts or
fails a task first takes up every chunk in flight. Polling and recording how tasks ended
is `shoal.control.exits`' (a poll's successes in one transaction); deciding what one
task's end means, `shoal.control.task_ends`'.

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

import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Sequence
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
from shoal.control.requests import Requests
from shoal.control.retired import move_retired_files
from shoal.control.scale_up import ScaleUpHook, shortfall
from shoal.control.stopping import Tracked
from shoal.control.task_ends import TaskEnding
from shoal.control.time_limits import TimeLimiting, TimeLimits
from shoal.control.usage_charge import UsageKeeper
from shoal.control.waiting import WaitingReasons
from shoal.executors.contract import Executor
from shoal.scheduler.actions.enqueue import AdmissionCheck
from shoal.scheduler.gates import Gates
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.profile import Profile
from shoal.scheduler.session import Hooks, Session
from shoal.store import Repository

log = logging.getLogger(__name__)

#: How often running tasks are polled (seconds).
POLL_INTERVAL = 0.2
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
                   Requests, AdminOps):
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

    # ---- the queue of commands for the loop's thread -------------------------------------

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
                self._settle_launches(wait=False)  # the chunks the worker has launched
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
                elif now >= next_cycle or (woken and now >= earliest
                                           and self._flights.has_room()):
                    # An event's cycle waits for the launches in flight: what arrives
                    # meanwhile is placed and launched together, in one cycle and one batch.
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
            else:  # a chunk that lands, or an event, wakes it; a cycle waiting only for the
                # backoff runs when the backoff ends
                due = earliest if woken and self._flights.has_room() else next_cycle
                self.wake.wait(max(0.0, min(due, next_cycle, wait_until) - now))

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
