"""The preempt action: evict running jobs of a virtual cluster so that a waiting job of the
same virtual cluster that ranks ahead of them can start.

Job-level, gang-aware and all-or-nothing (seed 001: "if the preempted tasks cannot meet the
scheduling requirements … preemption will not be performed"). For each job P still not
ready after allocation (holding nothing, or a gang below its minimum; not `Unschedulable`,
not `Blocked` behind the head of a strictly ordered queue — behind a starving job's
reservation it may, as aging gives that job no rank over it (`shoal.scheduler.aging`); its
priority class not `preemptionPolicy: Never`; not one whose next task may be a best-effort
one, which only backfill places: `allocate.waits_for_backfill_only`), in job order:

- *Candidates* are jobs V of P's virtual cluster (across virtual clusters it would be
  reclaim, another action) that hold tasks placed before this cycle and rank strictly
  behind P. Ranking compares the keys of the job-order plugins *except* those that also
  decide readiness (gang): the gang key ranks a job by how far its placement got, which
  would put every waiting job ahead of every running one; and the session's final
  tie-breaks (submission, name) are left out too, so equal keys never preempt each other.
  A plugin with a `preemption_key` (`framework.PreemptionOrder`) ranks by it instead of its
  job-order key: las ranks by its attained-service class only, not its FIFO within one;
  the priority plugin by the class value alone, not what aging added.
- P's virtual cluster's `withinQueue` changes that (`shoal.scheduler.queue_preemption`):
  `Never`, no candidate; `LowerOrNewerEqualPriority`, also jobs of P's priority that rank
  level with P and were submitted after it.
- What a candidate gives up comes in *units* (`shoal.scheduler.victims`): an elastic job's
  surplus one allowed size at a time, then the job whole — or, for a job placed task by
  task, one task at a time; nothing of a non-preemptable job; never a protected task
  (`protectFor`), never a task a victim-selection plugin keeps. Units are taken in the
  order of the victims' score — lowest rank first, elastic surplus before guaranteed tasks,
  least work lost, most recently started — and only those that free something P can use: a
  task on a node of P's node pools, or — when P's virtual cluster is at a quota limit —
  anything.
- A job kept from evicting by its priority class or its virtual cluster's policy, when
  the victims they excluded would have let it evict, has its pending reason say so
  (`shoal.scheduler.held_back`).
- No eviction for a job that fits without one: P is first placed on what is free, as
  allocate would; the action may run before allocate (Volcano's capacity setups run
  `enqueue, reclaim, allocate`), and this action's earlier evictions may have freed enough.
- A preemptor stays within its own quota: once it must evict, P is placed as if the profile
  lent nothing — never onto another subtree's unused guarantee, which that subtree would
  reclaim at once — unless its virtual cluster's `borrowWithinParent` is `LowerPriority`
  (`shoal.scheduler.queue_preemption`).
- Otherwise, in one statement, units are evicted one at a time. Once the free GPUs of P's
  pools could cover the fewest any choice of its missing tasks needs, its quota allows it,
  and its groups could hold that many tasks node by node, P's missing tasks (`min_tasks`:
  any of its pending tasks, `shoal.scheduler.gang_choice`) are placed in the same
  statement. If P fits, every unit it turns out not to need is spared, however many (a
  job's later unit before its earlier one), and the statement is committed; if P does not
  fit even with every unit evicted, nothing is evicted.

A committed statement becomes `Evict` and `Bind` decisions through the session's ledger, and
the model requeues the victims' tasks (an evicted job waits again; a shrunk one keeps
running, its surplus back with the elastic action, and a `Resize` says so). A victim is not
placed again, grown, nor used as a preemptor, in the same cycle; a job placed in this cycle
is never a victim. Trial placements use a private `FitMemo`: evictions release capacity, so the
cycle's bounds do not describe them.

Under backlog most waiting jobs find nothing to take: the search is asked once per class of
alike preemptors until the action commits something (`shoal.scheduler.preemptor_class`),
and its victims are indexed by rank and by what they free (`shoal.scheduler.victim_index`).
Under las its running jobs are kept from one cycle to the next, re-filed only when they
start, stop or cross a threshold (`shoal.scheduler.running_table`), and so is each virtual
cluster's victim index while its listing stands (`victim_index.KeptIndexes`); a waiting job
whose class's verdict already answers it is passed over before it is asked whether it
wants to preempt at all (`Preemption.answered`) — and where the allocate action walked the
class lines, the action walks its preemptors by class too, kept in job order from one cycle
to the next, a class answered by its verdict passed over whole until the next commit
(`shoal.scheduler.actions.preemptor_walk`). A search turned down before any trial (what
it is offered cannot cover it, or nothing ranks behind it) is answered again from the
numbers it read while they still say so, across cycles and commits
(`shoal.scheduler.actions.short_searches`).
A search the early judgement turned down on room is answered again while nothing was filed
behind its rank and its room, counted again on what is free now with what its victims held
then, still falls short (`shoal.scheduler.actions.judged_searches`).

This module owns the action, its arguments and the search for victims; the trial placements
that decide which chosen victims are needed are `shoal.scheduler.actions.victim_trials`.
Drivers own what an eviction costs the victim (lost work, its attained service carried into
its next run).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

from pydantic import Field

from shoal.api.decisions import PendingKind, PendingReason, Resize
from shoal.core.nodes import FitMemo
from shoal.scheduler.actions.allocate import reservation_nodes, waits_for_backfill_only
from shoal.scheduler.actions.judged_searches import JudgedSearches, KeptJudgements
from shoal.scheduler.actions.preemptor_walk import PreemptorLines, PreemptorWalk, walkable
from shoal.scheduler.actions.short_searches import ShortRead
from shoal.scheduler.actions.victim_trials import Trial
from shoal.scheduler.framework import PreemptionOrder
from shoal.scheduler.gang_choice import (
    GangNeed,
    least_gpus,
    least_request,
)
from shoal.scheduler.held_back import priority_class_note
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.plugins.gang import Gang
from shoal.scheduler.preemptor_class import (
    Generation,
    PreemptorClasses,
    Verdict,
    generation,
    world,
)
from shoal.scheduler.queue_preemption import (
    may_borrow_after_preempting,
    newer_equal_allowed,
    policy_of,
)
from shoal.scheduler.registry import Arguments
from shoal.scheduler.running_table import RankHolds, RunningTable
from shoal.scheduler.session import Hooks, Session
from shoal.scheduler.victim_index import KeptIndexes, QueueVictims
from shoal.scheduler.victims import KeptUnits, VictimUnit

_SHORT_READS = ("world_rank", "candidates", "victim_index", "may_borrow", "widest",
                "policy_note", "quota_bound")
"""What a `ShortVerdict` answers for: where a subclass reads other victims or policies
(reclaim), its searches are made in full."""

#: A preemptor's reason kinds that rule preemption out: it could never run, or a strictly
#: ordered queue holds it behind its head.
_NOT_PREEMPTING = (PendingKind.UNSCHEDULABLE, PendingKind.BLOCKED)


class PreemptArguments(Arguments):
    max_preemptors: int | None = Field(
        default=None, ge=1,
        description="at most this many jobs start by evicting others per cycle "
                    "(default: no limit)")


class Preempt:
    name = "preempt"
    by_class = True
    """Walk the preemptors by class where that is sound (`preemptor_walk`); False (a test
    knob): one by one in job order, always."""

    def __init__(self, arguments: PreemptArguments) -> None:
        self.max_preemptors = arguments.max_preemptors
        self.classes = PreemptorClasses()
        """Verdicts per class of preemptor, kept from one cycle to the next
        (`shoal.scheduler.preemptor_class`)."""
        self.kept = KeptUnits()
        """Running jobs' units, kept from one cycle to the next (`victims.KeptUnits`)."""
        self.table = RunningTable()
        """Running jobs by rank, kept from one cycle to the next (`running_table`)."""
        self.indexes = KeptIndexes()
        """Each virtual cluster's victim index, kept while its listing stands
        (`victim_index.KeptIndexes`)."""
        self.judgements = KeptJudgements()
        """Searches the early judgement turned down on room, kept from one cycle to the
        next (`shoal.scheduler.actions.judged_searches`)."""
        self.lines = PreemptorLines()
        """Waiting jobs by class line and preemptor class, kept from one cycle to the next
        (`shoal.scheduler.actions.preemptor_walk`)."""

    def execute(self, session: Session) -> None:
        self.kept.prune(session.jobs)
        self.classes.prune(session.jobs)
        cycle = Preemption(session, self.classes, self.kept, self.table, self.indexes,
                           self.judgements)
        started = 0
        try:
            walked = walkable(session, cycle) if self.by_class else None
            if walked is not None:
                self.lines.sync(session, session.model.class_lines, cycle.class_key)
                PreemptorWalk(session, cycle, self.lines, walked).run(self.max_preemptors)
                return
            for job in sorted(session.candidates, key=session.job_order_key):
                if self.max_preemptors is not None and started >= self.max_preemptors:
                    break
                if cycle.answered(job):
                    continue
                if cycle.wants(job) and cycle.preempt_for(job):
                    started += 1
        finally:
            session.quota.lending = True  # as `preempt_for` may have left it


Rankers = tuple[list[Any], list[RankHolds], list[Callable[[JobInfo], tuple[Any, ...]]], bool]


def _rankers(hooks: Hooks) -> Rankers:
    """The job-order plugins that rank preemptors (not those that decide readiness), those
    that say until when a rank holds, the key each ranks by (its preemption key where it
    has one), and whether a skipped search must ask for keys (`Preemption.looks`): kept
    with the profile's hooks (`isinstance` against a protocol is slow, and an action runs
    every cycle)."""
    found: Rankers | None = hooks.derived.get("preempt.rankers")
    if found is None:
        readiness = {id(p) for p in hooks.job_readies}
        rankers: list[Any] = [p for p in hooks.job_orders if id(p) not in readiness]
        found = hooks.derived["preempt.rankers"] = (
            rankers, [p for p in rankers if isinstance(p, RankHolds)],
            [p.preemption_key if isinstance(p, PreemptionOrder) else p.job_order_key
             for p in rankers],
            not all(isinstance(p, Gang) or getattr(p, "keys_asked_any_time", False)
                    for p in hooks.job_orders))
    return found


_SHORTLY: dict[type, bool] = {}


def _reads_shortly(kind: type) -> bool:
    """Whether an action of this class reads what a `ShortVerdict` answers for as the
    preempt action does (`_SHORT_READS`): asked once per class, not per execution."""
    found = _SHORTLY.get(kind)
    if found is None:
        found = _SHORTLY[kind] = all(getattr(kind, name) is getattr(Preemption, name)
                                     for name in _SHORT_READS)
    return found


class Preemption(JudgedSearches):
    """One execution of the action: what it has evicted and placed so far. The reclaim
    action is the same machinery with other candidates (`shoal.scheduler.actions.reclaim`):
    it overrides `candidates`, `quota_bound`, `may_borrow` and the wording of its reasons."""

    keeps_short = True
    """Answer searches turned down short from the numbers they read (`short_searches`);
    False (a test knob): search in full."""

    def __init__(self, session: Session, classes: PreemptorClasses | None = None,
                 kept: KeptUnits | None = None, table: RunningTable | None = None,
                 indexes: KeptIndexes | None = None,
                 judgements: KeptJudgements | None = None) -> None:
        self.session = session
        self.memo = FitMemo(session.cluster)
        self.task_order = session.task_order()
        rankers, holds, rank_keys, looks = _rankers(session.hooks)
        self.rank_keys: list[Callable[[JobInfo], tuple[Any, ...]]] = rank_keys
        self.looks = looks
        """Whether a skipped search must ask for the keys it would have asked (`look_at`):
        unless every job order gives a job's keys the same whenever first asked (the gang
        plugin, which keeps none; `LeastAttainedService.keys_asked_any_time`)."""
        self.fresh = {b.task.job for b in session.decisions.binds}
        """Jobs placed (wholly or partly) in this cycle: never victims."""
        self.evicted: set[str] = set()
        """Jobs evicted in this cycle: neither placed again nor preemptors."""
        self._ranks: dict[JobInfo, tuple[Any, ...]] = {}
        self._running: dict[str, list[JobInfo]] | None = None
        self._snapshot: Generation | None = None
        self._listed_fresh: frozenset[str] = frozenset()
        self._lazy = False
        self._units: dict[str, list[VictimUnit]] = {}
        self._reserved: dict[str, set[int]] | None = None
        """Per job held back by a starving job's reservation, that job's nodes."""
        self.classes = classes or PreemptorClasses()
        self.classes.begin()
        self.kept = kept or KeptUnits()
        self._entered: Generation | None = None
        """When the classes' world was entered (`preempt_for`): the first search."""
        self._tried = False
        """Whether the search under way saw its victims in an order that mattered: it went
        on to trial placements, or its offer was cut in order."""
        self._looked_at: list[str] = []
        """The running jobs whose order keys the search under way asked for, where the
        action's own listing (`running`) does not say."""
        self._listed = False
        """Whether the search under way listed the running jobs (`running`)."""
        self._victims = 0
        """Moves whenever a job listed by `running` stops being takeable or gives up
        something: the victim index is rebuilt then (`victim_index`)."""
        self._indexed: int | None = None
        self._indexes: dict[str, QueueVictims] = {}
        """Per virtual cluster, its victims as of `_indexed` (`victim_index`)."""
        self._short_read: ShortRead | None = None
        self._counted: Generation | None = None
        self._free: dict[Hashable, int] = {}
        """Per set of node pools, its free GPUs as of `_counted`."""
        self._pools: dict[Hashable, set[int]] = {}
        """Per set of node pools (their keys), their nodes' ordinals."""
        self._notes: list[str] | None = None
        """What the search under way noted on its preemptor's reason (`preempt_for`)."""
        self.table = table if table is not None and not self.looks \
            and len(holds) == len(rankers) else None
        """The running jobs kept across cycles (`shoal.scheduler.running_table`), where
        every plugin that ranks says until when a rank holds."""
        self._holds = holds
        self._refreshed: Generation | None = None
        self.kept_indexes = indexes if self.table is not None else None
        """Victim indexes kept across cycles, with the table only."""
        self.shorts = self.keeps_short and self.table is not None and _reads_shortly(type(self))
        self.judgements = judgements
        self._room_refused = False
        self._unsettled: list[tuple[JobInfo, Verdict]] = []
        """Jobs `answered` by a verdict since the quota tree's lending was last set: the
        last of them that wanted to preempt would have left it at its verdict's
        (`_settle_lending`)."""
        self.lazy_unsettled: Callable[[], list[tuple[JobInfo, Verdict]]] | None = None
        """Where a walk by class keeps the jobs it answered (`preemptor_walk`): they are
        read from there, last first, instead of `_unsettled`."""

    # ---- who ------------------------------------------------------------------------------

    def wants(self, job: JobInfo) -> bool:
        """Whether the job should look for victims: still not ready, could run at all, and
        not a victim in this cycle — of this action or of an earlier one (a preempt before a
        reclaim): placed again, it would undo the eviction it just gave up its tasks for."""
        session = self.session
        if job.name in self.evicted or job.name in session.preempted or not job.pending \
                or session.job_ready(job):
            return False
        if job.reason is not None and job.reason.kind in _NOT_PREEMPTING \
                and job.name not in session.behind_reservation:
            return False
        if waits_for_backfill_only(session, job):
            return False
        if not (session.min_tasks(job) > 0 and session.startable(job)):
            return False
        # Its priority class says `preemptionPolicy: Never`: it waits for room instead —
        # and says so when there was something to take (`shoal.scheduler.held_back`).
        priorities = session.model.priorities
        if not priorities.may_preempt(job.job):
            self._settle_lending()  # what follows reads the quota tree's lending
            widest = self.widest(job, policy_of(session, job))
            if self._could_evict(job, [], self.candidates(job, widest)):
                session.hold_back(job, priority_class_note(priorities.class_of(job.job)))
            return False
        return True

    def answered(self, job: JobInfo) -> bool:
        """Whether the job's turn surely changes nothing, known without asking whether it
        wants to preempt (`wants`, the bulk of a cycle's cost under backlog): its class
        has a verdict that holds now and notes nothing. Then if it wants to, `preempt_for`
        replays that verdict, which sets only the quota tree's lending, and that is settled
        if and when read (`_settle_lending`); if it does not, nothing happens. A class
        whose `ShortVerdict` holds without a trial on what is free is answered so too
        (`short_verdict`): the search its job would make gives that verdict. Only where keys
        come out the same whenever first asked (`looks` False: asking for the job's class
        early reads nothing a later ask would see otherwise), once the classes' world is
        entered (entered here where short verdicts are kept), and for a job that may
        preempt (one that may not is noted why)."""
        if self.looks or not self.session.model.priorities.may_preempt(job.job):
            return False
        if self._entered is None and not self.shorts:
            return False
        key = self.class_key(job)
        if key is None:
            return False
        verdict = self._kept_verdict(job, key)
        if verdict is None:
            return False
        self._unsettled.append((job, verdict))
        return True

    def answer_filed(self, job: JobInfo, key: Hashable) -> Verdict | None:
        """`answer` for a job filed in preemptor class `key` by a walk by class
        (`preemptor_walk.PreemptorLines`, which files each job under its `class_key`), without
        working its class out again."""
        if self.looks or not self.session.model.priorities.may_preempt(job.job):
            return None
        if self._entered is None and not self.shorts:
            return None
        return self._kept_verdict(job, key)

    def _kept_verdict(self, job: JobInfo, key: Hashable) -> Verdict | None:
        """The kept or short verdict of preemptor class `key` that answers `job` without a
        search (None: none, or one that notes something)."""
        before = generation(self.session)
        if self._entered is None:
            # Entered here rather than at the first search: nothing was committed since
            # the action began, so the world is the one that search would enter.
            self._enter(before)
        verdict = self.classes.verdict(key, before, before == self._entered)
        if verdict is None:
            verdict = self.short_verdict(job, key, before)
        return None if verdict is None or verdict.notes else verdict

    def answer(self, job: JobInfo) -> Verdict | None:
        """The verdict that answers the job (`answered`), kept by the caller instead of in
        `_unsettled` (a walk by class, `preemptor_walk`)."""
        if not self.answered(job):
            return None
        return self._unsettled.pop()[1]

    def _settle_lending(self) -> None:
        """Set the quota tree's lending as the jobs `answered` since it was last set
        would have left it: the last of them that wanted to preempt replayed its verdict's.
        Nothing was committed since they were answered (a search would have set it), so
        `wants` answers for each as it would have then."""
        unsettled, self._unsettled = self._unsettled, []
        lazy = self.lazy_unsettled
        for job, verdict in reversed(unsettled) if lazy is None else lazy():
            if self.wants(job):
                self.session.quota.lending = verdict.lending
                return

    # ---- how ------------------------------------------------------------------------------

    def preempt_for(self, preemptor: JobInfo) -> bool:
        """Place the preemptor's missing tasks, evicting candidates if need be; True if it
        evicted anything to do so. A job of a class whose search found nothing since the
        action last committed anything is answered by that search
        (`shoal.scheduler.preemptor_class`)."""
        session = self.session
        self._unsettled.clear()  # either way, the lending is set below
        key = self.class_key(preemptor)
        if key is None:
            return self._preempt_for(preemptor)
        before = generation(session)
        if self._entered is None:
            self._enter(before)
        lasting = before == self._entered
        verdict = self.classes.verdict(key, before, lasting)
        if verdict is not None:
            self.look_at(preemptor, verdict)
            for note in verdict.notes:
                session.hold_back(preemptor, note)
            session.quota.lending = verdict.lending
            return False
        short = self.short_answer(preemptor, key, before)
        if short is None:
            short = self.judged_answer(preemptor, key, before)
        if short is not None:
            return short
        self._notes, self._tried, self._looked_at, self._listed = [], False, [], False
        self._short_read, self._room_refused = None, False
        evicted = self._preempt_for(preemptor)
        if not evicted and generation(session) == before:
            # One that tried placements saw its victims in order, which time moves.
            self.classes.remember(key, before, Verdict(
                tuple(self._notes), session.quota.lending, tuple(self._looked_at),
                self._listed), lasting=lasting and not self._tried)
            self.keep_short(preemptor, key)
            self.keep_judged(preemptor, key)
        self._short_read, self._room_refused = None, False
        self._notes = None
        return evicted

    def _enter(self, now: Generation) -> None:
        """Enter the classes' world: verdicts last from the world this execution began its
        searches in to the next cycle's; after a commit, only within the execution."""
        session = self.session
        self._entered = now
        # The action's own ranks, not through `world_rank`, unless a subclass reads
        # other ranks: a million calls under backlog.
        own = type(self).world_rank is Preemption.world_rank
        ranks = self.rank if own else self.world_rank
        table = self.table if own else None
        kept = None
        if table is not None:
            self._refresh(table)
            kept = (table, table.version)
        self.classes.enter(world(session, ranks, self.fresh, self.evicted,
                                 self.world_extra(), kept))

    def look_at(self, preemptor: JobInfo, verdict: Verdict) -> None:
        """Ask for the order keys the search that gave `verdict` asked for, in its place
        (`Verdict.looked_at`, `Verdict.listed`)."""
        if not self.looks:
            return
        session = self.session
        if verdict.listed:
            self.running(preemptor.queue)
        for name in verdict.looked_at:
            job = session.jobs[name]
            session.job_order_key(job)
            self.rank(job)

    def world_rank(self, job: JobInfo) -> tuple[Any, ...]:
        """What of a running job's rank a search that tries no placement reads
        (`preemptor_class.world`): who ranks behind whom."""
        return self.rank(job)

    def world_extra(self) -> Hashable:
        """What else this action's searches read of the world (`preemptor_class.world`)."""
        return None

    def class_key(self, preemptor: JobInfo) -> Hashable | None:
        """The preemptor's class (`shoal.scheduler.preemptor_class`): ranked as this action
        ranks it, under its virtual cluster's policy."""
        if newer_equal_allowed(policy_of(self.session, preemptor)):
            return None  # its submission time decides what it may take
        return self.classes.class_of(self.session, preemptor, self.rank)

    def _preempt_for(self, preemptor: JobInfo) -> bool:
        session = self.session
        cluster = session.cluster
        session.quota.lending = True
        need = GangNeed.of(session, preemptor)
        if need.count <= 0:
            return False
        pools, nodes = self._pool_nodes(preemptor)
        if not nodes:
            return False
        # Any choice of its missing tasks may start it (`shoal.scheduler.gang_choice`): the
        # GPUs it needs are the fewest any choice asks.
        demand = least_gpus(preemptor, need)
        free = self._free_on(pools, nodes)

        # No eviction for a job that fits without one: allocation may not have run yet (a
        # profile may put preempt or reclaim first, as Volcano's capacity setups do), or
        # this action's earlier evictions freed more than they were taken for.
        if free >= demand and self._fits_without_eviction(preemptor, need):
            return False

        # From here on it evicts: it stays within its own quota unless its policy lets it
        # borrow (`shoal.scheduler.queue_preemption`); `Preempt.execute` restores lending.
        session.quota.lending = self.may_borrow(preemptor)
        index = None if preemptor.running else \
            self.victim_index(preemptor, policy_of(session, preemptor))
        if index is not None:
            behind = index.behind(self.rank(preemptor))
            gained = index.gains(
                pools, behind,
                lambda u: sum(u.job.job.group(t.ref.group).resources.gpu for t in u.tasks
                              if cluster.by_name[t.node].ordinal in nodes))
            if free + gained < demand:
                # What it is offered cannot cover it: known without listing it (below).
                if not self._note_policy(preemptor, None):
                    self._short_read = (pools, nodes, demand, gained, behind > 0)
                return False
        # Asked only now: most preemptors under backlog are turned down above (it reads the
        # quota tree, which caches its answers: asking later answers the same).
        quota_bound = self.quota_bound(preemptor, need)
        # Judged from the index's sums per rank where that is exact (`_judged_early`): what
        # it is offered is listed only as far as the trials take it. Judged only once its
        # first unit alone is not worth a placement (`_evict_until_placed`): most evicting
        # searches fit on it, and then so would all of them.
        judged: bool | None = None
        judging: Callable[[], bool] | None = None
        if index is not None and gained > 0 \
                and self._judgeable(preemptor, index, behind, quota_bound):
            judged = True

            def judge() -> bool:
                nonlocal judged
                assert index is not None
                judged = self._judged_early(preemptor, need, index, behind, quota_bound)
                return bool(judged)

            if self.judges_late:
                judging = judge
            else:
                judge()  # a test knob: before any trial eviction

        units: list[VictimUnit] | None = None
        tried: Iterable[VictimUnit]
        chosen: list[VictimUnit] | None = None
        if judged is not None:
            assert index is not None
            if judged:
                self._tried = True
                gains: dict[int, int] = {}
                trial = Trial(free, demand, least_request(preemptor, need), gains)
                tried = self._useful_in_order(index, behind, nodes, gains, quota_bound)
                chosen = self._evict_until_placed(preemptor, need, trial, tried, gains,
                                                  quota_bound, judging)
            if not judged:
                # As when no trial placement was tried. Its verdict read no order (a first
                # unit tried whatever its order), so it lasts (`keeps_judged` False, a test
                # knob: only within the execution).
                self._tried = not self.keeps_judged
                if self._note_policy(preemptor, None):
                    self._room_refused = False  # its policy might note something
                return False
        else:
            # A chain (a job; a task that stands alone, `VictimUnit.chain`) is useful if any
            # of its tasks frees something the preemptor can use; then all its units are (a
            # later unit needs the earlier ones taken).
            units, in_order = self.offer(preemptor)
            helps = {u.chain for u in units if quota_bound or any(
                cluster.by_name[t.node].ordinal in nodes for t in u.tasks)}
            useful = [u for u in units if u.chain in helps]
            gains = {id(u): sum(u.job.job.group(t.ref.group).resources.gpu for t in u.tasks
                                if cluster.by_name[t.node].ordinal in nodes) for u in useful}
            if not useful or free + sum(gains.values()) < demand:
                if not self._note_policy(preemptor, units) and not units and index is not None:
                    self._short_read = (pools, nodes, demand, 0, False)  # nothing behind it
                return False

            self._tried = True
            trial = Trial(free, demand, least_request(preemptor, need), gains)
            if not self._worth_evicting(trial, useful, preemptor, need, quota_bound):
                self._note_policy(preemptor, units)  # as when no trial placement was tried
                return False
            tried = useful
            if not in_order:  # the same units, now in the order they are tried
                tried = (u for u in (self.candidates(preemptor) if index is None
                                     else index.in_order(behind)) if u.chain in helps)
            chosen = self._evict_until_placed(preemptor, need, trial, tried, gains,
                                              quota_bound)
        if chosen is None:
            self._note_policy(preemptor, units)
            return False
        self._placed(preemptor)
        if not chosen:  # every unit proved unneeded: it stands on what was free
            return False
        self._record(preemptor, chosen)
        return True

    def _pool_nodes(self, preemptor: JobInfo) -> tuple[Hashable, set[int]]:
        """The nodes of the node pools of the preemptor's pending groups, and what names
        that set in this execution (the pools' keys)."""
        session = self.session
        groups = preemptor.groups_with_pending()
        key = tuple(session.pool_key(g) for g in groups)
        nodes = self._pools.get(key)
        if nodes is None:
            nodes = self._pools[key] = set()
            for group in groups:
                nodes.update(s.ordinal for s in session.pool_for(group).nodes)
        return key, nodes

    def _reservations(self) -> dict[str, set[int]]:
        """The nodes each starving job's reservation keeps others off, read once an execution."""
        if self._reserved is None:
            self._reserved = reservation_nodes(self.session)
        return self._reserved

    def _held_nodes(self, job: JobInfo) -> set[int]:
        return self._reservations().get(job.name, set())

    def _holds_back_any(self) -> bool:
        return bool(self._reservations())

    def may_borrow(self, preemptor: JobInfo) -> bool:
        """Whether the preemptor, once it evicts, may run on guarantees lent by other
        subtrees (`shoal.scheduler.queue_preemption`)."""
        return may_borrow_after_preempting(policy_of(self.session, preemptor))

    def why(self, preemptor: JobInfo) -> str:
        """Why a victim gave something up, after the verb."""
        return (f"job {preemptor.name!r}, which ranks ahead of it in virtual cluster "
                f"{preemptor.queue!r}")

    def _placed(self, preemptor: JobInfo) -> None:
        """The preemptor was placed in a committed statement: never a victim now."""
        self.fresh.add(preemptor.name)
        if self.lists(preemptor):
            self._victims += 1  # it was listed as a victim

    def _record(self, preemptor: JobInfo, chosen: list[VictimUnit]) -> None:
        """Victims are neither placed, grown nor preemptors again in this cycle; an evicted
        one is told why it waits, a shrunk one gets a `Resize`."""
        session = self.session
        last = {u.job.name: u for u in chosen}  # a job's last unit is where it ends up
        self._victims += 1
        for name, unit in last.items():
            self.evicted.add(name)
            session.preempted.add(name)
            self._units.pop(name, None)  # what it has left is listed afresh
            victim = unit.job
            if unit.shrink_to is None:
                victim.reason = PendingReason(
                    PendingKind.INSUFFICIENT_RESOURCES,
                    f"{self.verb} in this cycle for {self.why(preemptor)}",
                    queue=preemptor.queue)
                continue
            elastic = victim.job.elastic
            assert elastic is not None
            victim.resized = session.now
            session.decisions.resizes.append(Resize(
                name, elastic.group, unit.shrink_to, f"shrunk for {self.why(preemptor)}"))
