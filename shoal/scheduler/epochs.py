"""What changed since a reader last looked (issue 18): counters on the scheduler model that
move, in O(1), exactly when a change of their kind happens.

Structures kept across cycles (class verdicts, preemptor verdicts, victim indexes) hold an
answer that stays right until some kind of change happens: a class that did not fit stays
refused until capacity is given back where it could run, its queue's quota changes, or a
running job moves to another las class. Each such reader keeps an `EpochMark` (the counters
as it last read them, `ModelEpochs.mark`) with its answer, or just the counter it depends
on, and compares before trusting the answer again. The counters never go back, so "equal"
means "no change of that kind since" (per node: `freed_on(node) <= mark.released`).

What each counter counts (`ModelEpochs`):

- `arrived`: jobs that entered the model (`SchedulerModel.add_jobs`).
- `bound`: tasks that started holding resources — a committed bind (`Session.committed`) or a
  running task a snapshot recorded (`add_jobs`).
- `released`: tasks that stopped holding resources — ended, evicted in a cycle, released by a
  driver — and idle flexible parts given back (expired, `SchedulerModel.reserve`, or with
  their job's own virtual cluster, `_retire`); also a node coming back into service.
  `freed_on(node)` is the same per physical node: the `released` value at the node's
  latest release (capacity freed in a pool is freed on one of its nodes).
- `ended`: jobs that left the model (finished or cancelled, `remove_job`).
- `crossed`: running jobs that las found in another attained-service class than the one
  it kept for them (`shoal.scheduler.service_classes`). Las reads every job whose crossing
  is due as a session opens (`ServiceClasses.read_due`), so at a cycle's start `crossed`
  already counts every job that crossed a threshold by then (one whose tasks changed since
  las last read it is read, and counted, when first asked).

Quota changes need no counter of their own: `QuotaTree.layout` moves when a virtual cluster
is added, removed or carved or the capacity changes, and `QuotaTree.version` on every
charge and refund; `EpochMark` records both.

Pure: plain counters, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shoal.core.quota import QuotaTree


@dataclass(frozen=True, slots=True)
class EpochMark:
    """The counters as a reader last read them (`ModelEpochs.mark`)."""

    arrived: int
    bound: int
    released: int
    ended: int
    crossed: int
    quota_layout: int
    quota_usage: int


class ModelEpochs:
    """Counters of each kind of change, kept by the model (module docstring)."""

    __slots__ = ("_everywhere", "_freed_on", "arrived", "bound", "crossed", "ended", "quota",
                 "released")

    def __init__(self, quota: QuotaTree) -> None:
        self.quota = quota
        self.arrived = 0
        self.bound = 0
        self.released = 0
        self.ended = 0
        self.crossed = 0
        self._freed_on: dict[str, int] = {}
        self._everywhere = 0

    def release(self, node: str) -> None:
        """A task on physical node `node` gave back what it held (or the node came back)."""
        self.released += 1
        self._freed_on[node] = self.released

    def release_anywhere(self) -> None:
        """Capacity was given back on nodes not told apart (kept flexible parts expired):
        every node counts it."""
        self.released += 1
        self._freed_on.clear()
        self._everywhere = self.released

    def freed_on(self, node: str) -> int:
        """`released` as of the latest release on physical node `node` (0: none yet)."""
        return max(self._freed_on.get(node, 0), self._everywhere)

    def mark(self) -> EpochMark:
        """Every counter now, the quota tree's included."""
        return EpochMark(self.arrived, self.bound, self.released, self.ended, self.crossed,
                         self.quota.layout, self.quota.version)
