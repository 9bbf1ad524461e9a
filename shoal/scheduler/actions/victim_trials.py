"""Which victims a preemption needs: the preempt action's trial placements (issue 16), apart
from the search for victims (`shoal.scheduler.actions.preempt`), and its placement of a
preemptor on what is free, with no eviction (`_fits_without_eviction`).

Once evicting a prefix of the candidate units lets the preemptor fit, every unit it turns
out not to need is spared: a placement that fits shows most of them at once (`_sift`), the
rest are tried one trial placement each (`_spare`), cheapest necessary conditions first
(`_worth_trying`, `_could_fit`). Before any trial eviction, a search's units are judged as a
whole where that is exact (`_worth_evicting`): most searches under backlog would evict them
all and find no placement worth trying. The preempt and reclaim actions share this machinery
through `Preemption`, which derives from `VictimTrials`; the proportional reclaim places
through its own `_place`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

from shoal.api.resources import Resources
from shoal.core.nodes import FitMemo, NodePool, NodeState
from shoal.core.statement import Allocation, Eviction, Statement
from shoal.scheduler.gang_choice import (
    GangNeed,
    Room,
    has_alternatives,
    pending_groups,
    place_gang,
    replicas_fitting,
    room_suffices,
)
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.session import Session
from shoal.scheduler.victims import VictimUnit


class VictimTrials:
    """Trial placements of a preemptor over chosen victims; `Preemption` says who and why."""

    verb = "preempted"
    """How an evicted victim's reason says it was taken."""
    session: Session
    memo: FitMemo
    """The action's private fit memo: evictions release capacity, so the cycle's bounds
    do not describe them."""
    judge_whole = True
    """Judge a search's units as a whole before any trial eviction where that is exact
    (`_worth_evicting`); False (a test knob): the trial loop decides every search."""
    census_room = True
    """Count a trial loop's room from the pools' censuses where that is exact
    (`CensusRoom`); False (a test knob): node by node (`gang_choice.Room`)."""
    judges_late = True
    """Judge a search's units as a whole (`VictimListing._judged_early`) only once its
    first unit alone is not worth a placement (`_evict_until_placed`); False (a test
    knob): before any trial eviction."""
    _fitting: dict[Hashable, int] = {}  # noqa: RUF012 - replaced per instance before use
    _fitting_at: tuple[int, object] | None = None

    def why(self, preemptor: JobInfo) -> str:
        """Why a victim gave something up, after the verb."""
        raise NotImplementedError

    def _held_nodes(self, job: JobInfo) -> set[int]:
        """The nodes a starving job's reservation keeps `job` off (`Preemption`)."""
        raise NotImplementedError

    def _holds_back_any(self) -> bool:
        """Whether a starving job's reservation keeps any job off nodes (`_held_nodes`)."""
        raise NotImplementedError

    def _placed(self, preemptor: JobInfo) -> None:
        """The preemptor was placed in a committed statement (`Preemption`)."""
        raise NotImplementedError

    def _fits_without_eviction(self, preemptor: JobInfo, need: GangNeed) -> bool:
        """Place the preemptor on what is free, if it fits; True if it was placed. A job held
        back by a starving job's reservation (`shoal.scheduler.aging`) keeps off that job's
        nodes here, as backfill would have it: what is free there is the starving job's. (It
        may still evict there by its class; then it uses what it freed.)"""
        held = self._held_nodes(preemptor)
        if not held:
            return self._place_now(preemptor, need)
        shared = self.memo
        self.memo = FitMemo(self.session.cluster)
        try:
            with self.session.keeping_off(held):
                return self._place_now(preemptor, need)
        finally:
            self.memo = shared

    def _place_now(self, preemptor: JobInfo, need: GangNeed) -> bool:
        if not self._could_fit(preemptor, need, self._fitting_now()):
            return False
        statement = self.session.statement()
        if self._place(statement, preemptor, need):
            statement.commit()
            self._placed(preemptor)
            return True
        statement.discard()
        return False

    def _spare(self, preemptor: JobInfo, need: GangNeed, trial: Trial,
               chosen: list[VictimUnit], sift: Sift, quota_bound: bool
               ) -> list[VictimUnit]:
        """Drop every unit the preemptor does not need, however many. `sift`: what the
        placement that fitted shows, with no trial: the units it does not need, and those
        its quota surely does (`_sift`). Every other unit is tried, one trial placement
        each, the best ranked first — of a job, its latest unit before its earlier ones, and
        none before a later one is dropped (a shrink from 4 to 2 without the one from 8 to 4
        would leave the job at 6); a trial that fits sifts the units again through its own
        placement. The last one chosen is needed: without it the others were tried and did
        not do.

        Cost. A trial evicts every unit kept, so trials over all the units chosen would cost
        their square: large preemptors taking surplus one GPU at a time made a cycle of
        `bench/preempt.py` (200 nodes) cost 125 times its calibration loop. Most units are
        settled by a placement instead — dropped by its slack, or kept by its quota —, so few
        are left to try; until issue 16 the trials simply stopped at 16, and unneeded
        victims beyond were evicted."""
        keep = sift.kept
        needed = bool(keep) and keep[-1] is chosen[-1]
        locked: set[str] = {keep[-1].chain} if needed else set()
        kept = {id(u) for u in keep}
        for spared in reversed(keep[:-1] if needed else keep):
            name = spared.chain
            if name in locked or id(spared) not in kept:
                continue  # needed with a later unit of its job, or spared already
            candidate = [u for u in keep if u is not spared]
            fewer = None if id(spared) in sift.needed or not candidate else \
                self._fits_with(preemptor, need, trial, candidate, quota_bound)
            if fewer is None:
                locked.add(name)  # this unit stays, and so do the job's earlier ones
                continue
            sift = fewer
            keep = sift.kept
            kept = {id(u) for u in keep}
        return keep

    def _fits_with(self, preemptor: JobInfo, need: GangNeed, trial: Trial,
                   victims: list[VictimUnit], quota_bound: bool) -> Sift | None:
        """If the preemptor fits once `victims` are evicted (nothing is kept), what that
        placement shows of them (`_sift`); else None."""
        gained = sum(trial.gains[id(u)] for u in victims)
        if trial.free + gained < trial.demand:
            return None
        statement = self.session.statement()
        for victim in victims:
            self._evict(statement, victim, preemptor)
        mark = statement.savepoint()
        fits = self._worth_trying(trial, gained, preemptor, need, quota_bound) and \
            self._place(statement, preemptor, need)
        sift = self._sift(preemptor, need, victims, quota_bound,
                          statement.operations_since(mark)) if fits else None
        statement.discard()
        return sift

    def _sift(self, preemptor: JobInfo, need: GangNeed, victims: list[VictimUnit],
              quota_bound: bool, placement: list[Allocation | Eviction]) -> Sift:
        """What a placement that fits with all of `victims` evicted shows of them, with no
        trial; called while that placement is still in its statement. A unit is not
        needed when the placement stands with it running: each of its tasks is on a node
        the placement did not use, or fits in what that node has left after the placement
        (less what units already dropped take back there); and, for a preemptor held by
        its quota, its virtual cluster could still take what the dropped units hold (for a
        preemptor held by room the quota allowed it before any eviction). Of a job, only its
        latest units go, down to the first one that is needed (a shrink from 4 to 2 without
        the one from 8 to 4 would leave the job at 6); a task that stands alone
        (`VictimUnit.chain`) goes or stays on its own.

        A unit is surely needed when the preemptor's virtual cluster could not take back
        what it holds on top of the placement: without it the quota refuses the placement
        — if no smaller choice of the preemptor's tasks exists (`gang_choice`), else a trial
        decides. Each verdict is certain, so none costs a trial placement."""
        cluster = self.session.cluster
        account = preemptor.account
        if quota_bound and any(u.job.account != account for u in victims):
            return Sift(victims)  # its quota is not theirs: try each
        allocations = [op for op in placement if isinstance(op, Allocation)]
        slack = {op.node.name: op.node.free() for op in allocations}
        used = {op.node.physical.name for op in allocations}
        back = Resources()
        dropped: set[int] = set()
        stopped: set[str] = set()
        for unit in reversed(victims):
            if unit.chain in stopped:
                continue
            left = dict(slack)
            fits = True
            for task in unit.tasks:
                # Its request and, on a node with a task limit (pods), its task slot.
                request = cluster.by_name[task.node].footprint(
                    unit.job.job.group(task.ref.group).resources)
                room = left.get(task.node)
                if room is not None and request.fits(room):
                    left[task.node] = room.saturating_sub(request)
                elif room is not None or cluster.by_name[task.node].physical.name in used:
                    fits = False
                    break
            request = back + unit.request
            if fits and quota_bound:
                fits = self.session.allocatable(account, request) is None
            if not fits:
                stopped.add(unit.chain)
                continue
            slack = left
            back = request
            dropped.add(id(unit))
        kept = [u for u in victims if id(u) not in dropped]
        if not quota_bound or has_alternatives(preemptor, need):
            return Sift(kept)
        return Sift(kept, frozenset(
            id(u) for u in kept
            if self.session.allocatable(account, back + u.request) is not None))

    def _worth_trying(self, trial: Trial, gained: int, preemptor: JobInfo, need: GangNeed,
                      quota_bound: bool, room: Room | CensusRoom | None = None) -> bool:
        """Whether a placement could fit once units freeing `gained` GPUs on the preemptor's
        pools are evicted: necessary conditions, cheapest first — the GPUs, the quota (for a
        preemptor held by it: evicting one GPU at a time, hundreds of units may go before
        it allows anything), then room node by node (`room`, kept up to date by the
        caller, or counted now)."""
        if trial.free + gained < trial.demand:
            return False
        if quota_bound and \
                self.session.allocatable(preemptor.account, trial.request) is not None:
            return False
        return room.suffices() if room is not None else self._could_fit(preemptor, need)

    def _judged_whole(self, preemptor: JobInfo, units: list[VictimUnit],
                      quota_bound: bool) -> bool:
        """Whether `_worth_evicting` may judge `units` as a whole: when each condition of
        `_worth_trying` only grows as more units are evicted. GPUs freed always do; the
        quota does when it is not read or every unit is charged to the preemptor's own
        virtual cluster (refunding another one raises the guarantee it is still owed, which
        may narrow the preemptor's room); room node by node does on nodes without a task
        limit or a physical host (a virtual node frees its host's slots too), and, under a
        CPU reserve per idle GPU, for groups asking GPUs or no CPU (freeing a GPU task
        that holds less CPU than the reserve narrows a CPU-only request's view)."""
        if quota_bound:
            account = preemptor.account
            if any(u.job.account != account for u in units):
                return False
        cluster = self.session.cluster
        if cluster.cpu_reserve and any(g.resources.cpu and not g.resources.gpu
                                       for g, _ in pending_groups(preemptor)):
            return False
        if not cluster.limits_tasks():
            return True  # no node has a task limit or a host: none of theirs does
        by_name = cluster.by_name
        for unit in units:
            for task in unit.tasks:
                state = by_name[task.node]
                if state.pod_limited or state.host is not None:
                    return False
        return True

    def _worth_evicting(self, trial: Trial, units: list[VictimUnit], preemptor: JobInfo,
                        need: GangNeed, quota_bound: bool) -> bool:
        """Whether evicting `units` one after another, a placement tried as soon as
        `_worth_trying` holds (the preempt action's trial loop), would try one at all;
        decided without a statement where `_judged_whole` allows: every condition only
        grows with what is evicted, so a placement is worth trying after some of them
        exactly when it is after all of them. Under backlog most searches that pass the
        gains test end there, and each evicted ten units and put them back, task by task,
        through the cluster and the quota tree. True where it is not judged so: the trial
        loop decides."""
        if not self.judge_whole or not self._judged_whole(preemptor, units, quota_bound):
            return True
        gains = trial.gains
        if trial.free + sum(gains[id(u)] for u in units) < trial.demand:
            return False
        cluster = self.session.cluster
        by_name = cluster.by_name
        freed: dict[int, tuple[NodeState, Resources]] = {}
        refund = _ZERO
        for unit in units:
            groups = unit.job.job.groups
            only = groups[0].resources if len(groups) == 1 else None
            for task in unit.tasks:
                state = by_name[task.node]
                request = only if only is not None else \
                    unit.job.job.group(task.ref.group).resources
                held = freed.get(state.ordinal)
                freed[state.ordinal] = (state, request if held is None else held[1] + request)
                if quota_bound and state.owner is None:
                    refund = refund + request
        if quota_bound and not self._quota_allows_after(preemptor, refund, trial.request):
            return False
        return self._room_after(preemptor, need, freed)

    def _quota_allows_after(self, preemptor: JobInfo, refund: Resources,
                            request: Resources) -> bool:
        """Whether the preemptor's virtual cluster, `refund` given back by it, may take
        `request`: asked of the quota tree itself (one walk up its path and back, not one
        per task each way)."""
        quota = self.session.quota
        account = preemptor.account
        if refund.is_zero():
            return self.session.allocatable(account, request) is None
        with quota.refunded(account, refund):
            return self.session.allocatable(account, request) is None

    def _room_after(self, preemptor: JobInfo, need: GangNeed,
                    freed: dict[int, tuple[NodeState, Resources]]) -> bool:
        """`Room.suffices` once `freed` (per node ordinal: the node and what is given back
        on it) is free too, without giving it back: each group's pool counted node by node
        (once per commit, `_fitting_now`), the freed nodes as they would be."""
        session = self.session
        excluded = session.excluded_nodes
        known = self._fitting_now()  # no statement is open
        counts = []
        for group, pending in pending_groups(preemptor):
            request = group.resources
            if request.is_zero():
                counts.append((group.name, pending, pending))
                continue
            pool = session.pool_for(group)
            key = (pool.key, request, None)
            room = known.get(key)
            if room is None:
                room = known[key] = pool.census(request).fit if not excluded else sum(
                    state.how_many(request) for state in pool.nodes
                    if state.ordinal not in excluded)
            if excluded or not self.census_room:
                for ordinal, (state, back) in freed.items():
                    if ordinal not in excluded and pool in state.pools:
                        room += _how_many_with(state, back, request) - state.how_many(request)
            else:
                # What each node takes now is the census's share (no statement is open, so
                # the census, read afresh, counts the nodes as they stand).
                shares = pool.census(request).shares
                gpu = request.gpu
                for ordinal, (state, back) in freed.items():
                    share = shares.get(ordinal)
                    if share is None:
                        continue
                    # Freeing never narrows a GPU request's room on a node (`_judged_whole`),
                    # and its GPUs bound it: where they bound it to what the node takes
                    # now, it takes no more.
                    if gpu and (state.gpu + back.gpu) // gpu == share[0]:
                        continue
                    room += _how_many_with(state, back, request) - share[0]
            counts.append((group.name, room, pending))
        return room_suffices(need, counts)

    def _could_fit(self, preemptor: JobInfo, need: GangNeed,
                   known: dict[Hashable, int] | None = None) -> bool:
        """A necessary condition, node by node: the replicas each group could place on its
        pool's free capacity (ignoring the other groups) add up to its missing tasks.
        `known`: what was counted on the same capacity (`_fitting_now`)."""
        session = self.session
        excluded = session.excluded_nodes
        counts = []
        for group, pending in pending_groups(preemptor):
            enough = min(pending, need.count)
            if known is None:
                room = replicas_fitting(session.pool_for(group).nodes, group.resources,
                                        enough, excluded)
            else:
                key = (session.pool_key(group), group.resources, enough)
                found = known.get(key)
                if found is None:
                    found = known[key] = _fitting(session.pool_for(group), group.resources,
                                                  enough, excluded)
                room = found
            counts.append((group.name, room, pending))
        return room_suffices(need, counts)

    def _fitting_now(self) -> dict[Hashable, int]:
        """Replicas counted on the session's committed capacity, per pool, request and how
        many were enough, until the next commit or another set of excluded nodes: under
        backlog, preemptors of many virtual clusters ask the same of the same pools, and
        each count walks the pool's nodes. Only with no statement open."""
        session = self.session
        at = (session.commits, session.excluded_nodes)
        if self._fitting_at is None or self._fitting_at[0] != at[0] \
                or self._fitting_at[1] is not at[1]:
            self._fitting, self._fitting_at = {}, at
        return self._fitting

    def _evict_until_placed(self, preemptor: JobInfo, need: GangNeed, trial: Trial,
                            tried: Iterable[VictimUnit], gains: dict[int, int],
                            quota_bound: bool, judge: Callable[[], bool] | None = None
                            ) -> list[VictimUnit] | None:
        """Evict `tried` in order until the preemptor fits (`_worth_trying` says when to try a
        placement), then spare what proved unneeded (`_sift`, `_spare`) and commit the
        evictions with the placement: the victims taken (none: it stands on what was free),
        or None, nothing committed, when it never fit.

        `judge`: whether any placement is worth trying with all of `tried` evicted, asked
        with no statement open, where every condition of `_worth_trying` only grows with
        what is evicted (`VictimListing._judged_early`). Asked only if the first unit alone
        is not worth a placement: if it is, so are all of them (most evicting searches fit
        on their first unit). If it says no, nothing is committed (None)."""
        session = self.session
        cluster = session.cluster
        chosen: list[VictimUnit] = []
        statement = session.statement()
        fits = False
        gained = 0
        census = CensusRoom.of(session, preemptor, need) if self.census_room else None
        counted = None if census is not None else Room(session, preemptor, need)
        room = census if census is not None else counted
        for unit in tried:
            self._evict(statement, unit, preemptor)
            chosen.append(unit)
            gained += gains[id(unit)]
            if counted is not None:  # node by node: each freed node counted again
                counted.freed([cluster.by_name[t.node] for t in unit.tasks])
            if not self._worth_trying(trial, gained, preemptor, need, quota_bound, room):
                if judge is not None:
                    # Judged with nothing evicted, as before this loop: a placement that
                    # is not worth trying after every unit is not after any.
                    statement.discard()
                    if not judge():
                        return None
                    judge = None
                    statement = session.statement()
                    self._evict(statement, unit, preemptor)
                continue
            judge = None
            evictions = statement.savepoint()
            placed = self._place(statement, preemptor, need)
            if placed:
                fits = True
                break
            statement.roll_back(evictions)  # keep the evictions, drop the failed placement
        if not fits:
            statement.discard()
            if judge is not None:  # no unit tried: judged all the same
                judge()
            return None
        if len(chosen) > 1:
            sift = self._sift(preemptor, need, chosen, quota_bound,
                              statement.operations_since(evictions))
            statement.discard()
            chosen = self._spare(preemptor, need, trial, chosen, sift, quota_bound)
            statement = session.statement()
            for victim in chosen:
                self._evict(statement, victim, preemptor)
            if not self._place(statement, preemptor, need):  # pragma: no cover - tried
                statement.discard()
                return None
        statement.commit()
        return chosen

    def _place(self, statement: Statement, job: JobInfo, need: GangNeed) -> bool:
        return place_gang(self.session, self.memo, statement, job, need) is None

    def _evict(self, statement: Statement, unit: VictimUnit, preemptor: JobInfo) -> None:
        cluster = self.session.cluster
        victim = unit.job
        what = self.verb if unit.shrink_to is None else \
            f"elastic surplus taken (down to {unit.shrink_to})"
        reason = f"{what} for {self.why(preemptor)}"
        for task in unit.tasks:
            statement.evict(task.ref, victim.account, cluster.by_name[task.node],
                            victim.job.group(task.ref.group).resources, task.gpus, reason)


def _fitting(pool: NodePool, request: Resources, enough: int, excluded: set[int]) -> int:
    """`replicas_fitting` over the pool, read from its census where nothing is excluded
    (`shoal.core.pool_census`: kept across cycles, recounting only the nodes that changed):
    under backlog most pools hold fewer than `enough`, and then the node-by-node count,
    which stops only once `enough` is reached, walks every node to the same total."""
    if excluded or request.is_zero():
        return replicas_fitting(pool.nodes, request, enough, excluded)
    fit = pool.census(request).fit
    return fit if fit < enough else replicas_fitting(pool.nodes, request, enough)


def _how_many_with(state: NodeState, freed: Resources, request: Resources) -> int:
    """`NodeState.how_many(request)` once `freed` is given back to the node: for a node
    without a task limit or a host (`_judged_whole`)."""
    counts = []
    cpu, gpu = state.cpu + freed.cpu, state.gpu + freed.gpu
    if request.cpu:
        if state.cpu_reserve and not request.gpu:
            cpu -= gpu * state.cpu_reserve
        counts.append(max(0, cpu) // request.cpu)
    if request.memory:
        counts.append((state.memory + freed.memory) // request.memory)
    if request.gpu:
        counts.append(gpu // request.gpu)
    if request.extras:
        extras = state.extras
        back = dict(freed.extras)
        for key, value in request.extras:
            counts.append((extras.get(key, 0) + back.get(key, 0)) // value)
    return min(counts) if counts else 0


_ZERO = Resources()


class CensusRoom:
    """`gang_choice.Room` read from the pools' censuses (`shoal.core.pool_census`), which
    count the nodes as they stand whenever read, tentative evictions included: no walk over
    each pool's nodes when a trial loop begins. Exact where freeing a task changes what
    its own node alone takes and every node of a pool is counted: no node with a task
    limit or a host, no node excluded."""

    __slots__ = ("_groups", "need")

    def __init__(self, need: GangNeed,
                 groups: list[tuple[str, int, NodePool | None, Resources]]) -> None:
        self.need = need
        self._groups = groups

    @classmethod
    def of(cls, session: Session, job: JobInfo, need: GangNeed) -> CensusRoom | None:
        """The job's room, or None where a census does not count it exactly."""
        if session.excluded_nodes or session.cluster.limits_tasks():
            return None
        return cls(need, [(group.name, pending,
                           None if group.resources.is_zero() else session.pool_for(group),
                           group.resources) for group, pending in pending_groups(job)])

    def suffices(self) -> bool:
        return room_suffices(self.need, (
            (name, pending if pool is None else pool.census(request).fit, pending)
            for name, pending, pool, request in self._groups))


@dataclass(frozen=True, slots=True)
class Sift:
    """What one placement that fits shows of the units evicted for it, with no trial."""

    kept: list[VictimUnit]
    """The units, less those it shows are not needed."""
    needed: frozenset[int] = frozenset()
    """The `id`s of kept units the preemptor's quota surely needs evicted."""


@dataclass(frozen=True, slots=True)
class Trial:
    """What a preemption's trial placements are judged against: GPUs free on the
    preemptor's node pools before any eviction, the fewest GPUs and the least request any
    choice of its tasks needs, and the GPUs each candidate unit frees there (by `id`)."""

    free: int
    demand: int
    request: Resources
    gains: dict[int, int]
