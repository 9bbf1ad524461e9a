"""What a virtual cluster decides for itself as a queue (issue 16): whether it admits new
work, where it stands among its siblings, and whom its jobs may preempt — Volcano's queue
`state`, Kueue's ClusterQueue `preemption` — and what a priority class says about
preempting (Kubernetes' `preemptionPolicy`).

Plain values; the scheduling core reads them (`shoal.scheduler.actions.preempt`,
`shoal.scheduler.actions.reclaim`, the capacity plugin), the spec layer builds them.
Every default keeps what a queue did before it could say otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class QueueStatus(StrEnum):
    """Whether a virtual cluster takes new work (Volcano's queue `state`)."""

    OPEN = "Open"
    CLOSED = "Closed"
    """It admits nothing new: its waiting jobs wait, its running jobs run on (and an
    elastic one keeps what it has but is not grown); its jobs reclaim nothing."""


class WithinQueue(StrEnum):
    """Whom a waiting job may preempt inside its own virtual cluster (Kueue's
    `withinClusterQueue`), when the profile runs the preempt action."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    """Jobs that rank behind it (priority, then the order plugins): Shoal's default."""
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    """Also jobs of equal priority submitted after it."""


class ReclaimWithinParent(StrEnum):
    """Whom a job owed its guarantee may take it back from (Kueue's `reclaimWithinCohort`),
    when the profile runs the reclaim action."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    """Borrowers whose priority is below the reclaiming job's."""
    ANY = "Any"
    """Any borrower, whatever its priority: Shoal's default (a guarantee is owed)."""


class BorrowPolicy(StrEnum):
    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"


@dataclass(frozen=True, slots=True)
class BorrowWithinParent:
    """Whether a job that would have to borrow may preempt other virtual clusters' jobs
    to do so (Kueue's `borrowWithinCohort`): only jobs of lower priority, and only those at
    or below `max_priority_threshold` when it is set."""

    policy: BorrowPolicy = BorrowPolicy.NEVER
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class QueuePreemption:
    """A virtual cluster's preemption policies (Kueue's ClusterQueue `preemption`)."""

    within_queue: WithinQueue = WithinQueue.LOWER_PRIORITY
    reclaim_within_parent: ReclaimWithinParent = ReclaimWithinParent.ANY
    borrow_within_parent: BorrowWithinParent = field(default_factory=BorrowWithinParent)


class PreemptionPolicy(StrEnum):
    """Whether jobs of a priority class may preempt others (Kubernetes' PriorityClass
    `preemptionPolicy`)."""

    PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
    NEVER = "Never"
    """Its jobs wait for room; they never evict anything (preempt nor reclaim)."""
