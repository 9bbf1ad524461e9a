"""Which of a gang's pending tasks start it: any `minAvailable` of them that fit.

A gang job needs `count` of its tasks placed together now (`Session.min_tasks`: its
`minAvailable` less the tasks that already count). *Which* tasks is not fixed: any `count`
pending tasks satisfy the job, whatever their task group. Taking the first `count` in
task-group order, as Shoal first did, made a job with `minAvailable: 1` whose first group
does not fit wait while a task of its second group fits — and start when the groups were
swapped. allocate, enqueue, backfill, preempt and reclaim all choose through this module, so
they agree on what would start a job.

How a choice is made (`place_gang`):

1. the first `count` pending tasks in task order (the task-order plugins, then group order
   and index): Volcano's order, and the one choice for a job with one task group or whose
   minimum is all its pending tasks, so those are placed exactly as before;
2. if they do not all fit, the same order again, but each group places as many of its
   replicas as fit, up to what is still missing, and what a group cannot place falls to the
   groups after it.

The second pass is greedy, not a search over every split of `count` among the groups (a
gang of 64 tasks in three groups has thousands): replicas of one group are identical, so a
group that cannot place one more replica cannot place any, and no split it skips could use a
replica it refused. It can miss a split only where an earlier group's placed replicas take
room a later group needed more, which bin-packing placement makes rare.

The bounds the cheap checks use (`least_request`, `room_suffices`) hold for *every* choice,
so a job is never turned away, nor denied a preemption, for its first groups alone.

Per-group minimums (a task group's `minAvailable`, Volcano's `minTaskMember`) narrow the
choices: `GangNeed.floors` holds each group's shortfall below its own minimum, and every
choice holds those tasks — the first choice takes them first, then the rest of `count` in
task order; the second pass places each floor before its greedy fill. A master/worker gang
whose workers fit but whose master does not is not started on workers alone. The bounds
count the floors as fixed and take only the rest from the cheapest groups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from shoal.api.decisions import PendingReason
from shoal.api.objects import TaskGroup
from shoal.api.resources import CORE_DIMENSIONS, Resources
from shoal.core.nodes import FitMemo, NodeState
from shoal.core.statement import Statement
from shoal.scheduler.fitting import place_replicas
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.session import Session

Wanted = list[tuple[TaskGroup, list[int]]]
"""Tasks to place together, grouped by task group: (group, replica indices)."""

TaskOrderKey = Callable[[TaskGroup, int], tuple[Any, ...]] | None


@dataclass(frozen=True, slots=True)
class GangNeed:
    """How many of a job's pending tasks must be placed together now."""

    count: int
    """Tasks still missing from the gang's minimum (≤ 0: none)."""
    floors: tuple[tuple[str, int], ...] = ()
    """(group, tasks) each choice must include: the group's shortfall below its own
    minimum (`JobInfo.shortfalls`); their sum is at most `count`."""

    @staticmethod
    def of(session: Session, job: JobInfo, at_least: int = 0) -> GangNeed:
        """What the job misses now (`Session.min_tasks`, at least `at_least`), with its
        groups' shortfalls when it is placed as a gang — or, for a job whose first start
        is an admission (`JobInfo.admits_partially`), its least admission as floors
        (`least_admission`): no start of it is smaller. A gang's start that does not reduce
        it (preempt's, reclaim's) still needs its whole gang minimum."""
        if job.admits_partially():
            least = least_admission(job)
            gang = session.min_tasks(job) if session.is_gang(job) else 0
            return GangNeed(max(at_least, least.count, gang), least.floors)
        count = max(at_least, session.min_tasks(job))
        floors = tuple(job.shortfalls()) if job.floors and session.is_gang(job) else ()
        if floors:
            return GangNeed(count, floors)
        # Without floors a need is its count alone: one value per count, made once (asked
        # per preemptor searched, and per class shape counted, `ShortSearches._unfit_now`).
        need = _PLAIN.get(count)
        if need is None:
            need = _PLAIN[count] = GangNeed(count)
        return need

    def floor(self, group: str) -> int:
        for name, short in self.floors:
            if name == group:
                return short
        return 0


_PLAIN: dict[int, GangNeed] = {}
"""`GangNeed(count)` per count (immutable values, shared)."""


def least_admission(job: JobInfo) -> GangNeed:
    """A partial admission's smallest start (`shoal.scheduler.partial_admission`) as a
    need: every pending group's least admitted count, each as a floor."""
    floors = tuple((g.name, job.least_admitted(g)) for g in job.groups_with_pending())
    return GangNeed(sum(n for _, n in floors), floors)


def preferred(job: JobInfo, need: GangNeed, order: TaskOrderKey) -> Wanted:
    """The first choice: each group's floor (`need.floors`), then the first of the other
    pending tasks in task order, up to `need.count`."""
    if not need.floors:
        return job.first_pending(need.count, order)
    groups = job.groups_with_pending()
    every = [(group, index) for group in groups for index in job.pending[group.name]]
    if order is not None:  # as `JobInfo.first_pending` orders them
        position = {g.name: p for p, g in enumerate(groups)}
        every.sort(key=lambda t: (order(t[0], t[1]), position[t[0].name], t[1]))
    left = dict(need.floors)
    chosen: set[tuple[str, int]] = set()
    for group, index in every:
        if left.get(group.name, 0) > 0:
            left[group.name] -= 1
            chosen.add((group.name, index))
    rest = need.count - len(chosen)
    for group, index in every:
        if rest <= 0:
            break
        if (group.name, index) not in chosen:
            chosen.add((group.name, index))
            rest -= 1
    by_group: dict[str, tuple[TaskGroup, list[int]]] = {}
    for group, index in every:
        if (group.name, index) in chosen:
            by_group.setdefault(group.name, (group, []))[1].append(index)
    return list(by_group.values())


def has_alternatives(job: JobInfo, need: GangNeed) -> bool:
    """Whether another choice than `preferred` exists: more tasks pend than are needed, in
    more than one group (a group's replicas are interchangeable)."""
    return len(job.pending) > 1 and job.pending_count() > need.count


def pending_groups(job: JobInfo) -> list[tuple[TaskGroup, int]]:
    """Every group with pending tasks and how many pend, in group order."""
    return [(g, len(job.pending[g.name])) for g in job.groups_with_pending()]


def least_request(job: JobInfo, need: GangNeed) -> Resources:
    """Per dimension, the least any choice of `need.count` pending tasks asks: the sum of the
    `count` smallest amounts among them. Every choice asks at least this in every dimension
    (a bound, not a choice: each dimension may take its tasks from other groups)."""
    groups = pending_groups(job)
    if len(groups) == 1:
        group, _ = groups[0]
        return group.resources.scale(min(need.count, groups[0][1]))
    dims = sorted({d for g, _ in groups for d in g.resources.dimensions()},
                  key=lambda d: (d not in CORE_DIMENSIONS, d))
    # Each group's floor is in every choice; only the rest is taken from the cheapest.
    floors = [(g, min(need.floor(g.name), n)) for g, n in groups]
    rest = need.count - sum(f for _, f in floors)
    others = [(g, n - f) for (g, n), (_, f) in zip(groups, floors, strict=True)]
    amounts: dict[str, int] = {}
    for dim in dims:
        left = rest
        amount = sum(g.resources.get(dim) * f for g, f in floors)
        for value, pending in sorted((g.resources.get(dim), n) for g, n in others):
            if left <= 0:
                break
            take = min(left, pending)
            amount += value * take
            left -= take
        amounts[dim] = amount
    extras = {d: v for d, v in amounts.items() if d not in CORE_DIMENSIONS}
    return Resources.of(amounts.get("cpu", 0), amounts.get("memory", 0),
                        amounts.get("gpu", 0), extras)


def least_gpus(job: JobInfo, need: GangNeed) -> int:
    """The fewest GPUs any choice asks (`least_request`'s GPUs)."""
    return least_request(job, need).gpu


def room_suffices(need: GangNeed, counts: Iterable[tuple[str, int, int]]) -> bool:
    """A necessary condition for some choice to fit: the replicas each group could place,
    capped by how many of its tasks pend, add up to `need.count`, and each group could place
    its floor. `counts`: per group (name, replicas that fit, replicas pending)."""
    room = 0
    for name, fit, pending in counts:
        if need.floors and min(fit, pending) < need.floor(name):
            return False
        room += min(fit, pending)
    return room >= need.count


def place_gang(session: Session, memo: FitMemo, statement: Statement, job: JobInfo,
               need: GangNeed) -> PendingReason | None:
    """Place a choice of `need.count` pending tasks inside `statement` (see the module's
    text), or return why the first choice did not fit; then the statement may still hold
    part of it, for the caller to roll back or discard."""
    order = session.task_order()
    if not has_alternatives(job, need):
        # The one choice, placed as allocate always placed a gang: ten thousand jobs that do
        # not fit are turned down on this path in each cycle of `bench/cycle.py`.
        for group, indices in preferred(job, need, order):
            reason = place_replicas(session, memo, statement, job, group, indices)
            if reason is not None:
                return reason
        return None
    start = statement.savepoint()
    first_reason: PendingReason | None = None
    for group, indices in preferred(job, need, order):
        first_reason = place_replicas(session, memo, statement, job, group, indices)
        if first_reason is not None:
            break
    if first_reason is None:
        return None
    statement.roll_back(start)
    # The second pass learns no fit bounds: its statement is never empty after the first
    # replica, and a bound recorded for a choice that is then rolled back would be too low.
    trial = FitMemo(session.cluster)
    missing = need.count
    for name, short in need.floors:
        group = job.job.group(name)
        indices = list(job.pending.get(name, ()))[:short]
        if len(indices) < short or \
                place_up_to(session, trial, statement, job, group, indices) < short:
            statement.roll_back(start)
            return first_reason
        missing -= short
    for group, indices in job.first_pending(job.pending_count(), order):
        if missing <= 0:
            break
        missing -= place_up_to(session, trial, statement, job, group, indices[:missing])
    if missing <= 0:
        return None
    statement.roll_back(start)
    return first_reason


def place_up_to(session: Session, memo: FitMemo, statement: Statement, job: JobInfo,
                group: TaskGroup, indices: list[int]) -> int:
    """Place as many replicas of `indices` as fit, in order; how many. The group's replicas
    are identical: once one does not fit, neither does the next, so it stops there."""
    placed = 0
    for index in indices:
        mark = statement.savepoint()
        if place_replicas(session, memo, statement, job, group, [index]) is not None:
            statement.roll_back(mark)
            break
        placed += 1
    return placed


def replicas_fitting(nodes: Iterable[NodeState], request: Resources, enough: int,
                     excluded: set[int] | frozenset[int] = frozenset()) -> int:
    """How many replicas of `request` the nodes' free capacity holds, counted node by node
    (stopping once `enough` is reached); a zero request fits anywhere."""
    if request.is_zero():
        return enough
    room = 0
    for state in nodes:
        if state.ordinal not in excluded:
            room += state.how_many(request)
            if room >= enough:
                break
    return room


class Room:
    """`room_suffices` kept up to date while capacity is freed on a few nodes at a time (a
    preemption's evictions, one unit after another): how many replicas of each of the job's
    pending groups each node of the group's pool holds now. Asking costs O(groups) rather
    than a scan of the pools; a preemptor of whole nodes evicting one-GPU units scanned 200
    nodes per unit in `bench/preempt.py`."""

    def __init__(self, session: Session, job: JobInfo, need: GangNeed) -> None:
        self.need = need
        self._groups: list[_GroupRoom] = []
        excluded = session.excluded_nodes
        for group, pending in pending_groups(job):
            request = group.resources
            counts: dict[int, int] = {}
            if not request.is_zero():
                for state in session.pool_for(group).nodes:
                    if state.ordinal not in excluded:
                        counts[id(state)] = state.how_many(request)
            self._groups.append(_GroupRoom(group.name, request, pending, counts,
                                           sum(counts.values())))

    def freed(self, states: Iterable[NodeState]) -> None:
        """Capacity was freed on `states` (each counted again)."""
        for room in self._groups:
            for state in states:
                old = room.counts.get(id(state))
                if old is not None:
                    new = state.how_many(room.request)
                    room.counts[id(state)] = new
                    room.total += new - old

    def suffices(self) -> bool:
        return room_suffices(self.need, (
            (room.name, room.pending if room.request.is_zero() else room.total, room.pending)
            for room in self._groups))


@dataclass(slots=True)
class _GroupRoom:
    name: str
    request: Resources
    pending: int
    counts: dict[int, int]
    """id of a pool node → replicas of `request` it holds now."""
    total: int
