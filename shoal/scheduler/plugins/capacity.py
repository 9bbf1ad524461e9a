"""The capacity plugin: virtual-cluster quotas (min guaranteed, max ceiling, borrowing).

Allocation is allowed while the virtual cluster's headroom in the quota tree holds the
request (see `shoal.core.quota` for the borrowing rule). Virtual clusters below their
guaranteed minimum are served first, then the one with the smallest dominant share per
unit of weight — Volcano's capacity/proportion ordering, with DRF's dominant share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shoal.api.decisions import PendingReason
from shoal.api.resources import Resources
from shoal.core.quota import QueueState, QuotaTree
from shoal.scheduler.registry import Arguments

if TYPE_CHECKING:
    from shoal.scheduler.session import Session


class CapacityArguments(Arguments):
    pass


class Capacity:
    name = "capacity"

    def __init__(self, arguments: CapacityArguments) -> None:
        self.arguments = arguments
        self.quota: QuotaTree | None = None

    def open_session(self, session: Session) -> None:
        self.quota = session.quota

    def allocatable(self, queue: QueueState, request: Resources) -> PendingReason | None:
        assert self.quota is not None
        return self.quota.check(queue.name, request)

    def admissible(self, queue: QueueState, request: Resources) -> PendingReason | None:
        assert self.quota is not None
        return self.quota.never_fits(queue.name, request)

    def queue_order_key(self, queue: QueueState) -> tuple[Any, ...]:
        assert self.quota is not None
        capacity = self.quota.capacity
        under_min = any(queue.usage.get(d) < v for d, v in queue.min.items())
        share = max((queue.usage.get(d) / v for d, v in capacity.items()), default=0.0)
        return (0 if under_min else 1, share / queue.weight)
