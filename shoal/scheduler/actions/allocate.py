"""The allocate action: place waiting jobs, virtual cluster by virtual cluster.

The virtual cluster with the smallest queue-order key (capacity plugin: below its min first,
then smallest dominant share per weight) gets its next job; the key is recomputed after every
job. A gang job's missing `minAvailable` tasks are placed in one statement, committed only if
all of them fit; any of its pending tasks may be among them, not only its first ones in
task-group order (`shoal.scheduler.gang_choice`). After every job has had its turn, ready
gang jobs get their surplus tasks one at a time, so no job's extras come before another
job's minimum (Volcano pushes a ready job back for the same reason). Default-scheduler jobs
are placed task by task. A job with a `minCount` below a group's replicas starts whole or
partially admitted, all at once (`shoal.scheduler.partial_admission`).

Best-effort tasks — of a task group that requests no resources at all, Kubernetes'
BestEffort class — are not allocate's (Volcano's allocate skips them too): the backfill
action places them once every job has had its turn, so they never take a task slot
(`capacity.pods`) ahead of work that asks for resources. A gang made only of best-effort
tasks is backfill's as a whole. A gang that mixes them is placed here, best-effort members
of its minimum included: its minimum starts together or not at all (Volcano instead counts
pending best-effort tasks as ready and may run such a gang short of its minimum); its
best-effort surplus is backfill's. In a profile without backfill (fifo, sjf, las) such
tasks wait with an `Unschedulable` reason saying so.

With `ordering: global` every job is in one order (virtual clusters still enforce quotas),
as the single-queue baselines need. With `strict: true` a queue is strictly ordered (Slurm's
priority order, Kueue's StrictFIFO): once its head job cannot be placed, the jobs behind it
wait with a `Blocked` reason — unless the backfill action can place them without delaying
the head. A job that has starved (the priority plugin's aging, `shoal.scheduler.aging`) holds
its virtual cluster the same way once it is the first that cannot be placed, in any profile.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from shoal.api.decisions import PendingKind, PendingReason
from shoal.api.objects import TaskGroup
from shoal.api.resources import CPU, GPU, MEMORY, PODS, Resources
from shoal.core.nodes import FitMemo, NodePool
from shoal.scheduler.actions.class_walk import walk_classes
from shoal.scheduler.aging import held_back_reason, reservation_reason
from shoal.scheduler.class_lines import static_order
from shoal.scheduler.fitting import Diagnosis, place_replicas, pool_refusal, refusal
from shoal.scheduler.flavors import choose
from shoal.scheduler.framework import Starvation
from shoal.scheduler.gang_choice import GangNeed, place_gang
from shoal.scheduler.job_classes import UNWORDED, Probe, job_class
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.partial_admission import admit
from shoal.scheduler.plugins.capacity import Capacity
from shoal.scheduler.plugins.gang import Gang
from shoal.scheduler.registry import Arguments
from shoal.scheduler.session import Session
from shoal.scheduler.strict_line import StrictLine


class Ordering(StrEnum):
    PER_QUEUE = "per-queue"
    """Virtual clusters take turns (queue order), each serving its own jobs in order."""
    GLOBAL = "global"
    """One order over every job, virtual clusters ignored for ordering (quotas still hold):
    the classic single-queue baselines (FIFO, SJF, LAS)."""


class AllocateArguments(Arguments):
    strict: bool = False
    ordering: Ordering = Ordering.PER_QUEUE


class Allocate:
    name = "allocate"

    def __init__(self, arguments: AllocateArguments) -> None:
        self.strict = arguments.strict
        self.ordering = arguments.ordering
        self.backfill_runs = True
        """Whether the profile runs the backfill action, which alone places best-effort
        tasks (`Profile.actions` sets it); False: they are told they never will be."""
        self.later: tuple[str, ...] | None = None
        """The actions the profile runs after this one (`Profile.actions` sets it); None:
        not known, and the reasons of every waiting job are written as the walk goes."""
        self.lines_for_backfill = False
        """Whether a backfill action by runtime estimates follows, which walks strict
        FIFO's line by class (`shoal.scheduler.actions.easy_walk`): the class lines are then
        kept in the strict-line cycles, for it (`Profile.actions` sets it)."""
        self._later_read: tuple[str, ...] | None = None
        self._lazy_after = False
        """Whether only `LAZY_READERS` follow, as read from `later` when last it changed."""

    def execute(self, session: Session) -> None:
        lines = session.model.class_lines
        if self._by_class(session) and lines.sync(session):
            self._class_walk(session)
            return
        if self._in_submission_order(session):
            if self.lines_for_backfill:
                lines.sync(session)  # what moved is filed every cycle, not left to pile up
            else:
                lines.drop()  # not kept up to date by a cycle that does not read them
            self._strict_line(session)
            return
        lines.drop()
        memo = session.fit_memo
        by_queue: dict[str, deque[JobInfo]] = {}
        single = self.ordering is Ordering.GLOBAL
        # A job that gave up tasks to preempt or reclaim earlier in this cycle (a profile
        # may run them first) waits for the next one: placing it again would undo that.
        waiting = [j for j in session.candidates if j.name not in session.preempted] \
            if session.preempted else session.candidates
        for job in sorted(waiting, key=session.job_order_key):
            by_queue.setdefault(GLOBAL_QUEUE if single else job.queue, deque()).append(job)
        heap: list[tuple[tuple[Any, ...], str]] = [
            (self._queue_key(session, q), q) for q in by_queue]
        heapq.heapify(heap)
        rules = session.hooks.starvations
        while heap:
            _, name = heapq.heappop(heap)
            jobs = by_queue[name]
            # While nothing is committed no queue's order key moves, so this queue stays
            # first and serves its next job without a trip through the heap: in a backlog
            # where nothing fits, each queue is walked in one run.
            while jobs:
                commits = session.commits
                head = jobs.popleft()
                placed = allocate_job(session, memo, head)
                if not self.backfill_runs and not placed:
                    waits_for_backfill(head)
                if not placed and not session.job_ready(head) and head.reason is not None \
                        and head.reason.kind is not PendingKind.UNSCHEDULABLE:
                    if self.strict:
                        block(session, name, head, list(jobs))
                        break
                    since = starving_since(rules, head)
                    if since is not None:
                        reserve(session, name, head, list(jobs), since)
                        break
                if session.commits != commits:
                    # A queue's order key reads what is placed: unchanged when nothing was.
                    if jobs:
                        heapq.heappush(heap, (self._queue_key(session, name), name))
                    break
        # Under strict ordering nothing behind a blocked head goes ahead of it, surplus
        # replicas of running jobs included.
        behind = {j.name for jobs in session.blocked.values() for j in jobs}
        # Only a job that holds or ended tasks can be ready (`Session.job_ready`).
        surplus = [j for j in waiting if (j.holding or j.ended) and j.name not in behind
                   and session.is_gang(j) and j.pending and session.job_ready(j)]
        for job in sorted(surplus, key=session.job_order_key):
            if not place_one_by_one(session, memo, job) and not self.backfill_runs:
                waits_for_backfill(job)


    def _by_class(self, session: Session) -> bool:
        """Whether the cycle walks the class lines (`shoal.scheduler.actions.class_walk`),
        each virtual cluster's or, under `ordering: global`, all merged in one order: not
        strict, a job order that reads only the job, no job that can starve, and after this
        action only ones that read what it left unwritten through the session."""
        later = self.later
        if later is not self._later_read:  # set once by `Profile.actions`: read once
            self._later_read = later
            self._lazy_after = later is not None and set(later) <= LAZY_READERS
        return not self.strict and self._lazy_after \
            and static_order(session.hooks) and session.walk_by_class()

    def _class_walk(self, session: Session) -> None:
        memo = session.fit_memo
        admissions = session.admissions
        assert admissions is not None

        asked: dict[JobInfo, int] = {}
        """The job `refuse` last let through, with its class."""

        def refuse(job: JobInfo, klass: int) -> PendingReason | None:
            refused = class_refusal(session, memo, job, klass)
            asked.clear()
            if refused is None:
                asked[job] = klass
            return refused

        def visit(job: JobInfo) -> None:
            # The walk visits a classed job right after asking `Misfits.known` and then
            # `refuse` of it, with nothing placed in between.
            klass = asked.pop(job, None)
            asked.clear()
            placed = allocate_job(session, memo, job, asked=klass)
            if not self.backfill_runs and not placed:
                waits_for_backfill(job)

        single = self.ordering is Ordering.GLOBAL
        served = walk_classes(session, session.model.class_lines, admissions.verdict,
                              lambda name: self._queue_key(session, name), visit,
                              (lambda _: GLOBAL_QUEUE) if single else (lambda queue: queue),
                              None if session.worded else refuse,
                              room_refusals(session), admissions.by_class)
        # Only a job that holds or ended tasks can be ready (`Session.job_ready`): of the
        # admitted ones, only those visited or loose may.
        surplus = [j for j in served if (j.holding or j.ended)
                   and session.is_gang(j) and j.pending and session.job_ready(j)]
        for job in sorted(surplus, key=session.job_order_key):
            if not place_one_by_one(session, memo, job) and not self.backfill_runs:
                waits_for_backfill(job)

    def _in_submission_order(self, session: Session) -> bool:
        """Whether the cycle serves one strictly ordered line of jobs in submission order
        (strict FIFO over the whole cluster) — the gang plugin's order aside, which puts
        jobs below their minimum first: then it walks the admissions only up to the first
        job that cannot be placed, and the line behind it is written out only if someone
        reads it whole (`Session.block_lazily`); a report reads it as one span
        (`shoal.scheduler.strict_line`)."""
        admissions = session.admissions
        return self.strict and self.ordering is Ordering.GLOBAL \
            and all(isinstance(p, Gang) for p in session.hooks.job_orders) \
            and not session.preempted \
            and admissions is not None and not admissions.done and not admissions.admitted

    def _strict_line(self, session: Session) -> None:
        """`execute` for one line in submission order, as the queue loop does it for the
        one queue of `ordering: global` under `strict`. Under the gang plugin's order, jobs
        that met their minimum (wanting only surplus) come after all others: they are set
        aside while the walk goes on, and served after it if nothing blocked it."""
        memo = session.fit_memo
        served: list[JobInfo] = []
        later: list[JobInfo] = []
        gang_order = bool(session.hooks.job_orders)

        def serve(head: JobInfo) -> bool:
            """Place the head; True if it blocks the line."""
            placed = allocate_job(session, memo, head)
            if not self.backfill_runs and not placed:
                waits_for_backfill(head)
            if not placed and not session.job_ready(head) and head.reason is not None \
                    and head.reason.kind is not PendingKind.UNSCHEDULABLE:
                done = {id(j) for j in served}
                done.add(id(head))
                reason = blocked_reason(head, GLOBAL_QUEUE)

                def write(candidates: list[JobInfo]) -> None:
                    behind = sorted((j for j in candidates if id(j) not in done),
                                    key=session.job_order_key)
                    block(session, GLOBAL_QUEUE, head, behind, reason)
                # Read as one span by a report (`shoal.scheduler.strict_line`).
                session.block_lazily(StrictLine(
                    session, head, reason, [j for j in later if id(j) not in done], write))
                return True
            served.append(head)
            return False

        blocked = False
        while (job := session.next_candidate()) is not None:
            if gang_order and job.gang_met:
                later.append(job)
            elif serve(job):
                blocked = True
                break
        if not blocked:
            for job in later:
                if serve(job):
                    break
        surplus = [j for j in served
                   if session.is_gang(j) and j.pending and session.job_ready(j)]
        for job in sorted(surplus, key=session.job_order_key):
            if not place_one_by_one(session, memo, job) and not self.backfill_runs:
                waits_for_backfill(job)

    @staticmethod
    def _queue_key(session: Session, name: str) -> tuple[Any, ...]:
        if name == GLOBAL_QUEUE:
            return ()
        return session.queue_order_key(session.quota.get(name))


#: The one ordering bucket of `ordering: global` (not a virtual cluster).
GLOBAL_QUEUE = "*"

#: Actions that may follow a class walk: they read waiting jobs' admissions and reasons only
#: through the session (`Session.candidates`, `Session.settle`), which writes them out first.
#: Preempt reads its preemptors from `Session.candidates` (las runs it after allocate).
LAZY_READERS = frozenset({"backfill", "elastic", "preempt"})


def is_best_effort(group: TaskGroup) -> bool:
    """A group whose tasks request no resources (Kubernetes' BestEffort class)."""
    return group.resources.is_zero()


def allocate_job(session: Session, memo: FitMemo, job: JobInfo, best_effort: bool = False,
                 asked: int | None = None) -> bool:
    """Place what the job needs now; True if it placed anything. `best_effort`: its
    best-effort tasks, for the backfill action; else the others (module docstring).

    A job whose class was turned down earlier in the cycle, with nothing it reads changed
    since, is not tried again: it gets the same reason (`shoal.scheduler.job_classes`); nor
    is one turned down by what its class's trial asks before it touches a node
    (`class_refusal`). `asked`: the job's class, where the caller asked both of it just
    now (nothing moved since) and neither turned it down: they are not asked again."""
    misfits = session.misfits
    if asked is None or best_effort:
        found = job_class(session, job)
        if found is None:
            return _allocate_job(session, memo, job, best_effort)
        klass = found
        known = misfits.known(memo, klass, best_effort)
        if known is not None:
            job.reason = known
            return False
        if not best_effort:
            refused = class_refusal(session, memo, job, klass)
            if refused is not None:
                job.reason = refused
                misfits.note(memo, klass, False, refused)
                return False
    else:
        klass = asked
    # The quota tree grants what the class's trial asks first where `class_refusal` asked
    # it (its probe is known) and let the class through.
    probe = None if best_effort else session.model.class_verdicts.probes.get(klass)
    granted = probe if probe is not None and probe.hooks is session.hooks else None
    before = job.reason
    placed = _allocate_job(session, memo, job, best_effort, klass, granted)
    reason = job.reason
    if not placed and reason is not None and reason is not before:
        misfits.note(memo, klass, best_effort, reason)
    return placed


def class_refusal(session: Session, memo: FitMemo, job: JobInfo, klass: int
                  ) -> PendingReason | None:
    """Why a fresh job of the class is turned down before a node is tried, asked what the
    class's trial asks first (`shoal.scheduler.job_classes.Probe`, `fitting.refusal`), or
    None (not known: the trial says). Unworded (`Session.worded`) and under the capacity
    plugin alone, a request the cluster as a whole is short of is refused as the quota
    tree's root check refuses it (`QuotaTree.check`), the message left unworded."""
    probe = session.model.class_verdicts.probes.get(klass)
    if probe is None or probe.hooks is not session.hooks:
        return None
    if capacity_alone(session):
        short = first_short(probe.request, cluster_room(session))
        if short is None and open_path(session, job.account):
            # The quota tree says yes without being asked: only the pool may say no.
            if not session.worded:
                # A bound another class of the same request noted this cycle answers it
                # as `pool_refusal` would, without a new reason object per class.
                known = pool_short(session, probe)
                if known is not None:
                    return known
            pool = session.cluster.pools.get(probe.pool_key) or session.pool_for(probe.group)
            reason = pool_refusal(session, memo, probe.group, probe.count, pool)
            return None if isinstance(reason, NodePool) else \
                gang_reason(job, probe.need, reason)
        if short is not None and not session.worded:
            return _short_reason(probe, short)
    reason = refusal(session, memo, job.account, probe.group, probe.count, probe.request,
                     probe.surplus)
    return None if isinstance(reason, NodePool) else gang_reason(job, probe.need, reason)


def room_refusals(session: Session) -> Callable[[int], PendingReason | None] | None:
    """Per class, the reason `class_refusal` gives it now when the cluster as a whole is
    short of its request, or its node pool is (`pool_short`) — unworded, under the
    capacity plugin alone — else None; None outright where that path is not taken. The
    room is read as each class is asked (it moves with every placement; `cluster_room`
    keeps it while it does not): a class costs a few look-ups and comparisons, as its kept
    answer would (`Misfits.standing`), after a completion or a bind moved the world its
    kept answer was found in."""
    if session.worded or not capacity_alone(session):
        return None
    probes = session.model.class_verdicts.probes
    hooks = session.hooks
    quota = session.quota
    seen: list[Any] = [None, None, None]
    """The quota tree's capacity and root usage last read, and `cluster_room` of them:
    asked of many classes at one moment, the room is worked out once."""

    def refused(klass: int) -> PendingReason | None:
        probe = probes.get(klass)
        if probe is None or probe.hooks is not hooks:
            return None
        if quota.capacity is not seen[0] or quota.root.usage is not seen[1]:
            seen[0], seen[1] = quota.capacity, quota.root.usage
            seen[2] = cluster_room(session)
        room: Resources = seen[2]
        request = probe.request
        if request.extras:
            dimension = first_short(request, room)
        elif request.cpu > room.cpu:
            dimension = CPU
        elif request.memory > room.memory:
            dimension = MEMORY
        elif request.gpu > room.gpu:
            dimension = GPU
        else:
            return pool_short(session, probe)
        if dimension is None:
            return pool_short(session, probe)
        known = probe.short.get(dimension)
        return known if known is not None else _short_reason(probe, dimension)
    return refused


def pool_short(session: Session, probe: Probe) -> PendingReason | None:
    """The reason `class_refusal` gives a class the cluster's room does not refuse when its
    node pool's fit bound does (`fitting.pool_refusal`) — or None, where that is not known
    without a side effect: no bound below its count, or one whose reason would first count
    the pool and record what it found (no `Diagnosis` noted with the bound yet). Most
    classes of whole-node tasks wait so, behind free GPUs scattered over many nodes: asked
    again after every bind, each costs a few look-ups, not a trial."""
    if not open_path(session, probe.account):
        return None
    pool = session.cluster.pools.get(probe.pool_key)
    request = probe.group.resources
    if pool is None or not pool.nodes or request.is_zero():
        return None
    # A noted count comes with a bound (one memo entry): the bound is the one read, not the
    # GPU slots `pool_refusal` counts where there is none.
    entry = session.fit_memo.entry(pool, request)
    if entry is None:
        return None
    note = entry.note
    if not isinstance(note, Diagnosis) or note.main is None or entry.replicas >= probe.count:
        return None
    main = note.main
    # `insufficient`'s unworded reason through `gang_reason`: the root's refusal of that
    # dimension, field for field, but for a node pool full by task count.
    return None if main == PODS else _short_reason(probe, main)


def first_short(request: Resources, room: Resources) -> str | None:
    """`request.shortfall(room)[0]`, or None where it fits, without building the list."""
    if request.extras:
        short = request.shortfall(room)
        return short[0] if short else None
    if request.cpu > room.cpu:
        return CPU
    if request.memory > room.memory:
        return MEMORY
    if request.gpu > room.gpu:
        return GPU
    return None


def _short_reason(probe: Probe, dimension: str) -> PendingReason:
    """The unworded reason of a class the whole cluster is short of `dimension` for: the
    root's refusal, a gang's when it needs more than one task (`gang_reason`)."""
    known = probe.short.get(dimension)
    if known is None:
        known = probe.short[dimension] = PendingReason(
            PendingKind.GANG if probe.need > 1 else PendingKind.INSUFFICIENT_RESOURCES,
            UNWORDED, resource=dimension)
    return known


def open_path(session: Session, queue: str) -> bool:
    """`QuotaTree.is_open_path` for the session's quota tree, the part read from its layout
    kept while that stays."""
    quota = session.quota
    if not quota.owes_nothing():
        return False
    derived = session.hooks.derived
    kept = derived.get("open_paths")
    if kept is None or kept[0] is not quota or kept[1] != quota.layout:
        kept = derived["open_paths"] = (quota, quota.layout, {})
    paths: dict[str, bool] = kept[2]
    known = paths.get(queue)
    if known is None:
        known = paths[queue] = quota.unlimited_below_root(queue)
    return known


def cluster_room(session: Session) -> Resources:
    """What the quota tree's root check reads as free (its capacity less the root's usage),
    kept while both are the same objects: usage is replaced, not changed, as it moves."""
    quota = session.quota
    capacity, usage = quota.capacity, quota.root.usage
    kept = session.hooks.derived.get("cluster_room")
    if kept is not None and kept[0] is capacity and kept[1] is usage:
        room: Resources = kept[2]
        return room
    room = capacity.saturating_sub(usage)
    session.hooks.derived["cluster_room"] = (capacity, usage, room)
    return room


def capacity_alone(session: Session) -> bool:
    """Whether the capacity plugin is the profile's only `Allocatable`: what it refuses is
    what the session refuses."""
    derived = session.hooks.derived
    alone = derived.get("capacity_alone")
    if alone is None:
        plugins = session.hooks.allocatables
        alone = derived["capacity_alone"] = len(plugins) == 1 \
            and isinstance(plugins[0], Capacity)
    return bool(alone)


def _allocate_job(session: Session, memo: FitMemo, job: JobInfo, best_effort: bool,
                  klass: int | None = None, granted: Probe | None = None) -> bool:
    """`granted`: the class's probe, where the quota tree was found to grant what it asks
    (`allocate_job`): a trial that asks the same does not ask the tree again."""
    choose(session, job)  # on the flavor it would be admitted on now, if it holds nothing
    if job.admits_partially() and not best_effort:
        return admit(session, memo, job)
    if not session.is_gang(job):
        return place_one_by_one(session, memo, job, best_effort)
    need = session.min_tasks(job)
    if need <= 0:
        return False  # ready: its surplus waits for the surplus pass
    if all(is_best_effort(g) for g in job.groups_with_pending()) is not best_effort:
        return False  # a gang of best-effort tasks only is backfill's; any other, allocate's
    if not session.startable(job):
        job.reason = PendingReason(
            PendingKind.GANG, f"gang of {need} task{'s' if need != 1 else ''} (minAvailable "
            f"{job.gang_minimum}): {need - job.pending_count()} of them are still stopping "
            "after an eviction")
        return False
    statement = session.statement()
    if len(job.pending) == 1:
        # One group waits: its first `need` replicas are the only choice. Placed inline, as
        # ten thousand such jobs are turned down per cycle in `bench/cycle.py`.
        group = job.groups_with_pending()[0]
        indices = job.first_pending(need, session.task_order())[0][1]
        if klass is not None and not best_effort:
            _learn(session, klass, need, group, indices, job)
        reason = place_replicas(session, memo, statement, job, group, indices,
                                granted is not None and granted.count == len(indices))
    else:
        reason = place_gang(session, memo, statement, job, GangNeed.of(session, job))
    if reason is not None:
        statement.discard()
        job.reason = gang_reason(job, need, reason)
        return False
    statement.commit()
    return True


def _learn(session: Session, klass: int, need: int, group: TaskGroup, indices: list[int],
           job: JobInfo) -> None:
    """Note what a fresh job of the class asks before it touches a node: `place_replicas`
    asks `fitting.refusal` about these replicas, no user quota or virtual node coming
    before for a job that is classed (`shoal.scheduler.job_classes.classable`)."""
    probes = session.model.class_verdicts.probes
    known = probes.get(klass)
    if known is None or known.hooks is not session.hooks:
        probes[klass] = Probe(session.hooks, need, group, len(indices),
                              group.resources.scale(len(indices)),
                              all(job.is_surplus(group.name, i) for i in indices),
                              session.pool_key(group), job.account)


def place_one_by_one(session: Session, memo: FitMemo, job: JobInfo, best_effort: bool = False
                     ) -> bool:
    """Place pending tasks each in its own statement; a group stops at its first misfit,
    since its other replicas are identical. Only best-effort groups when `best_effort`,
    only the others when not."""
    placed = False
    for group in job.groups_with_pending():
        if is_best_effort(group) is not best_effort:
            continue
        for index in list(job.pending[group.name]):
            statement = session.statement()
            reason = place_replicas(session, memo, statement, job, group, [index])
            if reason is not None:
                statement.discard()
                job.reason = reason
                break
            statement.commit()
            placed = True
    return placed


def waits_for_backfill_only(session: Session, job: JobInfo) -> bool:
    """Whether what the job would place next may be a best-effort task that only backfill
    places: all its waiting groups are best-effort, or it goes task by task and one is (a
    preemptor's choice might fall on it). Such a job neither preempts nor reclaims."""
    groups = job.groups_with_pending()
    if session.is_gang(job):
        return all(is_best_effort(g) for g in groups)
    return any(is_best_effort(g) for g in groups)


def waits_for_backfill(job: JobInfo) -> None:
    """Say why a job's best-effort tasks wait, in a profile without the backfill action,
    unless something else already keeps it waiting."""
    groups = [g.name for g in job.groups_with_pending() if is_best_effort(g)]
    if not groups or job.reason is not None:
        return
    several = len(groups) != 1
    job.reason = PendingReason(
        PendingKind.UNSCHEDULABLE,
        f"task group{'s' if several else ''} {', '.join(repr(n) for n in groups)} "
        f"request{'' if several else 's'} no resources (best-effort): only the backfill "
        "action places such tasks, and this profile does not run it")


def gang_reason(job: JobInfo, need: int, reason: PendingReason) -> PendingReason:
    kind = PendingKind.GANG if reason.kind is PendingKind.INSUFFICIENT_RESOURCES and need > 1 \
        else reason.kind
    if reason.message is UNWORDED:  # `replace`, spelt out: it is asked on every refusal
        return PendingReason(kind, UNWORDED, reason.resource, reason.queue, reason.predicate,
                             reason.field)
    return PendingReason(
        kind, f"gang of {need} task{'s' if need != 1 else ''} (minAvailable "
              f"{job.gang_minimum}) cannot start together: {reason.message}",
        resource=reason.resource, queue=reason.queue, predicate=reason.predicate)


def starving_since(rules: list[Starvation], job: JobInfo) -> float | None:
    """When the job started starving, by the first rule that says it is (aging)."""
    for rule in rules:
        since = rule.starving_since(job)
        if since is not None:
            return since
    return None


def reserve(session: Session, queue: str, head: JobInfo, behind: list[JobInfo], since: float
            ) -> None:
    """A starving head that cannot be placed holds a reservation (`shoal.scheduler.aging`):
    the jobs behind it wait as behind a strictly ordered queue's head, and the backfill
    action starts those it can without delaying it."""
    session.blocked[queue] = [head, *behind]
    if head.reason is not None:
        head.reason = reservation_reason(head.reason, head.job, since)
    where = None if queue == GLOBAL_QUEUE else queue
    for job in behind:
        job.reason = held_back_reason(head.name, since, where)
        session.behind_reservation.add(job.name)


def head_nodes(session: Session, head: JobInfo) -> set[int]:
    """The node ordinals a blocked head could use: those of its groups' node pools that
    could host one of its tasks (a node too small for every one of them it never gets)."""
    nodes: set[int] = set()
    for group in head.groups_with_pending():
        nodes.update(s.ordinal for s in session.pool_for(group).nodes
                     if group.resources.fits(s.allocatable))
    return nodes


def reservation_nodes(session: Session) -> dict[str, set[int]]:
    """Per job held back by a starving job's reservation, the nodes that job could use."""
    held: dict[str, set[int]] = {}
    for head, *behind in session.blocked.values():
        nodes = head_nodes(session, head)
        held.update((j.name, nodes) for j in behind if j.name in session.behind_reservation)
    return held


def block(session: Session, queue: str, head: JobInfo, behind: list[JobInfo],
          reason: PendingReason | None = None) -> None:
    """`reason`: `blocked_reason(head, queue)`, if made already."""
    session.blocked[queue] = [head, *behind]
    # One reason for the whole line: equal reasons compare fastest when they are one.
    reason = reason or blocked_reason(head, queue)
    for job in behind:
        job.reason = reason


def blocked_reason(head: JobInfo, queue: str) -> PendingReason:
    """Why a job waits behind the blocked head of a strictly ordered queue."""
    where = "the strictly ordered cluster queue" if queue == GLOBAL_QUEUE else \
        f"strictly ordered virtual cluster {queue!r}"
    return PendingReason(
        PendingKind.BLOCKED, f"waiting behind job {head.name!r}, first in {where}",
        queue=None if queue == GLOBAL_QUEUE else queue)
