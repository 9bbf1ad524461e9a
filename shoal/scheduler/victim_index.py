"""The preempt action's victims of one virtual cluster, indexed by rank and by what they free
(issue 18), so that a preemptor is matched without a walk over every running job.

The preempt action offers a preemptor P the units (`shoal.scheduler.victims`) of the jobs of
P's virtual cluster that rank strictly behind it, in the order of the victims' score. That
score ranks by the victim's rank first, and every key of it is the victim's own; so the
units offered to P are a *prefix* of all the virtual cluster's units in score order: those
whose job ranks behind P's rank (`behind` counts them).

What the prefix frees on P's node pools decides, before any trial placement, whether P can
start by evicting at all (`free + gains < demand`: it cannot). `gains` keeps, per set of
node pools asked about, what each job's units free there and their sum per rank, so that
test is a few additions (one per rank, and a handful of ranks under `las`); most waiting
jobs under backlog fail it.

The units are held by rank, each rank's jobs in no particular order: nothing reads the order
within a rank but the score, which orders every unit by keys of its own (its job's rank,
kind, work lost, latest start, then the session's job order, which tells every two jobs
apart), whatever order it is handed them in; the rest sums or counts them. So a job's units
are filed and dropped (`put`, `drop`) in O(ranks), and the sums per set of pools follow in
O(1) each (a job filed since is summed when next asked). The score's order is sorted only
when a preemptor gets past `gains` (`offered`).

A search that gets past `gains` is judged before its offer is listed where that is exact
(`VictimListing._judged_early`): from what each rank's units hold per node and whom they are
charged to (`held`), summed per rank and brought up to date as jobs are filed and dropped
there. A search that goes on to its trials takes the offer one rank at a time (`in_order`),
each rank sorted by the score when first reached and kept for the rest of the execution
(most evicting searches fit after the first unit of the first rank).

Where the action's running jobs are kept across cycles (`shoal.scheduler.running_table`),
so is each virtual cluster's index (`KeptIndexes`): brought up to the table by the jobs the
table says were filed, re-filed or dropped there since (`RunningTable.changed_since`), each
re-listed once — O(changed), not O(running jobs) — and handed to an execution of the action
as a copy made only when it changes it (`renewed`: an evicted or placed job re-listed).
Only for the default `withinQueue` (`LowerPriority`) and without victim-selection plugins:
otherwise what a preemptor is offered depends on more than its rank, and the action scans.

Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from shoal.api.resources import Resources
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.victims import ByStart, VictimUnit

Rank = tuple[Any, ...]


@dataclass(slots=True)
class _Sums:
    """What each job's units free by one measure (a set of node pools), and per rank."""

    of: dict[JobInfo, int] = field(default_factory=dict)
    per_rank: dict[Rank, int] = field(default_factory=dict)
    pending: dict[JobInfo, None] = field(default_factory=dict)
    """Jobs filed since the sums were last asked for: summed then."""

    def copy(self) -> _Sums:
        return _Sums(dict(self.of), dict(self.per_rank), dict(self.pending))


class QueueVictims:
    """One virtual cluster's takeable units by rank; in the order of the victims' score
    when asked (`offered`)."""

    def __init__(self, units: list[VictimUnit],
                 rank: Callable[[VictimUnit], Rank],
                 order: Callable[[list[VictimUnit]], list[VictimUnit]],
                 prefixes: bool = False, ranks: list[Rank] | None = None,
                 score: Score | None = None) -> None:
        """`units`: grouped by job (a job's units in its own order), each job's units at
        one rank; `order`: the victims' score, which ranks by the same rank first.
        `prefixes`: the score may be asked of a prefix alone (its order keys may be asked
        any time, `Preemption.looks`). `ranks`: each unit's rank, where the caller has
        them (then `rank` is not asked)."""
        self._order = order
        self._ordered: list[VictimUnit] | None = None
        self._prefixes: dict[int, list[VictimUnit]] | None = {} if prefixes else None
        self._by_rank: dict[Rank, dict[JobInfo, list[VictimUnit]]] = {}
        self._sizes: dict[Rank, int] = {}
        self._rank_of: dict[JobInfo, Rank] = {}
        self._ranks: list[Rank] = []
        """The ranks held, worst first."""
        self._gains: dict[Hashable, _Sums] = {}
        self._held: dict[Rank, _Held] = {}
        """Per rank, what its units' tasks hold per node and whom they are charged to
        (`held`), once asked; brought up to date as jobs are filed and dropped there."""
        self._held_sums: dict[int, tuple[dict[str, Resources], set[Hashable]]] = {}
        """`held`'s answers by count, until a job is filed or dropped (shared with the
        indexes `renewed` from this one until then)."""
        self._measure: list[Holds] = []
        """The measure `held` was asked by (the same whenever asked), shared with every
        index `renewed` from this one, so that each keeps its sums up to date."""
        self._in_order: dict[Rank, _Taken] = {}
        """Per rank, its units in the order of the victims' score as far as asked
        (`in_order`)."""
        self._by_start: dict[Rank, ByStart] = {}
        """Per rank, its units by shape and start (`victims.ByStart`), once asked; brought
        up to date as jobs are filed and dropped there."""
        self._score = score
        self._shared = False
        """Whether the structures above are another index's too (copied before a change)."""
        by_rank, rank_of = self._by_rank, self._rank_of
        for unit, at in zip(units, [rank(u) for u in units] if ranks is None else ranks,
                            strict=True):
            job = unit.job
            jobs = by_rank.get(at)
            if jobs is None:
                jobs = by_rank[at] = {}
            listed = jobs.get(job)
            if listed is None:
                jobs[job] = [unit]
                rank_of[job] = at
            else:
                listed.append(unit)
        self._sizes = {at: sum(map(len, jobs.values())) for at, jobs in by_rank.items()}
        self._ranks = sorted(by_rank, reverse=True)

    @property
    def units(self) -> list[VictimUnit]:
        """Every unit, worst rank first (within a rank, in no particular order)."""
        return self.prefix(len(self))

    @property
    def ranks(self) -> list[Rank]:
        """Each of `units`' ranks."""
        return [at for at in self._ranks for _ in range(self._sizes[at])]

    def __len__(self) -> int:
        return sum(self._sizes.values())

    def prefix(self, count: int) -> list[VictimUnit]:
        """The first `count` units, worst rank first: those behind a rank when `count` is
        what `behind` says of it."""
        out: list[VictimUnit] = []
        for at in self._ranks:
            if len(out) >= count:
                break
            for units in self._by_rank[at].values():
                out.extend(units)
        return out if len(out) <= count else out[:count]

    def renewed(self, order: Callable[[list[VictimUnit]], list[VictimUnit]],
                prefixes: bool, score: Score | None = None) -> QueueVictims:
        """The same units at the same ranks for another execution of the action, whose
        score is `order` (`score`: as in `__init__`): what is sorted by it is asked afresh;
        the rest is shared until either changes it (`put`, `drop` on the copy)."""
        index = QueueVictims.__new__(QueueVictims)
        index._by_rank, index._sizes, index._rank_of = \
            self._by_rank, self._sizes, self._rank_of
        index._ranks, index._gains = self._ranks, self._gains
        index._held, index._in_order, index._measure = self._held, {}, self._measure
        index._held_sums = self._held_sums
        index._by_start, index._score = self._by_start, score
        index._shared = True
        index._order = order
        index._ordered = None
        index._prefixes = {} if prefixes else None
        return index

    def _own(self) -> None:
        """Stop sharing with the index this one was `renewed` from."""
        if not self._shared:
            return
        self._shared = False
        self._by_rank = {at: dict(jobs) for at, jobs in self._by_rank.items()}
        self._sizes, self._rank_of = dict(self._sizes), dict(self._rank_of)
        self._ranks = list(self._ranks)
        self._gains = {key: sums.copy() for key, sums in self._gains.items()}
        self._held = dict(self._held)
        self._held_sums = {}
        self._by_start = dict(self._by_start)

    def units_of(self, job: JobInfo) -> list[VictimUnit]:
        """The job's units listed (none: not listed)."""
        rank = self._rank_of.get(job)
        return [] if rank is None else self._by_rank[rank][job]

    def holds(self, job: JobInfo) -> bool:
        """Whether the job has units listed."""
        return job in self._rank_of

    def put(self, job: JobInfo, rank: Rank, units: list[VictimUnit]) -> None:
        """List the job's `units` (its own order) at `rank`; it had none listed."""
        if not units:
            return
        self._own()
        self._ordered, self._prefixes = None, None if self._prefixes is None else {}
        jobs = self._by_rank.get(rank)
        if jobs is None:
            jobs = self._by_rank[rank] = {}
            self._sizes[rank] = 0
            self._ranks.append(rank)
            self._ranks.sort(reverse=True)
        jobs[job] = units
        self._held_sums.clear()  # the indexes sharing them read the jobs filed now
        self._held_change(rank, units, 1)
        self._in_order.pop(rank, None)
        by_start = self._by_start.get(rank)
        if by_start is not None:
            self._by_start[rank] = by_start.with_units(units)
        self._sizes[rank] += len(units)
        self._rank_of[job] = rank
        for sums in self._gains.values():
            sums.pending[job] = None

    def drop(self, job: JobInfo) -> None:
        """Stop listing the job's units."""
        rank = self._rank_of.get(job)
        if rank is None:
            return
        self._own()
        self._ordered, self._prefixes = None, None if self._prefixes is None else {}
        del self._rank_of[job]
        jobs = self._by_rank[rank]
        units = jobs.pop(job)
        self._held_sums.clear()  # the indexes sharing them read the jobs filed now
        self._held_change(rank, units, -1)
        in_order = self._in_order.get(rank)
        if in_order is not None:
            # The rest keep their order: the score orders every two units by their own keys.
            self._in_order[rank] = in_order.without(job)
        by_start = self._by_start.get(rank)
        if by_start is not None:
            self._by_start[rank] = by_start.without(job, units)
        self._sizes[rank] -= len(units)
        emptied = not jobs
        if emptied:
            del self._by_rank[rank], self._sizes[rank]
            self._ranks.remove(rank)
            self._by_start.pop(rank, None)
        for sums in self._gains.values():
            if job in sums.pending:
                del sums.pending[job]
            else:
                sums.per_rank[rank] -= sums.of.pop(job)
            if emptied:
                sums.per_rank.pop(rank, None)

    def offered(self, count: int) -> list[VictimUnit]:
        """The first `count` units in the order of the victims' score: the same units as
        the first `count` by rank, as the score ranks by rank first. Sorted once, when
        first asked: most preemptors are answered by `gains` alone. Where it may, only the
        prefix is sorted: the score's later keys order a prefix's units among themselves as
        they order them among all (each sort is stable, and a job's units are all in a
        prefix or none), and under backlog a preemptor of the best class is offered few."""
        prefixes = self._prefixes
        if prefixes is not None and self._ordered is None and count < len(self):
            found = prefixes.get(count)
            if found is None:
                found = prefixes[count] = self._order(self.prefix(count))
            return found[:]
        if self._ordered is None:
            self._ordered = self._order(self.units)
        return self._ordered[:count]

    def in_order(self, count: int) -> Iterator[VictimUnit]:
        """`offered(count)`, one rank at a time, for a caller that may stop early: where
        the score may be asked of a prefix alone (`prefixes`), each rank's units are sorted
        when first reached, and kept until a job of that rank is filed or dropped — the
        score orders a rank's units among themselves as it orders them among all (its first
        key is the rank), and within one execution of the action nothing else it reads of
        them moves. `count` must be what `behind` says of some rank (whole ranks)."""
        if self._prefixes is None:
            yield from self.offered(count)
            return
        seen = 0
        cache, by_rank, sizes = self._in_order, self._by_rank, self._sizes
        score = self._score
        for at in self._ranks:
            if seen >= count:
                return
            seen += sizes[at]
            found = cache.get(at)
            if found is None:
                if score is not None:
                    by_start = self._by_start.get(at)
                    if by_start is None:
                        by_start = self._by_start[at] = ByStart.of(
                            [u for listed in by_rank[at].values() for u in listed])
                    found = cache[at] = _Taken([], by_start.merged(score.now, score.order))
                else:
                    units: list[VictimUnit] = []
                    for listed in by_rank[at].values():
                        units.extend(listed)
                    found = cache[at] = _Taken(self._order(units), None)
            yield from found

    def held(self, count: int, holds: Holds) -> tuple[dict[str, Resources], set[Hashable]]:
        """What the first `count` units' tasks hold, per node name, and whom those units
        are charged to (`holds`: a unit's charge and its tasks' nodes and requests, the
        same whenever asked): summed per rank once, brought up to date as jobs are filed
        and dropped there (O(the rank's nodes) each, not O(its units)), and those sums
        added. `count` must be what `behind` says of some rank (whole ranks)."""
        if not self._measure:
            self._measure.append(holds)
        summed = self._held_sums.get(count)
        if summed is not None:
            return summed
        out: dict[str, Resources] = {}
        charged: set[Hashable] = set()
        seen = 0
        kept, by_rank, sizes = self._held, self._by_rank, self._sizes
        for at in self._ranks:
            if seen >= count:
                break
            seen += sizes[at]
            found = kept.get(at)
            if found is None:
                found = kept[at] = _changed(({}, {}), [
                    unit for units in by_rank[at].values() for unit in units], holds, 1)
            for node, (_, request) in found[0].items():
                have = out.get(node)
                out[node] = request if have is None else have + request
            charged.update(found[1])
        assert seen == count, "held: count cuts a rank"
        summed = self._held_sums[count] = out, charged
        return summed

    def _held_change(self, rank: Rank, units: list[VictimUnit], sign: int) -> None:
        """`units` were filed (`sign` 1) or dropped (-1) at `rank`: bring its `held` sums
        up to date (copied: they may be another index's too)."""
        found = self._held.get(rank)
        if found is None:
            return
        self._held[rank] = _changed(found, units, self._measure[0], sign)

    def behind(self, rank: Rank) -> int:
        """How many units (a prefix) belong to jobs that rank strictly behind `rank`."""
        count = 0
        sizes = self._sizes
        for at in self._ranks:
            if at <= rank:
                break
            count += sizes[at]
        return count

    def gains(self, key: Hashable, count: int, frees: Callable[[VictimUnit], int]) -> int:
        """What the first `count` units free by `frees` (GPUs on a set of node pools named
        by `key`, the same measure whenever it is asked by that key): sums kept per key,
        per job and per rank."""
        sums = self._gains.get(key)
        if sums is None:
            sums = self._gains[key] = _Sums(pending=dict.fromkeys(self._rank_of))
        if sums.pending:
            of, per_rank, rank_of = sums.of, sums.per_rank, self._rank_of
            for job in sums.pending:
                at = rank_of[job]
                value = of[job] = sum(map(frees, self._by_rank[at][job]))
                per_rank[at] = per_rank.get(at, 0) + value
            sums.pending = {}
        total = seen = 0
        for at in self._ranks:
            if seen >= count:
                break
            seen += self._sizes[at]
            total += sums.per_rank.get(at, 0)
        if seen == count:
            return total
        return sum(map(frees, self.prefix(count)))  # `count` cuts a rank: not from `behind`


@dataclass(frozen=True, slots=True)
class Score:
    """What the victims' score reads besides its units, for one execution of the action:
    the instant (work lost, latest start) and the session's job order (ties)."""

    now: float
    order: Callable[[JobInfo], tuple[Any, ...]]


class _Taken:
    """A rank's units in the score's order: those worked out so far, and the rest as
    they are taken (None: all are out)."""

    __slots__ = ("out", "rest", "without_jobs")

    def __init__(self, out: list[VictimUnit], rest: Iterator[VictimUnit] | None,
                 without_jobs: frozenset[JobInfo] = frozenset()) -> None:
        self.out = out
        self.rest = rest
        self.without_jobs = without_jobs
        """Jobs dropped since `rest` began: skipped as they come."""

    def __iter__(self) -> Iterator[VictimUnit]:
        out = self.out
        at = 0
        while True:
            if at < len(out):  # worked out already, here or by another iteration
                yield out[at]
                at += 1
                continue
            rest = self.rest
            unit = None if rest is None else next(rest, None)
            if unit is None:
                self.rest = None
                return
            if unit.job not in self.without_jobs:
                out.append(unit)

    def without(self, job: JobInfo) -> _Taken:
        """The same order less the job's units."""
        return _Taken([u for u in self.out if u.job is not job], self.rest,
                      self.without_jobs | {job})


_Held = tuple[dict[str, tuple[int, Resources]], dict[Hashable, int]]
"""Per node, how many tasks and what they hold; per charge, how many units."""


def _changed(held: _Held, units: list[VictimUnit], holds: Holds, sign: int) -> _Held:
    """`held` with `units` added (`sign` 1) or taken away (-1), as a new value."""
    per, whom = dict(held[0]), dict(held[1])
    for unit in units:
        charge, tasks = holds(unit)
        left = whom.get(charge, 0) + sign
        if left:
            whom[charge] = left
        else:
            del whom[charge]
        for node, request in tasks:
            have = per.get(node)
            if sign > 0:
                per[node] = (1, request) if have is None else (have[0] + 1, have[1] + request)
            elif have is not None and have[0] > 1:
                per[node] = (have[0] - 1, have[1] - request)
            else:
                per.pop(node, None)
    return per, whom


Holds = Callable[[VictimUnit], tuple[Hashable, Iterable[tuple[str, Resources]]]]
"""Whom a unit is charged to, and its tasks' nodes and requests."""

Segment = Callable[[JobInfo], tuple[Rank, list[VictimUnit]] | None]
"""A filed job's rank and units (None: it lists none)."""


class Table(Protocol):
    """What `KeptIndexes` reads of the running table (`running_table.RunningTable`)."""

    def queue_stamp(self, queue: str) -> int: ...

    def changed_since(self, queue: str, since: int) -> list[JobInfo] | None: ...

    def members(self, queue: str) -> Iterable[JobInfo]: ...


@dataclass(slots=True)
class _Kept:
    world: Hashable
    stamp: int
    index: QueueVictims


class KeptIndexes:
    """Per virtual cluster, its index of every job the running table files there (what an
    execution takes from them is its own: `QueueVictims.renewed`), with the table's stamp
    for that virtual cluster when it was brought up to date."""

    def __init__(self) -> None:
        self._kept: dict[str, _Kept] = {}
        self.reused = 0
        """Indexes brought up to date rather than built anew (for benchmarks and tests)."""
        self.relisted = 0
        """Jobs re-listed to bring them up to date (for benchmarks and tests)."""

    def current(self, queue: str, world: Hashable, table: Table, segment: Segment,
                order: Callable[[list[VictimUnit]], list[VictimUnit]]) -> QueueVictims:
        """The virtual cluster's index as the table files its jobs now, under `world`
        (what else the units read: the model, the hooks, the nodes' layout): the kept one
        brought up to date by the jobs the table says changed there since, or, where it
        forgot them or `world` moved, built anew from its members. `segment`: a job's rank
        and units as the table files it now."""
        stamp = table.queue_stamp(queue)
        kept = self._kept.get(queue)
        changed = None if kept is None or kept.world != world else \
            table.changed_since(queue, kept.stamp)
        if kept is None or changed is None:
            units: list[VictimUnit] = []
            ranks: list[Rank] = []
            for job in table.members(queue):
                found = segment(job)
                if found is not None:
                    units.extend(found[1])
                    ranks.extend([found[0]] * len(found[1]))
            index = QueueVictims(units, lambda u: (), order, ranks=ranks)
            self._kept[queue] = _Kept(world, stamp, index)
            return index
        index = kept.index
        for job in changed:
            self.relisted += 1
            index.drop(job)
            found = segment(job)
            if found is not None:
                index.put(job, *found)
        kept.stamp = stamp
        self.reused += 1
        return index
