"""The queue fields of issue 16, read from their documents and checked with their paths: a
virtual cluster's state, priority, preemption policies and borrowing/lending limits; a job's
`preemptable` (or Volcano's `volcano.sh/preemptable` annotation); a task group's
`minAvailable` (Volcano's minTaskMember) and `minCount` (Kueue's partial admission).

What they mean to the scheduler is `shoal.api.queue_policy`'s and the core's; here only
whether they are well formed and consistent within their document.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from shoal.api import ResourceLimit, Resources
from shoal.api.elastic import Elasticity
from shoal.api.queue_policy import (
    BorrowPolicy,
    BorrowWithinParent,
    QueuePreemption,
    QueueStatus,
)
from shoal.spec.cluster_documents import VirtualClusterSpec
from shoal.spec.documents import JobDocument, TaskGroupSpec
from shoal.spec.errors import DocRef, IssueLog, quote

PREEMPTABLE = "volcano.sh/preemptable"

LimitReader = Callable[[str, Mapping[str, int | float | str] | None], ResourceLimit | None]
"""Reads a per-resource limit at a path (`shoal.spec.convert.limit`, bound to one
document); None when it is unreadable (logged)."""
_BOOLEANS = {"true": True, "false": False}


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """A VirtualCluster document's queue fields, converted."""

    state: QueueStatus
    priority: int
    preemption: QueuePreemption
    borrowing_limit: ResourceLimit
    lending_limit: ResourceLimit


def queue_settings(log: IssueLog, doc: DocRef, spec: VirtualClusterSpec,
                   minimum: Resources | None,
                   limit_of: LimitReader) -> QueueSettings:
    """The fields, problems logged; `minimum` is the cluster's flexible guarantee when it
    was readable (a lending limit above it lends what is not there to lend)."""
    borrow = spec.preemption.borrow_within_parent
    if borrow.max_priority_threshold is not None and borrow.policy is BorrowPolicy.NEVER:
        log.add(doc, "spec.preemption.borrowWithinParent.maxPriorityThreshold",
                "only means something with policy LowerPriority; policy is Never")
    borrowing = limit_of("spec.borrowingLimit", spec.borrowing_limit)
    lending = limit_of("spec.lendingLimit", spec.lending_limit)
    if lending is not None and minimum is not None:
        over = [(dim, value) for dim, value in lending.limits if value > minimum.get(dim)]
        if over:
            log.add(doc, "spec.lendingLimit",
                    "must be at most the guarantee (flexibleResourceMin); over in " + ", ".join(
                        f"{dim} {value} > {minimum.get(dim)}" for dim, value in over))
    return QueueSettings(
        state=spec.state, priority=spec.priority,
        preemption=QueuePreemption(
            within_queue=spec.preemption.within_queue,
            reclaim_within_parent=spec.preemption.reclaim_within_parent,
            borrow_within_parent=BorrowWithinParent(borrow.policy,
                                                    borrow.max_priority_threshold)),
        borrowing_limit=borrowing or ResourceLimit(),
        lending_limit=lending or ResourceLimit())


def preemptable(log: IssueLog, doc: DocRef, model: JobDocument) -> bool:
    """`spec.preemptable`, or the Volcano annotation; both given must agree."""
    note = model.metadata.annotations.get(PREEMPTABLE)
    path = f"metadata.annotations.{PREEMPTABLE}"
    from_note: bool | None = None
    if note is not None:
        from_note = _BOOLEANS.get(note.strip().lower())
        if from_note is None:
            log.add(doc, path, f'must be "true" or "false", got {quote(note)}')
    given = model.spec.preemptable
    if given is not None and from_note is not None and given != from_note:
        log.add(doc, path, f"says {note!r} but spec.preemptable is {str(given).lower()}: "
                           "give one of them")
    if given is not None:
        return given
    return True if from_note is None else from_note


def group_minimums(log: IssueLog, doc: DocRef, model: JobDocument, gang: bool,
                   elastic: Elasticity | None) -> None:
    """Each group's `minAvailable` and `minCount` within its replicas; `minAvailable` only
    for a gang, within the elastic group's `minReplicas` (its tasks above are surplus, never
    needed to start, and shrunk away first), and the groups' minimums together within the
    job's `minAvailable`; `minCount` at least the group's own `minAvailable` (fewer could
    never run), and not on the elastic group (it already scales between its sizes)."""
    elastic_group = None if elastic is None else elastic.group
    spec = model.spec
    groups: Sequence[TaskGroupSpec] = spec.task_groups
    floor = 0
    for i, g in enumerate(groups):
        path = f"spec.taskGroups[{i}]"
        if g.min_available is not None:
            floor += g.min_available
            if not gang:
                log.add(doc, f"{path}.minAvailable",
                        "is only allowed with schedulerName shoal or volcano (gang "
                        "scheduling)")
            elif g.min_available > g.replicas:
                log.add(doc, f"{path}.minAvailable",
                        f"must be at most the group's replicas ({g.replicas}), got "
                        f"{g.min_available}")
            elif elastic is not None and g.name == elastic.group \
                    and g.min_available > elastic.min_replicas:
                log.add(doc, f"{path}.minAvailable",
                        f"must be at most spec.elastic's minReplicas ({elastic.min_replicas}) "
                        f"on the elastic task group, got {g.min_available}")
        if g.min_count is not None:
            if g.min_count > g.replicas:
                log.add(doc, f"{path}.minCount",
                        f"must be at most the group's replicas ({g.replicas}), got "
                        f"{g.min_count}")
            elif g.min_available is not None and g.min_count < g.min_available:
                log.add(doc, f"{path}.minCount",
                        f"must be at least the group's minAvailable ({g.min_available}), got "
                        f"{g.min_count}")
            if g.name == elastic_group:
                log.add(doc, f"{path}.minCount",
                        "cannot be given on the elastic task group: it already scales "
                        "between spec.elastic's minReplicas and its replicas")
    if gang and spec.min_available is not None and floor > spec.min_available:
        log.add(doc, "spec.minAvailable",
                f"must be at least the sum of its task groups' minAvailable ({floor}), got "
                f"{spec.min_available}")
