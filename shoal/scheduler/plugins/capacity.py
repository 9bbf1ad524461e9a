"""The capacity plugin: virtual-cluster quotas (min guaranteed, max ceiling, borrowing).

Allocation is allowed while the virtual cluster's headroom in the quota tree holds the
request (see `shoal.core.quota` for the borrowing rule). Virtual clusters below their
guaranteed minimum are served first, then the one with the smallest dominant share per
unit of weight — Volcano's capacity/proportion ordering, with DRF's dominant share.

`reclaimMode` (seed 001, set per profile by an admin) says whether guarantees are lent:
- `none` (default): never. A virtual cluster borrows only what nobody is owed, so its own
  minimum is always there for it and nothing needs taking back.
- `reclaim`: any task may borrow other virtual clusters' unused guarantees; the reclaim
  action takes them back, job by job, when their owner needs them.
- `elastic`: only elastic surplus may; a normal task stays within what is not owed to
  others — its "deserved" share —, so reclaim only ever takes elastic surplus.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import Field

from shoal.api.decisions import PendingReason
from shoal.api.resources import Resources
from shoal.core.quota import QueueState, QuotaTree
from shoal.scheduler.registry import Arguments

if TYPE_CHECKING:
    from shoal.scheduler.session import Session


class ReclaimMode(StrEnum):
    NONE = "none"
    RECLAIM = "reclaim"
    ELASTIC = "elastic"


class CapacityArguments(Arguments):
    reclaim_mode: ReclaimMode = Field(
        default=ReclaimMode.NONE, alias="reclaimMode",
        description="none: guarantees are never lent; reclaim: any task may borrow them "
                    "and is reclaimed; elastic: only elastic surplus may (seed 001).")


class Capacity:
    name = "capacity"

    def __init__(self, arguments: CapacityArguments) -> None:
        self.arguments = arguments
        self.quota: QuotaTree | None = None

    def open_session(self, session: Session) -> None:
        self.quota = session.quota

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
        assert self.quota is not None
        capacity = self.quota.capacity
        under_min = any(queue.usage.get(d) < v for d, v in queue.min.items())
        share = max((queue.usage.get(d) / v for d, v in capacity.items()), default=0.0)
        return (0 if under_min else 1, share / queue.weight)
