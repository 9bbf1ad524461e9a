"""The capacity plugin: virtual-cluster quotas (min guaranteed, max ceiling, borrowing).

Allocation is allowed while the virtual cluster's headroom in the quota tree holds the
request (see `shoal.core.quota` for the borrowing rule). Queue order: a higher `priority`
first, compared from the top of the tree down (`shoal.scheduler.queue_status`); then, under
`share: explicit` (default), virtual clusters below their guaranteed minimum first, then
the smallest dominant share of the cluster per unit of weight — Volcano's capacity
ordering, with DRF's dominant share. Resource flavors count in total per resource, as
Kueue's fair sharing sums a resource over its flavors: below the guarantee is below the
flavors' minimums summed (`below_guarantee`), and the dominant share is read in the plain
dimensions, which hold every flavor's use; under `share: proportional`, the smallest share of
what each deserves (`shoal.core.deserved`: Volcano's `proportion` plugin, its weights
water-filled over the tree, once per cycle), which is also what the reclaim action then
takes back (`shoal.scheduler.actions.reclaim_proportional`).

`reclaimMode` (seed 001, set per profile by an admin) says whether guarantees are lent:
- `none` (default): never. A virtual cluster borrows only what nobody is owed, so its own
  minimum is always there for it and nothing needs taking back.
- `reclaim`: any task may borrow other virtual clusters' unused guarantees; the reclaim
  action takes them back, job by job, when their owner needs them.
- `elastic`: only elastic surplus may; a normal task stays within what is not owed to
  others — its "deserved" share —, so reclaim only ever takes elastic surplus.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import Field

from shoal.api.decisions import PendingKind, PendingReason
from shoal.api.flavors import is_flavor_dimension, over_flavors, unflavored
from shoal.api.resources import Resources, total
from shoal.core.deserved import DeservedShares, deserved_shares
from shoal.core.quota import QueueState, QuotaTree
from shoal.scheduler.queue_status import QueuePriorities
from shoal.scheduler.registry import Arguments

if TYPE_CHECKING:
    from shoal.scheduler.session import Session


class ReclaimMode(StrEnum):
    NONE = "none"
    RECLAIM = "reclaim"
    ELASTIC = "elastic"


class Share(StrEnum):
    EXPLICIT = "explicit"
    """Each virtual cluster is owed its `min`, shares the rest by weight in queue order."""
    PROPORTIONAL = "proportional"
    """Each deserves its weight's water-filled part of its parent's (Volcano's proportion)."""


class CapacityArguments(Arguments):
    reclaim_mode: ReclaimMode = Field(
        default=ReclaimMode.NONE, alias="reclaimMode",
        description="none: guarantees are never lent; reclaim: any task may borrow them "
                    "and is reclaimed; elastic: only elastic surplus may (seed 001).")
    share: Share = Field(
        default=Share.EXPLICIT,
        description="explicit: queue order by dominant share per weight, below-min first; "
                    "proportional: each virtual cluster deserves its weight's part of its "
                    "parent's (capped by max and demand, floored by min), queue order by "
                    "usage over deserved, and reclaim takes back what is above it "
                    "(Volcano's proportion plugin).")


class Capacity:
    name = "capacity"

    def __init__(self, arguments: CapacityArguments) -> None:
        self.arguments = arguments
        self.quota: QuotaTree | None = None
        self.deserved: DeservedShares | None = None
        """Under `share: proportional`, what each virtual cluster deserves this cycle."""
        self.priorities: QueuePriorities | None = None

    def open_session(self, session: Session) -> None:
        self.quota = session.quota
        self.priorities = QueuePriorities.of(session.quota)
        self.deserved = None
        if self.arguments.share is Share.PROPORTIONAL:
            self.deserved = deserved_shares(session.quota, _asked(session), session.closed)

    @property
    def reclaim_mode(self) -> ReclaimMode:
        return self.arguments.reclaim_mode

    def lends(self, surplus: bool) -> bool:
        """Whether a request (elastic surplus or not) may borrow others' guarantees."""
        mode = self.arguments.reclaim_mode
        return mode is ReclaimMode.RECLAIM or (mode is ReclaimMode.ELASTIC and surplus)

    def allocatable(self, queue: QueueState, request: Resources, surplus: bool = False
                    ) -> PendingReason | None:
        assert self.quota is not None
        return self.quota.check(queue.name, request, self.lends(surplus))

    def admissible(self, queue: QueueState, request: Resources) -> PendingReason | None:
        assert self.quota is not None
        return self.quota.never_fits(queue.name, request)

    def queue_order_key(self, queue: QueueState) -> tuple[Any, ...]:
        assert self.quota is not None and self.priorities is not None
        first = self.priorities.key(queue)
        if self.deserved is not None:
            return (first, self.deserved.share(queue))
        share = max((queue.usage.get(d) / v for d, v in self.quota.capacity.items()
                     if not is_flavor_dimension(d)), default=0.0)
        return (first, 0 if below_guarantee(queue) else 1, share / queue.weight)


def below_guarantee(queue: QueueState) -> bool:
    """Whether the virtual cluster uses less than it is guaranteed in some resource.

    Its flavors count in total, per resource: a cluster owed 2 A100 and 2 H100 GPUs that
    runs 6 on A100 is not below its guarantee for its idle H100 share — it already holds
    more GPUs than it is owed in all. Which flavor a waiting job would take is not known
    here (queue order is per virtual cluster, the flavor is chosen per job as it starts),
    and a flavor's own guarantee is still served by the quota tree: nobody else may use it.
    """
    plain = unflavored(queue.min)
    if any(queue.usage.get(d) < v for d, v in plain.items()):
        return True
    used = over_flavors(queue.usage)
    return any(used.get(r, 0) < v for r, v in over_flavors(queue.min).items())


def _asked(session: Session) -> Iterator[tuple[str, Resources]]:
    """What each waiting job asks (its pending tasks), with its virtual cluster: its part of
    the demand that caps a deserved share. A job that can never run asks nothing."""
    for job in session.model.waiting.values():
        if job.reason is not None and job.reason.kind is PendingKind.UNSCHEDULABLE:
            continue
        yield job.account, total(g.resources.scale(len(job.pending[g.name]))
                                 for g in job.groups_with_pending())
