"""The preempt action's victims of one virtual cluster, indexed by rank and by what they free
(issue 18), so that a preemptor is matched in O(log n), not against every running job.

The preempt action offers a preemptor P the units (`shoal.scheduler.victims`) of the jobs of
P's virtual cluster that rank strictly behind it, in the order of the victims' score. That
score ranks by the victim's rank first, and every key of it is the victim's own; so the
units offered to P are a *prefix* of all the virtual cluster's units in score order: those
whose job ranks behind P's rank. `behind` finds where that prefix ends by bisection.

What the prefix frees on P's node pools decides, before any trial placement, whether P can
start by evicting at all (`free + gains < demand`: it cannot). `gains` keeps, per set of
node pools asked about, the running sum of the GPUs each unit frees on them, so that test
is one look-up after the bisection; most waiting jobs under backlog fail it.

Built in O(units) from the jobs running when it is built, worst rank first (the action
lists them so); the score's full order is sorted only when a preemptor gets past `gains`
(`offered`). Valid until the action evicts, or places a job it listed as a victim (a
partly placed gang): the action rebuilds it then.
Where the action's running jobs are kept across cycles (`shoal.scheduler.running_table`),
so is each virtual cluster's index (`KeptIndexes`): while the table hands out the same
listing for it and none of its jobs was re-filed, it holds the same units at the same ranks,
and only the score's order (which reads the clock: work lost, latest start) is asked afresh.
Under backlog most cycles change a virtual cluster or two of fifteen.
Only for the default `withinQueue` (`LowerPriority`) and without victim-selection plugins:
otherwise what a preemptor is offered depends on more than its rank, and the action scans.

Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from itertools import accumulate
from typing import Any

from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.victims import VictimUnit


class QueueVictims:
    """One virtual cluster's takeable units, worst rank first; in the order of the victims'
    score when asked (`offered`)."""

    def __init__(self, units: list[VictimUnit],
                 rank: Callable[[VictimUnit], tuple[Any, ...]],
                 order: Callable[[list[VictimUnit]], list[VictimUnit]],
                 prefixes: bool = False, ranks: list[tuple[Any, ...]] | None = None
                 ) -> None:
        """`units`: by rank, worst first (ties in any order); `order`: the victims' score,
        which ranks by the same rank first. `prefixes`: the score may be asked of a prefix
        alone (its order keys may be asked any time, `Preemption.looks`). `ranks`: each
        unit's rank, where the caller has them (then `rank` is not asked)."""
        self.units = units
        self.ranks = [rank(u) for u in units] if ranks is None else ranks
        """Each unit's job's rank, not increasing."""
        self._order = order
        self._ordered: list[VictimUnit] | None = None
        self._prefixes: dict[int, list[VictimUnit]] | None = {} if prefixes else None
        self._gains: dict[Hashable, list[int]] = {}

    def renewed(self, order: Callable[[list[VictimUnit]], list[VictimUnit]],
                prefixes: bool) -> QueueVictims:
        """The same units at the same ranks for another execution of the action, whose
        score is `order`: what is sorted by it is asked afresh, the running sums are shared
        (they read the units and the nodes only)."""
        index = QueueVictims.__new__(QueueVictims)
        index.units, index.ranks, index._gains = self.units, self.ranks, self._gains
        index._order = order
        index._ordered = None
        index._prefixes = {} if prefixes else None
        return index

    def offered(self, count: int) -> list[VictimUnit]:
        """The first `count` units in the order of the victims' score: the same units as
        the first `count` by rank, as the score ranks by rank first. Sorted once, when
        first asked: most preemptors are answered by `gains` alone. Where it may, only the
        prefix is sorted: the score's later keys order a prefix's units among themselves as
        they order them among all (each sort is stable, and a job's units are all in a
        prefix or none), and under backlog a preemptor of the best class is offered few."""
        prefixes = self._prefixes
        if prefixes is not None and self._ordered is None and count < len(self.units):
            found = prefixes.get(count)
            if found is None:
                found = prefixes[count] = self._order(self.units[:count])
            return found[:]
        if self._ordered is None:
            self._ordered = self._order(self.units)
        return self._ordered[:count]

    def behind(self, rank: tuple[Any, ...]) -> int:
        """How many units (a prefix) belong to jobs that rank strictly behind `rank`."""
        ranks = self.ranks
        low, high = 0, len(ranks)
        while low < high:
            middle = (low + high) // 2
            if ranks[middle] > rank:
                low = middle + 1
            else:
                high = middle
        return low

    def gains(self, key: Hashable, count: int, frees: Callable[[VictimUnit], int]) -> int:
        """What the first `count` units free by `frees` (GPUs on a set of node pools named
        by `key`): running sums kept per key."""
        sums = self._gains.get(key)
        if sums is None:
            sums = self._gains[key] = [0, *accumulate(frees(u) for u in self.units)]
        return sums[count]


class KeptIndexes:
    """Per virtual cluster, its index as last built before the action committed anything,
    with the running jobs' listing it was built from and a stamp of what else it read."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[Hashable, list[JobInfo], QueueVictims]] = {}
        self.reused = 0
        """Indexes handed out again (for benchmarks and tests)."""

    def get(self, queue: str, stamp: Hashable, listing: list[JobInfo]) -> QueueVictims | None:
        """The index kept for `queue`, if built from this very listing under `stamp`."""
        kept = self._kept.get(queue)
        if kept is None or kept[1] is not listing or kept[0] != stamp:
            return None
        self.reused += 1
        return kept[2]

    def put(self, queue: str, stamp: Hashable, listing: list[JobInfo],
            index: QueueVictims) -> None:
        self._kept[queue] = (stamp, listing, index)
