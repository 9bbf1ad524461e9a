"""Placing a batch of identical replicas, and saying why they do not fit.

`place_replicas` places `count` replicas of one task group inside a statement. Before it
touches a node it asks cheap questions: may the job's user take all of them (`maxPerUser`),
may the virtual cluster (quota), and could the node pool hold them at all (`FitMemo`)?
Only then does it place replica by replica through the node index.

`FitMemo` (in `shoal.core.nodes`) keeps an upper bound on how many replicas of a request fit
in a pool, so a job asking for more fails in O(1): the exact count is computed once per
(pool, request) when a placement fails, not once per waiting job. That is what lets a cycle
turn down ten thousand jobs on a full cluster in well under a second. The count itself is
kept per (pool, request) and redone only for the nodes that changed (`diagnose`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shoal.api.decisions import PendingKind, PendingReason
from shoal.api.objects import TaskGroup, TaskRef
from shoal.api.resources import PODS, Resources
from shoal.core.nodes import FitMemo, NodePool
from shoal.core.statement import Statement
from shoal.scheduler.job_classes import UNWORDED
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.session import Session


def place_replicas(session: Session, memo: FitMemo, statement: Statement, job: JobInfo,
                   group: TaskGroup, indices: list[int], granted: bool = False
                   ) -> PendingReason | None:
    """Place every replica in `indices` inside `statement`, or return why not (and leave the
    statement for the caller to discard). Replicas go to the VC's own virtual nodes first,
    the rest to the flexible part (the physical nodes, under the quota tree). `granted`:
    the quota tree was just found to grant them all (`allocate.allocate_job`), and is not
    asked again."""
    request = group.resources
    if session.model.users:  # else `user_allows` says yes without reading the request
        reason = session.user_allows(job, request.scale(len(indices)))
        if reason is not None:
            return reason
    if session.model.reservations.on(job.account) or session.model.holds.on(job.account):
        indices = _onto_virtual_nodes(session, statement, job, group, indices)
        if not indices:
            return None
    count = len(indices)
    # Only an elastic job has surplus replicas (`JobInfo.is_surplus`).
    surplus = not indices or (job.job.elastic is not None
                              and all(job.is_surplus(group.name, i) for i in indices))
    # Bounds are only trusted (and only recorded) against committed state: a statement that
    # already holds tentative allocations sees less free capacity than the bound describes.
    trusted = statement.empty
    pool = pool_refusal(session, memo if trusted else None, group, count,
                        session.pool_for(group)) if granted and trusted else \
        refusal(session, memo if trusted else None, job.account, group, count,
                request.scale(count), surplus)
    if not isinstance(pool, NodePool):
        return pool
    for placed, index in enumerate(indices):
        node = session.pick_node(pool, request)
        if node is None:
            # Once this call has placed a replica the state is tentative: say how many fit
            # counting those, but learn no bound from it (the statement may be discarded).
            return insufficient(session, pool, group, count,
                                memo if trusted and placed == 0 else None, already=placed)
        statement.allocate(TaskRef(job.name, group.name, index), job.account, node, request)
    if trusted:
        statement.consume(memo, pool, request, count)
    return None


def refusal(session: Session, memo: FitMemo | None, queue: str, group: TaskGroup, count: int,
            scaled: Resources, surplus: bool) -> PendingReason | NodePool:
    """What `place_replicas` asks before it touches a node: why `count` replicas of the
    group (`scaled` in all) cannot be placed for the virtual cluster `queue` — its quota,
    no matching node, more than the pool's bound — or, when none of that says no, the pool
    to place them in. `memo`: the fit memo, when the state is committed (None: neither
    read nor written)."""
    reason = session.allocatable(queue, scaled, surplus)
    if reason is not None:
        return reason
    return pool_refusal(session, memo, group, count, session.pool_for(group))


def pool_refusal(session: Session, memo: FitMemo | None, group: TaskGroup, count: int,
                 pool: NodePool) -> PendingReason | NodePool:
    """`refusal` past the quota: why the group's node pool `pool` cannot take `count`
    replicas — no node in it, more than its bound — or the pool itself."""
    if not pool.nodes:
        return no_matching_node(session, group)
    request = group.resources
    if not request.is_zero():
        bound = memo.bound(pool, request) if memo is not None else None
        if bound is None and request.gpu:
            bound = pool.gpu_slots(request.gpu)
        if bound is not None and bound < count:
            return insufficient(session, pool, group, count, memo)
    return pool


def _onto_virtual_nodes(session: Session, statement: Statement, job: JobInfo,
                        group: TaskGroup, indices: list[int]) -> list[int]:
    """Place what fits of `indices` on the job's VC's virtual nodes; the indices left."""
    for placed, index in enumerate(indices):
        node = session.pick_virtual_node(job.account, group, group.resources)
        if node is None:
            return indices[placed:]
        statement.allocate(TaskRef(job.name, group.name, index), job.account, node,
                           group.resources)
    return []


def no_matching_node(session: Session, group: TaskGroup) -> PendingReason:
    counts = session.filtered_out(group)
    detail = "; ".join(f"{n} node{'s' if n != 1 else ''} {why}"
                       for why, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    total = len(session.cluster.states)
    return PendingReason(
        PendingKind.UNSCHEDULABLE,
        f"no node can host task group {group.name!r}: 0/{total} nodes match ({detail})"
        if total else f"no node can host task group {group.name!r}: the cluster has no nodes",
        predicate="predicates")


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """How many replicas of a request fit a pool, and why the other nodes take none."""

    fit: int
    short: dict[str, int]
    """Resource dimension → number of nodes too short of it to take even one replica
    (`pods`: nodes at their task limit, short of nothing else)."""
    kept: int = 0
    """Of the nodes short of CPU, those that have it free but keep it for their idle GPUs
    (gpu-discipline's `cpuReservedPerIdleGpu`)."""
    main: str | None = field(init=False, compare=False)
    """The dimension most nodes are short of (ties: the greatest name), None when none is:
    what an unworded reason names, worked out once per count, not once per class asked
    (`allocate.pool_short`)."""

    def __post_init__(self) -> None:
        short = self.short
        object.__setattr__(self, "main", max(short, key=lambda d: (short[d], d))
                           if short else None)


def insufficient(session: Session, pool: NodePool, group: TaskGroup, count: int,
                 memo: FitMemo | None, already: int = 0) -> PendingReason:
    """Why `count` replicas of the group do not fit the pool now. The node-by-node count
    runs once per memo entry and is reused, not once per waiting job."""
    request = group.resources
    note = memo.note(pool, request) if memo is not None else None
    if isinstance(note, Diagnosis):
        diagnosis = note
        bound = memo.bound(pool, request) if memo is not None else None
        fit = min(diagnosis.fit, count - 1, bound if bound is not None else count - 1)
    else:
        diagnosis = diagnose(pool, request, count)
        fit = min(diagnosis.fit + already, count - 1)
        if memo is not None:
            memo.record(pool, request, fit, diagnosis)
    short = diagnosis.short
    main = diagnosis.main
    if not session.worded:  # what decisions read of it, the count and bound kept as above
        return PendingReason(
            PendingKind.INSUFFICIENT_RESOURCES, UNWORDED,
            resource=None if main == PODS else main, predicate=PODS if main == PODS else None)
    where = f"{len(pool.nodes)} matching node{'s' if len(pool.nodes) != 1 else ''}"
    detail = ", ".join(f"{n} at their task limit (pods)" if dim == PODS else f"{n} lack {dim}"
                       for dim, n in sorted(short.items(), key=lambda kv: (-kv[1], kv[0])))
    if diagnosis.kept:
        detail += (f"; {diagnosis.kept} of them keep{'s' if diagnosis.kept == 1 else ''} "
                   f"their free cpu for idle GPUs (gpu-discipline)")
    # A node full by task count lacks no resource: its task limit is a predicate, as
    # Kubernetes' pod-count check is.
    return PendingReason(
        PendingKind.INSUFFICIENT_RESOURCES,
        f"task group {group.name!r} needs {count} × {request}; {fit} fit now on the {where}"
        + (f" ({detail})" if detail else ""),
        resource=None if main == PODS else main, predicate=PODS if main == PODS else None)


def diagnose(pool: NodePool, request: Resources, count: int) -> Diagnosis:
    """How `count` replicas of `request` meet the pool now. A non-zero request reads the
    pool's census (`shoal.core.pool_census`): what changed since it last counted."""
    if request.is_zero():
        return count_nodes(pool, request, count)
    census = pool.census(request)
    return Diagnosis(census.fit, dict(census.short), census.kept)


def count_nodes(pool: NodePool, request: Resources, count: int) -> Diagnosis:
    """`diagnose` node by node (a zero request: a node without a task limit takes all)."""
    short: dict[str, int] = {}
    fit = kept = 0
    for node in pool.nodes:
        if request.is_zero():
            slots = node.task_slots()
            here = count if slots is None else slots
        else:
            here = node.how_many(request)
        fit += here
        if here == 0:
            dims = request.shortfall(node.free_for(request)) or [PODS]
            short[dims[0]] = short.get(dims[0], 0) + 1
            if dims[0] == "cpu" and request.cpu <= node.cpu:
                kept += 1
    return Diagnosis(fit, short, kept)
