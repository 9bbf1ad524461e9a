"""EASY backfill's shadow time (`shoal.scheduler.actions.backfill`), with what it reads of
the running jobs kept between cycles (issue 18).

The shadow time is when enough GPUs of the blocked head's node pools will be free for it:
the free GPUs now, then each running task's GPUs at its expected end (its start plus its
job's runtime estimate; never, without one), soonest first, none before now. Worked out
afresh, that reads every running job and every node of the pools, each cycle. What it
reads changes only where capacity is taken or given back (`ClusterState.taken`,
`release_epoch`), nodes change (`layout`), or a job's running list or spec changes (the
model's `changes` log) — so per set of pools the model keeps the free GPUs and the
expected ends in order, and a cycle in which none of that moved reads them as they are.
Only the clock is applied afresh: a task past its expected end is counted as ending now.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shoal.api.time_limits import runtime_estimate
from shoal.scheduler.jobs import JobInfo

if TYPE_CHECKING:
    from shoal.scheduler.session import Session

KEPT_POOL_SETS = 64
"""Sets of node pools kept at once; more (heads of many shapes) start the table over."""


@dataclass(slots=True)
class _Pools:
    """What the shadow time reads of one set of node pools."""

    nodes: frozenset[str]
    ends_stamp: tuple[int, int]
    """(the model's `changes.stamp`, the cluster's `layout`) when `ends` was read."""
    ends: list[tuple[float, int]]
    """(expected end, GPUs) of each running task on the nodes that has a start, in order."""
    unstarted: list[tuple[float | None, int]]
    """(runtime estimate, GPUs) of each running task on the nodes without a start."""
    free_stamp: tuple[int, int, int]
    """(`taken`, `release_epoch`, `layout`) when `free` was counted."""
    free: int


class ShadowTimes:
    """Per set of node pools, what the shadow time reads (module docstring)."""

    def __init__(self) -> None:
        self._pools: dict[frozenset[Hashable], _Pools] = {}
        self._layout = -1

    def shadow(self, session: Session, head: JobInfo, need: int) -> tuple[float, int]:
        """When the head's pools will have `need` free GPUs, and how many beyond it then."""
        cluster = session.cluster
        keys = frozenset(session.pool_key(g) for g in head.groups_with_pending())
        if cluster.layout != self._layout or len(self._pools) > KEPT_POOL_SETS:
            self._pools.clear()
            self._layout = cluster.layout
        kept = self._pools.get(keys)
        if kept is None:
            nodes: set[str] = set()
            for group in head.groups_with_pending():
                nodes.update(s.name for s in session.pool_for(group).nodes)
            kept = self._pools[keys] = _Pools(frozenset(nodes), (-1, -1), [], [],
                                              (-1, -1, -1), 0)
        free_stamp = (cluster.taken, cluster.release_epoch, cluster.layout)
        if kept.free_stamp != free_stamp:
            by_name = cluster.by_name
            kept.free = sum(by_name[n].gpu for n in kept.nodes)
            kept.free_stamp = free_stamp
        now = session.now
        free = kept.free
        if free >= need:
            return now, free - need
        ends_stamp = (session.model.changes.stamp, cluster.layout)
        if kept.ends_stamp != ends_stamp:
            kept.ends, kept.unstarted = _running_ends(session, kept.nodes)
            kept.ends_stamp = ends_stamp
        # The tasks past their expected end count as ending now: ordered among themselves
        # by their GPUs, as (now, GPUs) pairs sort.
        overdue = bisect_right(kept.ends, (now, math.inf))
        soon = sorted([*((now, gpus) for _, gpus in kept.ends[:overdue]),
                       *((max(now + e if e is not None else math.inf, now), gpus)
                         for e, gpus in kept.unstarted)])
        ends = heapq.merge(soon, kept.ends[overdue:]) if soon else kept.ends
        for end, gpus in ends:
            free += gpus
            if free >= need:
                return end, free - need
        return math.inf, 0


def fresh_shadow(session: Session, head: JobInfo, need: int) -> tuple[float, int]:
    """`ShadowTimes.shadow` worked out from scratch (a model judging afresh)."""
    nodes: set[str] = set()
    for group in head.groups_with_pending():
        nodes.update(s.name for s in session.pool_for(group).nodes)
    free = sum(session.cluster.by_name[n].gpu for n in nodes)
    if free >= need:
        return session.now, free - need
    ends: list[tuple[float, int]] = []
    for job in session.model.active.values():  # the jobs that hold tasks
        estimate = runtime_estimate(job.job)
        for task in job.running:
            if task.node in nodes:
                gpus = job.job.group(task.ref.group).resources.gpu
                start = task.started if task.started is not None else session.now
                end = start + estimate if estimate is not None else math.inf
                ends.append((max(end, session.now), gpus))
    for end, gpus in sorted(ends):
        free += gpus
        if free >= need:
            return end, free - need
    return math.inf, 0


def _running_ends(session: Session, nodes: frozenset[str]
                  ) -> tuple[list[tuple[float, int]], list[tuple[float | None, int]]]:
    ends: list[tuple[float, int]] = []
    unstarted: list[tuple[float | None, int]] = []
    for job in session.model.active.values():
        estimate = runtime_estimate(job.job)
        for task in job.running:
            if task.node in nodes:
                gpus = job.job.group(task.ref.group).resources.gpu
                if task.started is None:
                    unstarted.append((estimate, gpus))
                else:
                    end = task.started + estimate if estimate is not None else math.inf
                    ends.append((end, gpus))
    ends.sort()
    return ends, unstarted
