"""What a virtual cluster says about itself as a queue (issue 16): its `state` — what a
cycle holds back because a virtual cluster is closed — and its `priority` — where it stands
among its siblings before their share does (Volcano's queue `state` and `priority`).

Closed (Volcano's `state: Closed`). A job whose virtual cluster — or any ancestor of it:
closing closes the subtree — is closed gets no new bind in the cycle, whatever the action:
its waiting job is no candidate (so neither allocate, backfill, preempt nor reclaim acts for
it; it is no preemptor and no reclaimer), a running job's missing or surplus tasks are not
placed, and the elastic action neither grows nor repairs it. What it runs keeps running,
and may still be taken by another virtual cluster's reclaim: closing a queue does not
protect its work. A job submitted into a closed queue is accepted and waits, with a
`QueueClosed` reason (Volcano refuses it at admission instead): reopening starts it without
a resubmission. Job-scoped virtual clusters (seed 003's `job:<name>`) are closed through
their queue like any child; a job's own virtual cluster is not even created in a closed
queue (its guarantee would be new admission).

Priority. Sibling virtual clusters are ordered by `priority` (higher first) before the
capacity plugin's share decides (`QueuePriorities`). Allocation serves leaf virtual
clusters from one heap, so a virtual cluster's key is the priorities on its path from the
top down: the subtree of a higher-priority department comes before any team of a lower one,
and teams of one department are ordered by their own priority. Where one path is shorter, a
missing level counts as priority 0. With every priority 0 (the default) the key is empty
and the order is exactly what it was.

Pure: read off the quota tree's `QueueState.status`, which the model takes from the
`VirtualCluster` documents (the live control plane rebuilds its model when one is replaced).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from shoal.api.decisions import PendingKind, PendingReason
from shoal.core.quota import QueueState, QuotaTree


def closed_reason(queue: QueueState) -> PendingReason | None:
    """Why a job of `queue` is admitted nothing now; None while the queue and every ancestor
    are open."""
    closer = queue.closed_by()
    if closer is None:
        return None
    where = f"virtual cluster {closer.name!r} is Closed" if closer is queue else \
        f"virtual cluster {queue.name!r} is under {closer.name!r}, which is Closed"
    return PendingReason(PendingKind.QUEUE_CLOSED, f"{where}: it admits nothing new",
                         queue=closer.name)


def closed_queues(quota: QuotaTree) -> dict[str, PendingReason]:
    """Every closed virtual cluster (its own state or an ancestor's) → why its jobs wait;
    empty when none is, which is the common case and costs one pass over the tree."""
    out: dict[str, PendingReason] = {}
    for queue in quota:
        reason = closed_reason(queue)
        if reason is not None:
            out[queue.name] = reason
    return out


class ClosedQueues:
    """`closed_queues`, kept while the tree's layout stands: a virtual cluster's status is
    fixed while it is in the tree (read from its document when it joins; the live control
    plane rebuilds its model when one is replaced), and one joins or leaves only with a new
    `QuotaTree.layout`. A cycle asked every virtual cluster each time it opened."""

    __slots__ = ("_closed", "_layout", "_tree")

    def __init__(self) -> None:
        self._tree: QuotaTree | None = None
        self._layout = -1
        self._closed: dict[str, PendingReason] = {}

    def of(self, quota: QuotaTree) -> dict[str, PendingReason]:
        """`closed_queues(quota)` (the same dict while nothing changed: read it only)."""
        if quota is not self._tree or quota.layout != self._layout:
            self._tree, self._layout = quota, quota.layout
            self._closed = closed_queues(quota)
        return self._closed


@dataclass(frozen=True, slots=True)
class QueuePriorities:
    """The priority part of the queue order for one cycle."""

    depth: int
    """The deepest virtual cluster's depth; 0 when every priority is 0 (no key at all)."""

    @staticmethod
    def of(quota: QuotaTree) -> QueuePriorities:
        return _priorities(quota.priority_depth())

    def key(self, queue: QueueState) -> tuple[int, ...]:
        """Smaller first: the negated priorities on the queue's path below the root."""
        if not self.depth:
            return ()
        levels = [-q.priority for q in queue.path()[1:]]
        levels.extend(0 for _ in range(self.depth - len(levels)))
        return tuple(levels)


@functools.cache
def _priorities(depth: int) -> QueuePriorities:
    """One per depth, shared (immutable): every cycle asks, and the depth rarely moves."""
    return QueuePriorities(depth)
