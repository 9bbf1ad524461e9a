"""The scheduler's model of the cluster: node capacity, the quota tree and every live job's
working state, kept *between* cycles by drivers that can tell it what changed.

A cycle needs the whole picture, but little of it changes between two cycles. Rebuilding it
from a snapshot each time costs O(nodes + jobs + tasks); the simulator replays tens of
thousands of events and cannot afford that. So a driver may keep one `SchedulerModel` and
report deltas (a job arrived, a task ended, a node went down); binds a cycle commits are
already in the model when the cycle returns, as Volcano's cache "assumes" a bind. The model
is plain data with no I/O or clock; `from_snapshot` builds the same model from scratch, and
`run_cycle(snapshot)` is exactly a cycle over a fresh model.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

from shoal.api.decisions import PendingKind, PendingReason, Reserve
from shoal.api.flavors import ResourceFlavor, flavor_part, unflavored
from shoal.api.objects import (
    ROOT_QUEUE,
    Job,
    Node,
    PriorityClass,
    QueueingPolicy,
    Task,
    TaskRef,
    VirtualCluster,
    job_of_virtual_cluster,
    job_virtual_cluster,
)
from shoal.api.resources import ZERO, Resources, total
from shoal.core.nodes import ClusterState, FitMemo, NodeState
from shoal.core.quota import QuotaTree
from shoal.core.snapshot import PriorityTable, Snapshot, SnapshotError
from shoal.core.usage import NO_USER, Holding, UsageLedger
from shoal.core.user_quota import UserQuota
from shoal.core.virtual_nodes import unplaceable
from shoal.scheduler.class_lines import ClassLines
from shoal.scheduler.flavors import FlavorBook
from shoal.scheduler.flexible import FlexibleHolds
from shoal.scheduler.job_changes import JobChanges
from shoal.scheduler.job_classes import ClassVerdicts
from shoal.scheduler.jobs import JobInfo, TaskInfo
from shoal.scheduler.noted_reasons import KeptNotes
from shoal.scheduler.owned_work import OwnedWork
from shoal.scheduler.queue_status import ClosedQueues, closed_reason
from shoal.scheduler.reservations import FixedNodeReservations
from shoal.scheduler.shadow import ShadowTimes
from shoal.scheduler.waiting import WaitingJobs


class SchedulerModel:
    def __init__(self, nodes: Iterable[Node], virtual_clusters: Iterable[VirtualCluster] = (),
                 priority_classes: Iterable[PriorityClass] = (), now: float = 0.0,
                 held_on_cordoned: Resources | None = None,
                 resource_flavors: Iterable[ResourceFlavor] = ()) -> None:
        vc_list = list(virtual_clusters)
        self.flavors = FlavorBook(resource_flavors, vc_list)
        """Resource flavors: nodes count in their flavors' dimensions too, and a job of a
        virtual cluster with `flavors` is shown to cycles on the flavor it runs on or would
        be admitted on (`shoal.scheduler.flavors`)."""
        node_list = self.flavors.nodes(nodes)
        self.now = now
        self.priorities = PriorityTable(priority_classes)
        self.cluster = ClusterState(node_list)
        capacity = total(n.allocatable_resources for n in node_list if n.schedulable)
        self.quota = QuotaTree(vc_list, capacity + (held_on_cordoned or ZERO))
        self.reservations = FixedNodeReservations(self.cluster, self.quota, vc_list)
        """Virtual clusters' fixed-size nodes: carved (restored from their recorded carving
        before any task is counted) or queued."""
        self.holds = FlexibleHolds(self.cluster, self.quota)
        """Flexible parts kept for their virtual cluster after its tasks there ended."""
        for vc in vc_list:
            self.holds.set_timeout(vc.name, vc.idle_timeout)
        self.fit_memo = FitMemo(self.cluster)
        """Fit bounds survive cycles: they expire only when capacity is released."""
        self.jobs: dict[str, JobInfo] = {}
        """Every live job, in (submission, name) order of arrival in the model."""
        self.waiting = WaitingJobs()
        """Jobs with tasks still to place (also in submission order)."""
        self.class_verdicts = ClassVerdicts(self.cluster, self.quota)
        self.class_lines = ClassLines(self)
        """The waiting jobs filed per virtual cluster and job class, in job order."""
        """The enqueue action's verdicts per job class, kept between cycles."""
        self.incremental = True
        """Whether cycles over this model do only what changed: judge admissions lazily,
        skip job classes known not to fit, reset only the reasons that were written. False
        makes every cycle judge every waiting job afresh — the same decisions, which the
        property tests check (tests/property/test_incremental.py)."""
        self.noted: set[JobInfo] = set()
        """Jobs whose reason or blocker was written since a cycle last reset reasons: the
        only ones a cycle's start must reset (`JobInfo.noted`)."""
        self.closed_queues = ClosedQueues()
        """The closed virtual clusters, kept per tree layout (`queue_status.ClosedQueues`)."""
        self.kept_notes = KeptNotes()
        """The noted jobs a reset left noted, not waiting (`shoal.scheduler.noted_reasons`)."""
        self.services: dict[str, JobInfo] = {}
        """The live jobs that are services with a schedule (`Job.service`): what the
        services action sizes, without a walk over every job."""
        self.elastic: dict[str, JobInfo] = {}
        """The live jobs with an elastic group: what the elastic action may resize, without
        a walk over every job."""
        self.active: dict[str, JobInfo] = {}
        """The live jobs that hold tasks (`JobInfo.running` not empty): what the preempt
        action's running table and las's `next_change` read, without a walk over every
        waiting job (under backlog they outnumber the running ones tenfold)."""
        self.shadows = ShadowTimes()
        """What EASY backfill's shadow time reads, kept (`shoal.scheduler.shadow`)."""
        self.changes = JobChanges()
        """The jobs whose running list, spec or account changed, latest last
        (`shoal.scheduler.job_changes`): what the kept running table and las's crossing
        heap re-read, instead of every running job each cycle."""
        self.activations = 0
        """How many times a job started holding tasks (`JobInfo.activated`)."""
        self.unblocked = True
        """Since `settled()`: capacity was given back, a node came back, or a job stopped
        wanting placements — anything that may let a job that waited be placed."""
        self.unmade: dict[str, JobInfo] = {}
        """Jobs whose own virtual cluster is not created yet, in arrival order."""
        self.sub_clusters: dict[str, list[str]] = {}
        """A job's own virtual cluster → the sub-clusters its tasks created in it, in order."""
        self.retiring: set[str] = set()
        """Own virtual clusters of jobs that left while jobs still live in their trees."""
        self.owned = OwnedWork()
        """Live jobs filed by the job whose virtual cluster they named (`owned_work`)."""
        self.arrivals: list[JobInfo] = []
        """Jobs added since `settled()`; kept only while nothing is unblocked (they matter
        only then), so a driver that never settles — the simulator — keeps none."""
        self.users = UserQuota(vc_list)
        """What each user's running tasks hold in each virtual cluster with a `maxPerUser`
        (issue 17), kept with every task that starts or stops holding (`JobInfo.tally`)."""
        self.usage = UsageLedger()
        """Decayed usage per virtual cluster and user (`shoal.core.usage`): the driver's,
        charged and handed in by it before each cycle; read by the `usage` plugin."""

    @staticmethod
    def from_snapshot(snapshot: Snapshot) -> SchedulerModel:
        cordoned = {n.name for n in snapshot.nodes if not n.schedulable}
        # Tasks still running on cordoned nodes are charged to their queues, so the root must
        # count the capacity they hold or it would look over-committed.
        held = total(job.group(task.group).resources for job in snapshot.jobs
                     if not job.state.terminal for task in job.tasks
                     if task.state.holds_resources and task.node in cordoned)
        model = SchedulerModel(snapshot.nodes, snapshot.virtual_clusters,
                               snapshot.priority_classes, snapshot.now, held,
                               snapshot.resource_flavors)
        model.usage = snapshot.usage
        model.add_jobs(snapshot.jobs)
        return model

    # ---- deltas ---------------------------------------------------------------------------

    def add_jobs(self, jobs: Iterable[Job]) -> None:
        """Add jobs and charge the tasks they already hold. Recorded GPU indices are claimed
        first, so a task recorded without indices never takes one another task holds."""
        holdings: list[tuple[JobInfo, Task]] = []
        for job in sorted(jobs, key=lambda j: (j.submitted, j.name)):
            if job.state.terminal:
                continue
            if job.name in self.jobs:
                raise SnapshotError(f"job {job.name!r} is already in the model")
            info = self._info(job)
            holding = [t for t in job.tasks if t.state.holds_resources]
            if holding and self.flavors.queues:
                self.flavors.running(info, (self.cluster.by_name[t.node].node.labels
                                            for t in holding if t.node in self.cluster.by_name))
            if job.virtual_cluster is not None and info.queue == job.queue:
                if job_virtual_cluster(job.name) not in self.retiring and (
                        holding or job.virtual_cluster.reservation is not None
                        or job.sub_clusters):
                    # It was created before: restored before any task is counted, its tasks
                    # charged to it.
                    self._make_virtual_cluster(info)
                else:
                    self.unmade[job.name] = info
                    info.blocker = _unmade(info, "not created yet")
            holdings.extend((info, t) for t in holding)
            self.jobs[job.name] = info
            self.owned.add(info)
            if job.service is not None and job.service.schedule:
                self.services[job.name] = info
            if job.elastic is not None:
                self.elastic[job.name] = info
            if info.pending:
                self.waiting[job.name] = info
                if not self.unblocked:
                    self.arrivals.append(info)
        holdings.sort(key=lambda h: not h[1].gpus)
        for info, task in holdings:
            if task.node not in self.cluster.by_name:
                raise SnapshotError(f"task {task.ref} holds resources on unknown node "
                                    f"{task.node!r}")
            request = info.job.group(task.group).resources
            state = self._home(info.account, self.cluster.by_name[task.node], task, request)
            gpus = self.cluster.take(state, request, _claimable(state, task, request))
            if state.owner is None:
                self.quota.charge(info.account, request)
                if not state.node.schedulable:
                    # As `held_on_cordoned` counts its resources at the root: its flavor's
                    # too (the driver, which knows no flavors, could not).
                    self.quota.set_capacity(self.quota.capacity + flavor_part(request))
            info.running.append(TaskInfo(task.ref, state.name, gpus, task.state, task.started))
            self.activate(info)
            info.hold(task.group, 1)

    def _home(self, queue: str, state: NodeState, task: Task, request: Resources
              ) -> NodeState:
        """Where a running task recorded on physical node `state` is counted: on a virtual
        node of its VC carved from that node, if one can hold it (its recorded GPUs among
        that virtual node's), else on the node's flexible part."""
        for virtual in self.reservations.on(queue):
            if virtual.host is state and virtual.fits(request) and \
                    _holds(virtual.gpu_free_mask, task.gpus, request.gpu):
                return virtual
        return state

    def activate(self, info: JobInfo) -> None:
        """The job was given a task: it is active (listed last, where it was not), and its
        running list changed."""
        active = self.active
        if info.job.name not in active:
            self.activations += 1
            info.activated = self.activations
            active[info.job.name] = info
        info.note_change()

    def add_job(self, job: Job) -> JobInfo:
        self.add_jobs((job,))
        return self.jobs[job.name]

    def remove_job(self, name: str) -> None:
        """Forget a job (finished or cancelled), releasing whatever its tasks still hold."""
        info = self.jobs.pop(name)
        self.owned.remove(info)
        self.waiting.pop(name, None)
        self.noted.discard(info)
        self.kept_notes.forget(info)
        self.services.pop(name, None)
        self.elastic.pop(name, None)
        self.flavors.forget(name)
        self.unmade.pop(name, None)
        self.unblock()  # a strict-FIFO head that leaves unblocks the jobs behind it
        for task in list(info.running):
            self._release(info, task)
        if info.account != info.queue:  # its own virtual cluster goes with it
            self._retire(info.account)
        owner = job_of_virtual_cluster(info.queue)
        if owner is not None and job_virtual_cluster(owner) in self.retiring:
            self._retire(job_virtual_cluster(owner))

    def add_sub_clusters(self, job: str, sub_clusters: Iterable[VirtualCluster]) -> None:
        """Sub-clusters a running job's tasks created inside its own virtual cluster (seed
        003's nesting), each under that one or an earlier sub-cluster: they join the quota
        tree, owed their guarantee out of their parent's. The API checked that the
        guarantees fit (`shoal.server.sub_clusters`)."""
        own = job_virtual_cluster(job)
        info = self.jobs.get(job)
        if info is None or info.account != own:
            raise SnapshotError(f"job {job!r} has no virtual cluster of its own now")
        for vc in sub_clusters:
            self._add_sub_cluster(own, vc)

    def _add_sub_cluster(self, own: str, vc: VirtualCluster) -> None:
        self.quota.add(vc)
        self.users.add(vc)
        self.holds.set_timeout(vc.name, vc.idle_timeout)
        self.sub_clusters.setdefault(own, []).append(vc.name)
        self.unblock()  # jobs that waited for it (submitted in the same breath) may go

    def _retire(self, own: str) -> None:
        """Remove a departed job's own virtual cluster with its sub-clusters — unless a live
        job is still in one of them (work its tasks submitted, being stopped): then when the
        last of those leaves."""
        tree = {own, *self.sub_clusters.get(own, ())}
        # Only a job filed under the owner can be charged to a queue of its tree.
        owner = job_of_virtual_cluster(own)
        if owner is not None and any(info.queue in tree for info in self.owned.of(owner)):
            self.retiring.add(own)
            return
        self.retiring.discard(own)
        for name in reversed(self.sub_clusters.pop(own, [])):
            self.holds.remove(name)
            self.quota.remove(name)
        self.holds.remove(own)
        self.reservations.remove(own)
        self.quota.remove(own)
        self._refresh_blockers()

    def release_task(self, ref: TaskRef) -> None:
        """A task stopped (ended or evicted): give its resources back; it wants a node
        again unless its job is removed."""
        info = self.jobs[ref.job]
        for task in info.running:
            if task.ref == ref:
                self._release(info, task)
                info.give_back(ref.group, ref.index)
                if info.pending:  # an elastic surplus task is the elastic action's
                    self.waiting[ref.job] = info
                return
        raise KeyError(f"task {ref} holds nothing in the model")

    def finish_task(self, ref: TaskRef) -> None:
        """A task ended for good (succeeded, failed, cancelled): give its resources back
        without wanting it placed again. A task that holds nothing is left alone."""
        info = self.jobs.get(ref.job)
        if info is None:
            return
        for task in info.running:
            if task.ref == ref:
                self._release(info, task)
                info.ended += 1  # it still counts toward the gang minimum (`JobInfo.ready`)
                info.count(ref.group, 1)
                return

    def task_succeeded(self, ref: TaskRef) -> None:
        """A task ended successfully: as `finish_task`, and its job is finishing."""
        self.finish_task(ref)
        info = self.jobs.get(ref.job)
        if info is not None:
            info.succeeded += 1

    def hold_back(self, ref: TaskRef) -> None:
        """Evicted task `ref` still has a process that is stopping: it is not placed again
        until `task_stopped` (the control loop's handover, `shoal.control.handover`). A
        cycle's eviction already gave its resources to others and wanted it again."""
        info = self.jobs.get(ref.job)
        if info is None or not info.wants(ref.group, ref.index):
            return
        info.take(ref.group, ref.index)
        if not info.pending:
            self.waiting.pop(ref.job, None)

    def task_stopped(self, ref: TaskRef) -> None:
        """A held-back task's process is gone: it wants a node again."""
        info = self.jobs.get(ref.job)
        if info is None or info.stopping or info.wants(ref.group, ref.index) \
                or any(t.ref == ref for t in info.running):
            return
        info.give_back(ref.group, ref.index)
        if info.pending:
            self.waiting[ref.job] = info
        self.unblock()

    def withdraw(self, name: str) -> None:
        """The job wants no more tasks placed (it is being stopped); what its tasks hold
        stays held until each one is finished or released."""
        info = self.jobs.get(name)
        if info is not None:
            info.pending.clear()
            info.klass = None
            info.surplus.clear()
            info.stopping = True
            self.waiting.pop(name, None)
            self.unblock()

    def _release(self, info: JobInfo, task: TaskInfo) -> None:
        self.unblock()
        request = info.job.group(task.ref.group).resources
        state = self.cluster.by_name[task.node]
        if state.owner is None and self.holds.keep(info.account, state, request, task.gpus,
                                                   self.now):
            pass  # kept for its virtual cluster's next tasks, still charged to it
        else:
            self.cluster.give(state, request, task.gpus)
            if state.owner is None:
                self.quota.refund(info.account, request)
            else:
                self.holds.touched(state, self.now)
        info.running.remove(task)
        info.note_change()
        if not info.running:
            self.active.pop(info.job.name, None)
        info.hold(task.ref.group, -1)

    def cordon(self, name: str) -> None:
        """Take a node out of service (failed or drained). Its tasks must have been released
        first (those on virtual nodes carved from it included); the reservations with a
        virtual node on it are given back and queue again; its capacity leaves the root of
        the quota tree."""
        state = self.cluster.by_name[name]
        if name in self.cluster.cordoned or not state.node.schedulable:
            return
        if any(self.cluster.by_name[t.node].physical is state
               for info in self.jobs.values() for t in info.running):
            raise SnapshotError(f"node {name} still runs tasks; release them first")
        self.holds.release_on(name)
        if self.reservations.release_on(name):
            self._refresh_blockers()
        self.cluster.set_cordoned(name, True)
        self.reservations.nodes_changed()
        self.quota.set_capacity(self.quota.capacity - state.allocatable)

    def uncordon(self, name: str) -> None:
        state = self.cluster.by_name[name]
        if name not in self.cluster.cordoned:
            return
        self.cluster.set_cordoned(name, False)
        self.reservations.nodes_changed()
        self.quota.set_capacity(self.quota.capacity + state.allocatable)
        self.unblock()

    def reserve(self) -> list[Reserve]:
        """Create the job-scoped virtual clusters whose guarantee their queue can grant now,
        and carve the queued virtual clusters that can be carved now (a cycle does both
        first, before any job takes the capacity); every reservation made or given back
        since the last call. Kept flexible parts whose idle time is up go back first."""
        if self.holds.expiry and self.holds.expire(self.now):
            self.unblock()
        if self.unmade:
            self._make_virtual_clusters()
        if self.reservations.queued:
            reserved, changed = self.reservations.reserve_queued()
            if changed:
                self._refresh_blockers()
            if reserved:
                self.unblock()
        return self.reservations.drain_changes()

    def _refresh_blockers(self) -> None:
        for info in self.jobs.values():
            # A job whose own virtual cluster does not exist keeps the reason why not.
            own_missing = info.job.virtual_cluster is not None and info.account == info.queue
            if info.account in self.reservations.specs and not own_missing:
                info.blocker = self.reservations.blocker(info.account)

    def _make_virtual_clusters(self) -> None:
        """Job-scoped virtual clusters are created in their queue's order (priority, or
        submission under FIFO) when the queue can grant their guarantee — flexible minimum
        and fixed-size nodes — now: from then on it is owed to them, as to any virtual
        cluster. One that cannot be granted waits; smaller ones behind it may go first (as
        jobs do outside strict FIFO)."""
        for info in sorted(self.unmade.values(), key=lambda i: (*_rank(i), i.name)):
            vc = info.job.virtual_cluster
            assert vc is not None
            if job_virtual_cluster(info.name) in self.retiring:  # a job retry's, emptying
                info.blocker = _unmade(info, "its previous one still holds jobs being stopped")
                continue
            closed = closed_reason(self.quota.get(info.queue))
            if closed is not None:  # its guarantee would be admitted into a closed queue
                info.blocker = closed
                continue
            never = self._never(info.queue, vc)
            if never is not None:
                del self.unmade[info.name]
                info.blocker = PendingReason(
                    PendingKind.UNSCHEDULABLE, f"its own virtual cluster can never be created "
                    f"in {info.queue!r}: {never}", queue=info.queue)
                continue
            reason = self.quota.can_grant(info.queue, vc.guaranteed)
            if reason is not None:
                info.blocker = _unmade(info, reason.message)
                continue
            del self.unmade[info.name]
            self._make_virtual_cluster(info)
            self.unblock()

    def _never(self, queue: str, vc: VirtualCluster) -> str | None:
        """Why a job's own virtual cluster could not be created even on the idle cluster."""
        over = self.quota.never_fits(queue, vc.guaranteed)
        if over is not None:
            return f"its guarantee {vc.guaranteed}: {over.message}"
        nodes = [s.node for s in self.cluster.states if s.name not in self.cluster.cordoned]
        bad = unplaceable(vc.fixed_size_nodes, nodes)
        return None if bad is None else f"spec.virtualCluster.{bad[0]}: {bad[1]}"

    def _make_virtual_cluster(self, info: JobInfo) -> None:
        spec = info.job.virtual_cluster
        assert spec is not None
        vc = replace(spec, name=job_virtual_cluster(info.name), parent=info.queue)
        self.quota.add(vc)
        self.reservations.add(vc, _rank(info))
        self.holds.set_timeout(vc.name, vc.idle_timeout)
        info.account = vc.name
        info.note_change()
        info.blocker = self.reservations.blocker(vc.name)
        for sub in info.job.sub_clusters:
            self._add_sub_cluster(vc.name, sub)

    # ---- whether a cycle can place anything --------------------------------------------------

    def unblock(self) -> None:
        """Something may let a waiting job be placed: `cycle_may_place` says yes until the
        next `settled()`."""
        self.unblocked = True
        self.arrivals.clear()

    def settled(self) -> None:
        """The driver ran a cycle that decided nothing: from here on, `cycle_may_place` looks
        only at what happens next."""
        self.unblocked = False
        self.arrivals.clear()

    def cycle_may_place(self) -> bool:
        """False when a cycle now would surely place nothing: the last cycle decided nothing
        (`settled`), nothing has been unblocked since, and no task of a job that arrived
        since fits in any node's free resources. Jobs that waited then wait now: they could
        not be placed then, and since then capacity and quota headroom have only shrunk.

        Sound only for profiles that bind and never evict (evicting could make room for an
        arrival) and whose order does not move with the clock; a driver keeps its periodic
        cycles anyway. The control loop uses it to skip the cycle a submission would trigger
        when the cluster is full: with a thousand jobs queued, that cycle cost more than the
        submission itself. (tests/property/test_cycle_skip.py checks the claim.)"""
        if self.unblocked:
            return True
        states = list(self.cluster.by_name.values())
        return any(state.fits(group.resources) for info in self.arrivals
                   for group in info.job.groups for state in states)

    # ---- reading ----------------------------------------------------------------------------

    def priority(self, job: Job) -> int:
        return self.priorities.priority(job)

    def held_by_tasks(self) -> Resources:
        """What running tasks hold, over the whole cluster. The quota tree's usage, plus
        what tasks hold on fixed-size nodes (outside the tree), less the idle parts kept for
        a virtual cluster (charged to it, but held by no task). O(virtual nodes)."""
        usage = self.quota.root.usage
        if not self.cluster.virtual:
            return usage
        kept = {state.name for state in self.holds.kept.values()}
        on_fixed = total(v.used() for v in self.cluster.virtual.values() if v.name not in kept)
        idle = total(v.free() for v in self.holds.kept.values())
        return (usage + on_fixed).saturating_sub(idle)

    def holdings(self) -> Iterator[Holding]:
        """What every running task holds, for whom (`UsageLedger.charged`)."""
        for info in self.jobs.values():
            user = user_of(info)
            for task in info.running:
                yield Holding(info.queue, user,
                              unflavored(info.job.group(task.ref.group).resources),
                              task.started)

    def user_path(self, queue: str) -> list[str]:
        """The virtual clusters whose `maxPerUser` a task charged to `queue` counts against
        (root first): those on its path."""
        return [q.name for q in self.quota.get(queue).path()]

    def _tally(self, info: JobInfo, group: str, delta: int) -> None:
        # The job's queue, not its account: a job's own virtual cluster comes and goes with
        # it, its queue (which holds it) does not, so a start and a stop count in one place.
        self.users.hold(self.user_path(info.queue), user_of(info),
                        unflavored(info.job.group(group).resources), delta)

    def node(self, name: str) -> NodeState:
        return self.cluster.by_name[name]

    def _info(self, job: Job) -> JobInfo:
        known = job.queue in self.quota.queues and job.queue != ROOT_QUEUE
        queue = job.queue if known else ROOT_QUEUE
        info = JobInfo(job, self.priority(job), queue, self.quota.get(queue).queueing)
        info.noted = self.noted
        info.changes = self.changes
        if self.users:
            info.tally = self._tally
        info.blocker = self.reservations.blocker(queue)
        if not known:
            info.blocker = PendingReason(
                PendingKind.UNSCHEDULABLE, f"virtual cluster {job.queue!r} does not exist",
                queue=job.queue)
        return info


def user_of(info: JobInfo) -> str:
    """Who the job's tasks count for in per-user quotas and usage."""
    return info.job.user or NO_USER


def _claimable(state: NodeState, task: Task, request: Resources) -> tuple[int, ...] | None:
    """The GPU indices a running task holds: its recorded ones, which must be free and exist,
    or None to take the lowest free ones."""
    if not task.gpus:
        if request.gpu > state.gpu_free_mask.bit_count():
            raise SnapshotError(f"node {state.name} has no free GPU index left for task "
                                f"{task.ref}")
        return None
    for index in task.gpus:
        if not state.gpu_free_mask >> index & 1:
            raise SnapshotError(f"task {task.ref} claims GPU {index} on node {state.name}, "
                                "which does not exist or is already held")
    return task.gpus


def _rank(info: JobInfo) -> tuple[float, ...]:
    """A job-scoped virtual cluster's place in line: its job's priority first in a priority
    queue, then its submission."""
    first = -info.priority if info.queueing is QueueingPolicy.PRIORITY else 0
    return (first, info.job.submitted)


def _unmade(info: JobInfo, why: str) -> PendingReason:
    return PendingReason(
        PendingKind.RESERVATION,
        f"its own virtual cluster waits to be created in {info.queue!r}: {why}",
        queue=info.queue)


def _holds(mask: int, gpus: tuple[int, ...], count: int) -> bool:
    """Whether a GPU mask has the recorded indices free, or `count` free when none are."""
    if not gpus:
        return count <= mask.bit_count()
    return all(mask >> index & 1 for index in gpus)
