"""Tentative allocations and evictions, committed or discarded as a whole.

This is Volcano's `Statement`: each operation changes the cycle's working state at once, so
later operations see it, and is recorded; `discard` undoes the record in reverse order,
`roll_back` undoes it back to a `savepoint` (a tried placement, keeping the evictions
before it), `commit` hands it to the `Ledger` as decisions. Gang scheduling ("all of
minAvailable or nothing") and "evict only if the preemptor then fits" are both a statement
that is committed only when its goal is met.

What its placements took off a fit memo's bound (`FitMemo.consumed`) is taken off only when
it commits: a bound lowered by placements that are then undone would no longer be an upper
bound, and would turn away work that fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from shoal.api.objects import TaskRef
from shoal.api.resources import Resources
from shoal.core.nodes import ClusterState, FitMemo, NodePool, NodeState
from shoal.core.quota import QuotaTree


@dataclass(frozen=True, slots=True)
class Allocation:
    task: TaskRef
    queue: str
    node: NodeState
    request: Resources
    gpus: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Eviction:
    task: TaskRef
    queue: str
    node: NodeState
    request: Resources
    gpus: tuple[int, ...]
    reason: str


_new = object.__new__
_set = object.__setattr__


class Ledger(Protocol):
    """Who learns of committed operations (the scheduler's session)."""

    def allocated(self, allocation: Allocation) -> None: ...
    def unallocated(self, allocation: Allocation) -> None: ...
    def evicted(self, eviction: Eviction) -> None: ...
    def unevicted(self, eviction: Eviction) -> None: ...
    def committed(self, operations: list[Allocation | Eviction]) -> None: ...


class Statement:
    """One all-or-nothing unit of scheduling work."""

    def __init__(self, cluster: ClusterState, quota: QuotaTree, ledger: Ledger) -> None:
        self._cluster = cluster
        self._quota = quota
        self._ledger = ledger
        self._operations: list[Allocation | Eviction] = []
        self._consumed: list[tuple[int, FitMemo, NodePool, Resources, int]] = []
        """Bounds to lower on commit, each with the count of operations it follows."""
        self._open = True

    @property
    def empty(self) -> bool:
        return not self._operations

    def allocate(self, task: TaskRef, queue: str, node: NodeState, request: Resources
                 ) -> Allocation:
        self._check_open()
        gpus = self._cluster.take(node, request)
        if node.owner is None:  # a virtual node is its VC's own, outside the quota tree
            self._quota.charge(queue, request)
        allocation = _new(Allocation)  # `Allocation(...)`, without the frozen __init__'s
        _set(allocation, "task", task)  # look-ups per field: one per replica placed
        _set(allocation, "queue", queue)
        _set(allocation, "node", node)
        _set(allocation, "request", request)
        _set(allocation, "gpus", gpus)
        self._operations.append(allocation)
        self._ledger.allocated(allocation)
        return allocation

    def evict(self, task: TaskRef, queue: str, node: NodeState, request: Resources,
              gpus: tuple[int, ...], reason: str) -> Eviction:
        self._check_open()
        self._cluster.give(node, request, gpus)
        if node.owner is None:
            self._quota.refund(queue, request)
        eviction = Eviction(task, queue, node, request, gpus, reason)
        self._operations.append(eviction)
        self._ledger.evicted(eviction)
        return eviction

    def consume(self, memo: FitMemo, pool: NodePool, request: Resources, replicas: int
                ) -> None:
        """`memo.consumed(pool, request, replicas)` once this statement commits, for the
        replicas just placed; dropped if they are rolled back or discarded."""
        self._consumed.append((len(self._operations), memo, pool, request, replicas))

    def commit(self) -> list[Allocation | Eviction]:
        self._check_open()
        self._open = False
        for _, memo, pool, request, replicas in self._consumed:
            memo.consumed(pool, request, replicas)
        self._consumed.clear()
        self._ledger.committed(self._operations)
        return self._operations

    def savepoint(self) -> int:
        """A mark `roll_back` can return to."""
        return len(self._operations)

    def operations_since(self, savepoint: int) -> list[Allocation | Eviction]:
        return self._operations[savepoint:]

    def roll_back(self, savepoint: int) -> None:
        """Undo the operations since `savepoint`, newest first; the statement stays open."""
        self._check_open()
        self._undo(self._operations[savepoint:])
        del self._operations[savepoint:]
        while self._consumed and self._consumed[-1][0] > savepoint:
            self._consumed.pop()

    def discard(self) -> None:
        self._check_open()
        self._open = False
        self._undo(self._operations)
        self._operations.clear()
        self._consumed.clear()

    def _undo(self, operations: list[Allocation | Eviction]) -> None:
        for op in reversed(operations):
            if isinstance(op, Allocation):
                self._cluster.give(op.node, op.request, op.gpus, undo=True)
                if op.node.owner is None:
                    self._quota.refund(op.queue, op.request)
                self._ledger.unallocated(op)
            else:
                self._cluster.take(op.node, op.request, op.gpus)
                if op.node.owner is None:
                    self._quota.charge(op.queue, op.request)
                self._ledger.unevicted(op)

    def _check_open(self) -> None:
        if not self._open:
            raise RuntimeError("statement already committed or discarded")
