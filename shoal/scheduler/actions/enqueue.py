"""The enqueue action: which waiting jobs may be considered for allocation this cycle.

A job that can never run as the cluster is configured — a task larger than every matching
node, a gang larger than its node pool could hold even when idle, a demand above its virtual
cluster's max — is turned away here with an `Unschedulable` reason instead of being retried
forever. A job that declares `minResources` (seed 004) is let through only when its virtual
cluster could grant them now, as Volcano's enqueue gates a PodGroup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace
from operator import attrgetter
from typing import TYPE_CHECKING

from shoal.api.decisions import PendingKind, PendingReason
from shoal.api.objects import Job, Node, PriorityClass, TaskGroup, VirtualCluster
from shoal.api.resources import PODS, ZERO, Resources, total
from shoal.core.nodes import NodePool, NodeState
from shoal.scheduler.fitting import no_matching_node
from shoal.scheduler.gang_choice import (
    GangNeed,
    has_alternatives,
    least_admission,
    least_request,
    pending_groups,
    preferred,
    room_suffices,
)
from shoal.scheduler.job_classes import job_class
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.registry import Arguments
from shoal.scheduler.session import Hooks, Session

if TYPE_CHECKING:
    from shoal.scheduler.profile import Profile


class EnqueueArguments(Arguments):
    pass


class Enqueue:
    name = "enqueue"

    def __init__(self, arguments: EnqueueArguments) -> None:
        self.arguments = arguments

    def execute(self, session: Session) -> None:
        # Jobs of one shape (queue, gang size, groups) share one verdict.
        verdicts: dict[tuple[object, ...], PendingReason | None] = {}
        # A job class (`shoal.scheduler.job_classes`) determines the shape; its verdict is
        # kept between cycles while the nodes and the quota tree's layout stay.
        by_class = session.model.class_verdicts.under(session.hooks)

        def refusal(job: JobInfo) -> PendingReason | None:
            if job.holding:
                return None
            klass = job_class(session, job)
            if klass is not None and klass in by_class:
                reason = by_class[klass]
            else:
                partial = least_admission(job).floors if job.admits_partially() else None
                shape = (job.account, session.is_gang(job), session.min_tasks(job),
                         job.floors, partial,
                         *((g.name, session.pool_key(g), g.resources,
                            len(job.pending[g.name])) for g in job.groups_with_pending()))
                if shape in verdicts:
                    reason = verdicts[shape]
                else:
                    reason = verdicts[shape] = feasibility(session, job)
                if klass is not None:
                    by_class[klass] = reason
            if reason is None and job.job.min_resources is not None:
                reason = session.allocatable(job.account, job.job.min_resources) or \
                    session.user_allows(job, job.job.min_resources)
            return reason

        def admit(job: JobInfo) -> bool:
            if job.reason is not None:
                return False
            reason = refusal(job)
            if reason is not None:
                job.reason = reason
                return False
            return True

        def admit_filed(job: JobInfo, klass: int) -> bool:
            """`admit` for a job filed in the class line of `klass` (its class, then): it
            holds nothing and declares no `minResources`, so the class's verdict is its."""
            if job.reason is not None:
                return False
            if klass not in by_class:
                return admit(job)
            reason = by_class[klass]
            if reason is not None:
                job.reason = reason
                return False
            return True

        # Judged as far as a reader walks (`shoal.scheduler.admissions`) — all of them now
        # when one declares `minResources`: that verdict reads the quota's usage as it is
        # before anything is placed.
        session.admit_lazily(admit, refusal)
        assert session.admissions is not None
        session.admissions.by_class = admit_filed
        if session.model.waiting.with_min_resources or not session.model.incremental:
            session.settle()


def feasibility(session: Session, job: JobInfo) -> PendingReason | None:
    """Why the job could never start on this cluster, even idle; None if it could. A gang
    could start if *any* choice of its missing tasks could (`shoal.scheduler.gang_choice`);
    the reason given is its first choice's. A job the profile's rules refuse (`JobValid`)
    could never start either."""
    invalid = session.job_valid(job)
    if invalid is not None:
        return invalid
    if job.admits_partially():
        # It may start partially admitted: what its least admission asks (every group's
        # least count as a floor), gang or not.
        need = least_admission(job)
    elif not session.is_gang(job):
        return _tasks_feasibility(session, job)
    else:
        # What it misses (`Session.min_tasks`): succeeded tasks count toward its minimum.
        need = GangNeed.of(session, job, at_least=1)
    wanted = preferred(job, need, session.task_order())
    reason = None
    for group, indices in wanted:
        most = _most_when_idle(session, job, group)
        if most is None:
            reason = no_matching_node(session, group)
            break
        if most < len(indices):
            reason = _too_big(session.pool_for(group),
                              session.virtual_nodes_for(job.account, group), group,
                              len(indices), most)
            break
    if reason is None:
        reason = session.admissible(job.account,
                                    total(g.resources.scale(len(ix)) for g, ix in wanted))
    if reason is None or not has_alternatives(job, need):
        return reason
    counts = [(group.name, _most_when_idle(session, job, group) or 0, pending)
              for group, pending in pending_groups(job)]
    if room_suffices(need, counts) and \
            session.admissible(job.account, least_request(job, need)) is None:
        return None
    return reason


def _tasks_feasibility(session: Session, job: JobInfo) -> PendingReason | None:
    """A job placed task by task: each group's next task must fit alone, and be grantable
    alone, not all of them together."""
    for group in job.groups_with_pending():
        most = _most_when_idle(session, job, group)
        if most is None:
            return no_matching_node(session, group)
        if most < 1:
            return _too_big(session.pool_for(group),
                            session.virtual_nodes_for(job.account, group), group, 1, most)
    for group in job.groups_with_pending():
        reason = session.admissible(job.account, group.resources)
        if reason is not None:
            return reason
    return None


def _most_when_idle(session: Session, job: JobInfo, group: TaskGroup) -> int | None:
    """How many replicas of the group the idle cluster holds on its pool and the job's
    virtual nodes; None when no node matches at all."""
    pool = session.pool_for(group)
    own = session.virtual_nodes_for(job.account, group)
    if not pool.nodes and not own:
        return None
    if group.resources.is_zero():
        # Only task limits (capacity.pods) bound best-effort tasks.
        pending = len(job.pending.get(group.name, ()))
        return min(pending, _replicas_when_idle([*pool.nodes, *own], ZERO, pending))
    cache = session.cluster.idle_replicas
    key = (pool.key, group.resources)
    most = cache.get(key)
    if most is None:
        most = cache[key] = _replicas_when_idle(pool.nodes, group.resources)
    return most + _replicas_when_idle(own, group.resources)


def _replicas_when_idle(nodes: Sequence[NodeState], request: Resources, unbounded: int = 0
                        ) -> int:
    """`unbounded`: what a node counts for a zero request when it has no task limit."""
    count = 0
    for state in nodes:
        alloc = state.allocatable
        if request.fits(alloc):
            most = min((alloc.get(d) // v for d, v in request.items()), default=unbounded)
            count += min(most, alloc.get(PODS)) if state.pod_limited else most
    return count


def _too_big(pool: NodePool, own: Sequence[NodeState], group: TaskGroup, wanted: int,
             most: int) -> PendingReason:
    """`own`: the job's virtual nodes that match the group, which may be the only ones."""
    request = group.resources
    states = [*pool.nodes, *own]
    count = len(states)
    where = f"{count} matching node{'s' if count != 1 else ''}"
    if most == 0:
        largest = max((s.allocatable for s in states),
                      key=lambda a: tuple(a.get(d) for d, _ in request.items()), default=ZERO)
        shortfall = request.shortfall(largest)
        return PendingReason(
            PendingKind.UNSCHEDULABLE,
            f"task group {group.name!r} asks {request} per task, more than any of the {where} "
            f"has (largest allocatable: {largest})", resource=shortfall[0] if shortfall else None)
    return PendingReason(
        PendingKind.UNSCHEDULABLE,
        f"task group {group.name!r} needs {wanted} × {request} at once, but its {where} "
        f"hold at most {most} even when idle", resource=_binding_dimension(states, request))


def _binding_dimension(states: Sequence[NodeState], request: Resources) -> str | None:
    """The dimension that limits the replica count most across the nodes."""
    counts = {d: sum(s.allocatable.get(d) // v for s in states) for d, v in request.items()}
    return min(counts, key=lambda d: (counts[d], d)) if counts else None


def admission_check(job: Job, nodes: Sequence[Node], virtual_clusters: Sequence[VirtualCluster],
                    priority_classes: Sequence[PriorityClass] = (),
                    profile: Profile | None = None,
                    scoped: Sequence[VirtualCluster] = ()) -> PendingReason | None:
    """Why `job` could never run on this cluster, judged on an idle copy of it; None if it
    could. For rejecting an impossible job at submission instead of leaving it waiting.
    `scoped`: as for `AdmissionCheck.__call__`."""
    return AdmissionCheck(nodes, virtual_clusters, priority_classes, profile)(job, scoped)


class AdmissionCheck:
    """`admission_check` for many jobs against one cluster: the idle model, the plugins and
    the per-shape replica bounds are built once and kept, and each job is added to the model
    for its check and removed after, which leaves the model idle again. Building them cost
    more than the check itself, and an API server checks every submission.

    One check at a time: a caller with several threads serialises its calls.

    Cordoned nodes count as schedulable here: a cordon is an admin's pause (a drain, a
    repair), so a job that fits only there waits for the uncordon instead of being refused,
    as Kubernetes and Slurm keep such work pending."""

    def __init__(self, nodes: Sequence[Node], virtual_clusters: Sequence[VirtualCluster],
                 priority_classes: Sequence[PriorityClass] = (),
                 profile: Profile | None = None) -> None:
        from shoal.scheduler.model import SchedulerModel
        from shoal.scheduler.profile import Profile as Profiles

        uncordoned = [n if n.schedulable else replace(n, schedulable=True) for n in nodes]
        self._model = SchedulerModel(uncordoned, virtual_clusters, priority_classes)
        self._model.reserve()  # on the idle cluster, every VC's fixed-size nodes are carved
        self._hooks = Hooks((profile or Profiles.default()).plugins())
        self._feasible: set[str] = set()
        """The shapes (`_shape`) of jobs found feasible: the same answer for the next job of
        that shape without adding it to the model (a burst is mostly one shape)."""

    def __call__(self, job: Job, scoped: Sequence[VirtualCluster] = ()) -> PendingReason | None:
        """`scoped`: the job-scoped virtual clusters on the path to the job's queue (a job
        submitted into another job's own virtual cluster or one of its sub-clusters),
        parents first; they join the idle model for this check only. Their fixed-size nodes
        are left out: a job in them is judged on their flexible resources."""
        key = _shape(job) if not scoped else None
        if key is not None and key in self._feasible:
            return None
        added = [vc.name for vc in scoped if vc.name not in self._model.quota.queues]
        for vc in scoped:
            if vc.name in added:
                self._model.quota.add(replace(vc, fixed_size_nodes=()))
        try:
            reason = self._check(job)
        finally:
            for name in reversed(added):
                self._model.quota.remove(name)
        if reason is None and key is not None:
            if len(self._feasible) >= FEASIBLE_SHAPES:
                self._feasible.clear()
            self._feasible.add(key)
        return reason

    def _check(self, job: Job) -> PendingReason | None:
        info = self._model.add_job(job)
        try:
            if info.blocker is not None and info.blocker.kind is not PendingKind.RESERVATION:
                return info.blocker
            # The session creates the job's own virtual cluster and carves its fixed-size
            # nodes on this idle copy; what cannot be done here can never be done.
            session = Session(self._model, self._hooks)
            if info.blocker is not None:
                return PendingReason(PendingKind.UNSCHEDULABLE,
                                     f"{info.blocker.message}, even on the idle cluster",
                                     queue=info.blocker.queue)
            return feasibility(session, info)
        finally:
            self._model.remove_job(job.name)


FEASIBLE_SHAPES = 1024
"""How many feasible shapes an `AdmissionCheck` remembers (then it starts afresh)."""


def _shape(job: Job) -> str | None:
    """What an admission check of `job` reads, its name and submission time left out — two
    jobs of one shape get one answer; None for a job whose check reads its name or other
    jobs (its own virtual cluster, sub-clusters, dependencies), which is not remembered."""
    if job.virtual_cluster is not None or job.sub_clusters or job.depends_on or job.tasks:
        return None
    return repr(_SHAPE_FIELDS(job))


_SHAPE_FIELDS = attrgetter(*(f.name for f in fields(Job) if f.name not in ("name", "submitted")))
"""Every field of a job but its name and submission time, as one tuple: its repr is the
shape — what the job's repr says of them, without a copy of the job made to blank the two
(the copy cost as much as the repr; a submission's admission check computes one)."""
