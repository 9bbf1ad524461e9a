"""The simulator: replays a trace on a simulated cluster through the production scheduler.

It is a driver of the same core the live control plane drives. It keeps one
`SchedulerModel`, tells it what happens (arrivals, completions, node failures), runs the
profile's cycle over it, and plays the role of the executor for the decisions: a bound gang
starts running, an evicted one loses its work since the last checkpoint and is requeued, a
finished one frees its GPUs. There is no wall clock anywhere.

Cycles run every `cycle_interval` simulated seconds (5 s by default, seed 002), and also at
once after an arrival or completion when `cycle_on_events` is set. A periodic cycle is
skipped when nothing happened since the last one and the profile's decisions do not depend
on time: the core is deterministic, so that cycle would decide nothing — this is what lets a
month of a cluster replay in seconds. Where they do depend on time, a wake is still skipped
at the instant of a cycle that decided nothing, nothing having happened since (`_cycle`).

A job placed task by task (`schedulerName: default`, `TraceJob.gang` False) runs from its
first task; preempt and reclaim may take single tasks from it: it runs on, slower, the task
waits to be placed again, and the work that task did since its last checkpoint is lost and
counted (`Simulator._lose_tasks`).

Each job's record keeps the intervals in which it held GPUs (one per run between evictions,
split where a running gang changes size), and the result keeps each virtual cluster's weight
and guaranteed GPUs, so the metrics can tell what a virtual cluster used within its `min`
and what it borrowed above it. It also keeps the job's total waiting time: every stretch
between submission and finish in which it was not running, the waits after its evictions
included (its queueing delay counts only the first).

Gates (`shoal.scheduler.gates`, as the control loop drives them): a job with
`depends_on` enters the model at the instant its last dependency finishes (they all
succeed here: the simulator fails nothing), not at its arrival; one a stopped dependency can
never start is stopped with it; a held job never enters. A dependency the trace does not
hold (cut by `--limit`) counts as finished.

Checkpoints (issue 17): a job checkpoints every `Job.checkpoint_interval` seconds — its own
`spec.checkpointInterval`, else the work model's interval (`--checkpoint`), which the
simulator writes onto the jobs it hands the scheduler, so that victims are chosen by the
work the simulator will take from them (`shoal.scheduler.work_lost`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from shoal.api.decisions import Decisions
from shoal.api.flavors import ResourceFlavor
from shoal.api.lifecycle import JobState
from shoal.api.objects import Job, Node, PriorityClass, VirtualCluster
from shoal.api.time_limits import deadline
from shoal.core.usage import UsageLedger
from shoal.scheduler.framework import TimeDependent
from shoal.scheduler.gates import Gate, Gates
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.plugins.usage import NAME as USAGE
from shoal.scheduler.plugins.usage import usage_half_life
from shoal.scheduler.profile import Profile
from shoal.scheduler.session import Hooks, Session
from shoal.scheduler.usage_rates import UsageRates
from shoal.sim.collector import long_lived_heap
from shoal.sim.engine import Event, EventKind, EventQueue
from shoal.sim.job_runs import DrivenJobs, JobRun, LostTasks
from shoal.sim.result import HeldInterval, JobRecord, Sample, SimResult
from shoal.sim.trace import Trace, TraceJob
from shoal.sim.work import WorkModel


class ClusterLike(Protocol):
    """What the simulator needs of a cluster description."""

    @property
    def nodes(self) -> Sequence[Node]: ...

    @property
    def virtual_clusters(self) -> Sequence[VirtualCluster]: ...

    @property
    def priority_classes(self) -> Sequence[PriorityClass]: ...


_RELEASING = frozenset({EventKind.COMPLETION, EventKind.NODE_DOWN})
"""Events that stop running tasks outside a cycle."""


def _resource_flavors(cluster: ClusterLike) -> Sequence[ResourceFlavor]:
    """The description's resource flavors (`ClusterDescription.resource_flavors`); one
    that does not say declares none."""
    flavors: Sequence[ResourceFlavor] = getattr(cluster, "resource_flavors", ())
    return flavors


@dataclass(frozen=True, slots=True)
class NodeEvent:
    time: float
    node: str
    up: bool


@dataclass(frozen=True)
class SimConfig:
    cycle_interval: float = 5.0
    cycle_on_events: bool = False
    work: WorkModel = field(default_factory=WorkModel)
    node_events: tuple[NodeEvent, ...] = ()
    until: float | None = None
    """Stop before the first event after this simulated time (None: when nothing is left
    to happen). With services in the trace, a job that can never finish — one that needs
    more than a service's quiet hours hold and loses its work at each hand-back — would
    otherwise keep the run going forever."""
    check_invariants: bool = False
    """After every event, check that no node is over-committed and GPU indices agree with
    free counts (raises `InvariantError`); for tests, it costs O(nodes) per event."""


class InvariantError(AssertionError):
    """The simulation reached a state the scheduler must never produce."""


#: Called now and then with (simulated time, jobs finished, jobs in the trace).
Progress = Callable[[float, int, int], None]


class Simulator:
    skips_moot_wakes = True
    """Skip a wake that finds the state the last cycle decided nothing on (`_cycle`); a
    test knob: the replay is the same either way."""

    def __init__(self, trace: Trace, cluster: ClusterLike, profile: Profile,
                 config: SimConfig | None = None, progress: Progress | None = None) -> None:
        self.trace = trace
        self.cluster = cluster
        self.profile = profile
        self.config = config or SimConfig()
        self.progress = progress
        self.model = SchedulerModel(cluster.nodes, cluster.virtual_clusters,
                                    cluster.priority_classes,
                                    resource_flavors=_resource_flavors(cluster))
        # Plugins keep no state from one cycle to the next, so one set serves every cycle.
        plugins = profile.plugins()
        self._hooks = Hooks(plugins)
        self._actions = profile.actions()
        clocked = [p for p in plugins if getattr(p, "time_dependent", False)]
        self._time_dependent = bool(clocked)
        # Sleep until the next change by itself only if every time-dependent plugin can say
        # when that is; otherwise cycle every interval while jobs wait.
        self._wakers = [p for p in clocked if isinstance(p, TimeDependent)] \
            if all(isinstance(p, TimeDependent) for p in clocked) else []
        self.events = EventQueue()
        self.runs = {j.name: JobRun(j, j.duration) for j in trace.jobs}
        # The simulator knows every job's duration: that is the runtime estimate the
        # estimate-based policies (SJF, EASY backfill) get, an oracle as in the literature.
        # A job checkpoints at its own interval, else at the work model's (module text); a
        # service never ends: it has no runtime estimate.
        every = self.config.work.checkpoint_interval
        self._checkpoint = every if every is not None and every > 0 else None
        self._gangs = DrivenJobs(self._driven, self.runs)
        self._endless = any(j.service is not None for j in trace.jobs)
        """Services never end and wake the scheduler at their windows forever: the run ends
        once every other job has (`_done`)."""
        self._gates = Gates()
        """Jobs that arrived and wait for their dependencies (or are held)."""
        never = _never_run(trace.jobs)
        self._ending = sum(1 for j in trace.jobs if j.service is None and j.name not in never)
        self._arrived = 0
        self.capacity_gpus = sum(n.allocatable_resources.gpu for n in cluster.nodes)
        self._samples: list[tuple[float, int, int, int]] = []
        """(time, busy GPUs, queued jobs, running jobs), as the `Sample`s of the result will
        hold them: plain tuples of numbers, which the garbage collector stops tracking, while
        the replay runs (there is one for every other event); samples at the end."""
        self.finished = 0
        self.running = 0
        self._dirty = False
        self._tick_at: float | None = None
        self._cycle_now_at: float | None = None
        self._moot_at: float | None = None
        """The instant of the last cycle, where it decided nothing and left nothing due
        (`_cycle`); None otherwise."""
        # Decayed usage per virtual cluster and user (issue 17), on the simulated clock.
        # Charging walks the live jobs, so it is kept only where the profile reads it.
        self._charges_usage = USAGE in profile.plugin_names()
        self._usage_rates = UsageRates()
        """Each job's charge per second (`_charge_usage`), kept from one charge to the next."""
        self.model.usage = UsageLedger(usage_half_life(profile))

    def _driven(self, j: TraceJob) -> Job:
        """The job the scheduler is handed for `j` (a job with a time limit runs for its
        duration or its limit, whichever is shorter)."""
        return j.to_driven_job(
            None if j.service is not None else
            j.duration if j.time_limit is None else min(j.duration, j.time_limit),
            j.checkpoint_interval or self._checkpoint)

    # ---- the loop -------------------------------------------------------------------------

    def run(self) -> SimResult:
        arrival = EventKind.ARRIVAL
        self.events.push_all((float(j.submit_time), arrival, j.name) for j in self.trace.jobs)
        for change in self.config.node_events:
            self.events.push(change.time, EventKind.NODE_UP if change.up else
                             EventKind.NODE_DOWN, change.node)
        # The records are built while the replay's heap is still frozen too: made after,
        # their allocations set off collections that walk the whole replay's heap again.
        with long_lived_heap():
            self._replay()
            if self.progress is not None:
                self.progress(self._samples[-1][0] if self._samples else 0.0, self.finished,
                              len(self.trace.jobs))
            return self._result()

    def _replay(self) -> None:
        total = len(self.trace.jobs)
        until = math.inf if self.config.until is None else self.config.until
        while self.events:
            if (self.events.peek_time() or 0.0) > until:
                break
            event = self.events.pop()
            if not self._play(event):
                continue
            if self.progress is not None and self.events.processed % 5000 == 0:
                self.progress(event.time, self.finished, total)
            if self._done():
                break

    def _play(self, event: Event) -> bool:
        """Carry out one event at its instant; False for a stale one (the completion of an
        attempt that is no more), which changes nothing."""
        now = event.time
        self.model.now = now  # what the model does between cycles is stamped too
        if event.kind in _RELEASING:
            self._charge_usage(now)  # before what runs stops, its last stretch too
        if event.kind is EventKind.ARRIVAL:
            self._arrive(event.subject, now)
        elif event.kind is EventKind.COMPLETION:
            if not self._complete(event.subject, event.version, now):
                return False
        elif event.kind is EventKind.CYCLE:
            self._cycle(now)
        else:
            self._node_change(event.subject, event.kind is EventKind.NODE_UP, now)
        if self.events.peek_time() != now:
            self._sample(now)
        if self.config.check_invariants:
            self._check(now)
        return True

    def stop_job(self, name: str, at: float) -> None:
        """The job `name`, which has arrived and not ended, stops at `at` as a user's cancel
        would stop it: waiting, it leaves the queue; running, it frees what it holds at once
        and keeps the GPU-seconds it used."""
        run = self.runs[name]
        self.model.now = at
        self._charge_usage(at)
        run.advance(at)
        if run.running:
            self.running -= 1
        run.running = False
        run.held_gpus = 0
        run.started.clear()
        run.version += 1  # its completion event is stale now
        run.end = at
        if name in self.model.jobs:
            self.model.remove_job(name)
        self._gates.forget(name)
        self._gated_ended(name, JobState.CANCELLED, at)
        self._changed(at)

    def _done(self) -> bool:
        """With services in the trace: every job has arrived and every one but the
        services has ended (what is left to happen is their windows, forever)."""
        return self._endless and self._arrived == len(self.trace.jobs) \
            and self.finished == self._ending

    def _changed(self, now: float) -> None:
        """Something the scheduler should look at happened at `now`."""
        self._dirty = True
        if self.config.cycle_on_events:
            if self._cycle_now_at != now:
                self._cycle_now_at = now
                self.events.push(now, EventKind.CYCLE)
        else:
            self._schedule_tick(now)

    def _schedule_tick(self, at: float) -> None:
        """Make sure a periodic cycle runs at the first tick at or after `at`."""
        interval = self.config.cycle_interval
        tick = math.ceil(at / interval) * interval
        if self._tick_at is not None and self._tick_at <= tick:
            return  # an earlier tick is already due
        self._tick_at = tick
        self.events.push(tick, EventKind.CYCLE)

    def _cycle(self, now: float) -> None:
        if self._tick_at == now:
            self._tick_at = None
        if not self._dirty and not (self._time_dependent and self.model.waiting):
            return
        if not self._dirty and self._moot_at == now and self.skips_moot_wakes:
            # A wake due at an instant that a cycle already ran at (wakes are pushed again by
            # every cycle before them), that decided nothing, and nothing happened since:
            # the same state at the same instant decides the same nothing, and would ask for
            # the wake already due. Under las with a backlog a third of the cycles are these.
            return
        self._dirty = False
        self._charge_usage(now)
        # Only the decisions are read (`decide`): reasons need not be worded.
        session = Session(self.model, self._hooks, worded=False)
        for action in self._actions:
            action.execute(session)
        decisions = session.decide()
        self._apply(decisions, now)
        self._moot_at = None if decisions.changes_anything() else now
        if session.regrow_at is not None:
            # Elastic jobs grow a step per cycle, after their cooldown: a cycle then.
            self._dirty = True
            self._schedule_tick(max(session.regrow_at, now + self.config.cycle_interval))
        if self.model.holds.expiry:
            # Kept flexible parts go back when their idle time is up: a cycle then.
            self._dirty = True
            self._schedule_tick(min(self.model.holds.expiry.values()))
        if self._time_dependent and self.model.waiting:
            self._wake_for_time(session, now)
        session.release()

    def _charge_usage(self, now: float) -> None:
        """Charge the usage ledger for what ran up to `now` (once per instant)."""
        if self._charges_usage and self.model.usage.at != now:
            self.model.usage = self.model.usage.charged_rates(
                self._usage_rates.running(self.model.jobs.values()), now)

    def _wake_for_time(self, session: Session, now: float) -> None:
        """With jobs waiting under a time-dependent profile, the next cycle is due when the
        ordering can next change by itself: the earliest `next_change` of the plugins that
        tell it, else one interval on."""
        interval = self.config.cycle_interval
        soonest = now + interval
        due = self._tick_at
        if due is not None and due <= math.ceil(soonest / interval) * interval:
            # A tick is due no later than any this could ask for (an eviction's, at once):
            # what the plugins would say cannot move it (`_schedule_tick`).
            return
        if self._wakers:
            changes = [w.next_change(session) for w in self._wakers]
            known = [c for c in changes if c is not None]
            if not known:
                return  # nothing changes by itself: the next event will wake the scheduler
            soonest = max(soonest, min(known))
        self._schedule_tick(soonest)

    # ---- the executor -----------------------------------------------------------------------

    def _arrive(self, name: str, now: float) -> None:
        self._arrived += 1
        self.runs[name].last = now
        job = self._gangs[name]
        if job.depends_on or job.held:
            verdict = self._gates.admit(job, self._state_of)
            if verdict.gate is Gate.CANCEL:
                self.stop_job(name, now)
            if verdict.gate is not Gate.OPEN:
                return
        self.model.add_job(job)
        self._changed(now)

    def _state_of(self, name: str) -> JobState | None:
        """A dependency's state as the gates read it (one outside the trace: finished)."""
        run = self.runs.get(name)
        if run is None:
            return JobState.SUCCEEDED
        if run.end is not None:
            return JobState.SUCCEEDED if run.remaining <= 0 else JobState.CANCELLED
        return JobState.RUNNING if run.running else JobState.PENDING

    def _gated_ended(self, name: str, state: JobState, now: float) -> None:
        """Job `name` ended: what waited on it enters the model now, or is stopped."""
        if not self._gates:
            return  # nothing waits on a dependency or is held: there is nothing to resolve
        resolution = self._gates.ended(name, state)
        for opened in resolution.opened:
            self.runs[opened].last = now
            self.model.add_job(self._gangs[opened])
        for cancelled, _ in resolution.cancelled:
            run = self.runs[cancelled]
            run.advance(now)
            run.version += 1
            run.end = now

    def _apply(self, decisions: Decisions, now: float) -> None:
        touched: dict[str, JobRun] = {}
        # Per job, the tasks evicted from it: a job placed task by task may run on without.
        lost: dict[str, LostTasks] = {}
        for evict in decisions.evictions:
            run = self.runs[evict.task.job]
            run.advance(now)
            gpus = self._gangs[run.spec.name].group(evict.task.group).resources.gpu
            taken = lost.setdefault(run.spec.name, LostTasks(run.held_gpus, run.rate))
            taken.tasks.append((gpus, run.started.pop(evict.task, run.run_start)))
            run.held_gpus -= gpus
            touched[run.spec.name] = run
        for bind in decisions.binds:
            run = self.runs[bind.task.job]
            run.advance(now)
            run.held_gpus += bind.resources.gpu
            run.started[bind.task] = now
            touched[run.spec.name] = run
        for name, run in touched.items():
            info = self.model.jobs[name]
            if not info.gang_met:
                if run.running or info.holding:
                    self._evict_whole(run, now)
            else:
                gone = lost.get(name)
                if gone is not None and run.running and not info.job.gang:
                    self._lose_tasks(run, gone, now)
                self._restart_clock(run, now)
        if decisions.evictions:
            self._changed(now)

    def _restart_clock(self, run: JobRun, now: float) -> None:
        """The job runs on what it holds now: (re)compute its rate and its completion."""
        if not run.running:
            run.running = True
            self.running += 1
            run.run_start = now
            run.run_progress = 0.0
            run.run_used_at_start = run.gpu_seconds_used
            run.waited += now - (run.spec.submit_time if run.stopped is None else run.stopped)
            if run.first_start is None:
                run.first_start = now
        spec = run.spec
        run.rate = self.config.work.rate(spec.model, spec.gpus, run.held_gpus)
        run.version += 1
        finish = now + (run.remaining / run.rate if run.rate > 0 else math.inf)
        # Its run ends at its time limit if it would run past it (`shoal.api.time_limits`).
        limit = deadline(self._gangs[spec.name], run.started.values())
        run.timed_out = limit is not None and limit < finish
        if limit is not None:
            finish = min(finish, limit)
        if math.isfinite(finish):
            self.events.push(finish, EventKind.COMPLETION, spec.name, run.version)

    def _lose_tasks(self, run: JobRun, taken: LostTasks, now: float) -> None:
        """Single tasks of a job placed task by task were evicted and it runs on without
        them (issue 16's task-level eviction): what each did since its last checkpoint is
        lost, as a whole job's run is (`_evict_whole`). A task's share of the job's progress
        is its GPUs' share at the job's rate when it was evicted — the work model knows the
        job's rate, not each task's. Its service moves to the job's attained service (the
        running tasks no longer count it), and out of this run's tally, which a later
        eviction of the whole job would otherwise count twice. Elastic surplus taken from a
        gang costs no work (a resize, `shoal.sim.trace`) and does not come here."""
        info = self.model.jobs[run.spec.name]
        per_gpu = taken.rate / taken.held if taken.held > 0 else 0.0
        service = 0.0
        for gpus, started in taken.tasks:
            ran_for = now - max(started, run.run_start)
            if ran_for <= 0:
                continue
            kept = self.config.work.kept_on_eviction(ran_for, info.job.checkpoint_interval)
            work = min(run.run_progress, (ran_for - kept) * per_gpu * gpus)
            run.run_progress -= work
            run.remaining += work
            run.gpu_seconds_lost += gpus * (ran_for - kept)
            service += gpus * ran_for
        run.run_used_at_start += service
        info.job = replace(info.job,
                           attained_gpu_seconds=info.job.attained_gpu_seconds + service)
        info.note_change()
        run.preemptions += 1

    def _evict_whole(self, run: JobRun, now: float) -> None:
        """A gang below its minimum cannot run: stop every task, keep the checkpointed work,
        requeue it."""
        info = self.model.jobs[run.spec.name]
        for task in list(info.running):
            self.model.release_task(task.ref)
        if run.running:
            # Callers have advanced the run to `now`.
            ran_for = now - run.run_start
            run_used = run.gpu_seconds_used - run.run_used_at_start
            # The service this run had stays with the job (least attained service counts it).
            info.job = replace(info.job,
                               attained_gpu_seconds=info.job.attained_gpu_seconds + run_used)
            info.note_change()
            kept_time = self.config.work.kept_on_eviction(ran_for, info.job.checkpoint_interval)
            run.remaining += run.run_progress - min(run.run_progress, kept_time * run.rate)
            if ran_for > 0:
                run.gpu_seconds_lost += run_used * (ran_for - kept_time) / ran_for
            self.running -= 1
            run.stopped = now
        run.held_gpus = 0
        run.started.clear()
        run.running = False
        run.version += 1
        run.preemptions += 1
        self._changed(now)

    def _complete(self, name: str, version: int, now: float) -> bool:
        run = self.runs[name]
        if version != run.version or not run.running:
            return False  # rescheduled or evicted since
        run.advance(now)
        if not run.timed_out:
            run.remaining = 0.0
        run.end = now
        run.running = False
        self.running -= 1
        run.held_gpus = 0
        run.started.clear()
        self.model.remove_job(name)
        self.finished += 1
        self._gated_ended(name, JobState.SUCCEEDED, now)
        self._changed(now)
        return True

    def _node_change(self, node: str, up: bool, now: float) -> None:
        if up:
            self.model.uncordon(node)
        else:
            victims = {t.ref.job for info in self.model.jobs.values() for t in info.running
                       if self.model.node(t.node).physical.name == node}
            for name in sorted(victims):
                run = self.runs[name]
                run.advance(now)
                self._evict_whole(run, now)
            self.model.cordon(node)
        self._changed(now)

    def _check(self, now: float) -> None:
        for state in self.model.cluster.states:
            free = (state.cpu, state.memory, state.gpu, *state.extras.values())
            if min(free, default=0) < 0:
                raise InvariantError(f"t={now}: node {state.name} over-committed: {free}")
            # A node's reserved GPUs are free indices that no task may take.
            if state.gpu_free_mask.bit_count() != state.gpu + state.node.reserved.gpu:
                raise InvariantError(f"t={now}: node {state.name} has {state.gpu} free GPUs "
                                     f"but {state.gpu_free_mask.bit_count()} free indices")
        holding = {name for name, info in self.model.jobs.items() if info.running}
        if holding != set(self.model.active) or any(
                self.model.jobs.get(n) is not i for n, i in self.model.active.items()):
            raise InvariantError(f"t={now}: the model's active jobs are not those holding "
                                 f"tasks: {sorted(holding ^ set(self.model.active))}")
        held = sum(r.held_gpus for r in self.runs.values())
        counted = self.model.held_by_tasks().gpu
        if held != counted:
            raise InvariantError(f"t={now}: jobs hold {held} GPUs, the model counts {counted}")

    # ---- results ----------------------------------------------------------------------------

    def _sample(self, now: float) -> None:
        busy = self.model.held_by_tasks().gpu
        running = self.running
        queued = len(self.model.waiting)
        samples = self._samples
        if samples:
            last = samples[-1]
            if last[1] == busy and last[2] == queued and last[3] == running:
                return
        samples.append((now, busy, queued, running))

    def _result(self) -> SimResult:
        # Services never end: they have no completion time to measure, and are left out of
        # the job records; what they hold counts in the samples (`busy_gpus`).
        records = tuple(
            JobRecord(r.spec.name, r.spec.queue, r.spec.gpus, r.spec.duration,
                      r.spec.submit_time, r.first_start, r.end, r.preemptions,
                      r.gpu_seconds_used, r.gpu_seconds_lost,
                      tuple(HeldInterval(*h) for h in r.held),
                      total_wait=None if r.end is None else r.waited,
                      user=r.spec.user, timed_out=r.timed_out)
            for r in self.runs.values() if r.spec.service is None)
        queues = [q for q in self.model.quota if q.parent is not None]
        weights = tuple(sorted((q.name, q.weight) for q in queues))
        mins = tuple(sorted((q.name, q.min.gpu) for q in queues))
        return SimResult(self.profile.name, self.trace.source, self.capacity_gpus, records,
                         tuple(Sample(*s) for s in self._samples), self.events.processed,
                         weights, mins,
                         cycle_interval=(0.0 if self.config.cycle_on_events
                                         else self.config.cycle_interval))


def _never_run(jobs: Sequence[TraceJob]) -> set[str]:
    """The jobs that can never run: held ones, and what depends on them, transitively."""
    never = {j.name for j in jobs if j.held}
    grew = bool(never)
    while grew:
        grew = False
        for job in jobs:
            if job.name not in never and never.intersection(job.depends_on):
                never.add(job.name)
                grew = True
    return never


def simulate(trace: Trace, cluster: ClusterLike, profile: Profile,
             config: SimConfig | None = None, progress: Progress | None = None) -> SimResult:
    return Simulator(trace, cluster, profile, config, progress).run()

