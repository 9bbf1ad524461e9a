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

Per-group minimums (Volcano's `minTaskMember`) are not a feature yet; `GangNeed` is where
they will go: each group's floor is placed first, then the rest of `count` as above.
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

    @staticmethod
    def of(session: Session, job: JobInfo) -> GangNeed:
        return GangNeed(session.min_tasks(job))


def preferred(job: JobInfo, need: GangNeed, order: TaskOrderKey) -> Wanted:
    """The first choice: the first `need.count` pending tasks in task order."""
    return job.first_pending(need.count, order)


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
    amounts: dict[str, int] = {}
    for dim in dims:
        left = need.count
        amount = 0
        for value, pending in sorted((g.resources.get(dim), n) for g, n in groups):
            take = min(left, pending)
            amount += value * take
            left -= take
            if left <= 0:
                break
        amounts[dim] = amount
    extras = {d: v for d, v in amounts.items() if d not in CORE_DIMENSIONS}
    return Resources.of(amounts.get("cpu", 0), amounts.get("memory", 0),
                        amounts.get("gpu", 0), extras)


def least_gpus(job: JobInfo, need: GangNeed) -> int:
    """The fewest GPUs any choice asks (`least_request`'s GPUs)."""
    return least_request(job, need).gpu


def room_suffices(need: GangNeed, counts: Iterable[tuple[int, int]]) -> bool:
    """A necessary condition for some choice to fit: the replicas each group could place,
    capped by how many of its tasks pend, add up to `need.count`. `counts`: per group
    (replicas that fit, replicas pending)."""
    return sum(min(fit, pending) for fit, pending in counts) >= need.count


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
            self._groups.append(_GroupRoom(request, pending, counts, sum(counts.values())))

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
            (room.pending if room.request.is_zero() else room.total, room.pending)
            for room in self._groups))


@dataclass(slots=True)
class _GroupRoom:
    request: Resources
    pending: int
    counts: dict[int, int]
    """id of a pool node → replicas of `request` it holds now."""
    total: int
