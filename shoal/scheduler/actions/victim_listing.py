"""Who a preemptor may take from: the preempt action's listing of running jobs and their
units, worst rank first, and each virtual cluster's victim index (issue 18), apart from the
search itself (`shoal.scheduler.actions.preempt`) and its trial placements
(`shoal.scheduler.actions.victim_trials`).

Ranks are the action's (`rank`: the job-order keys of the plugins that rank, with las's and
priority's `preemption_key`); under a kept running table (`shoal.scheduler.running_table`)
the listing is the table's, brought up to now once per commit (`_refresh`) and taken per
virtual cluster when a search first reads it (`_listing`); each virtual cluster's index
is kept from one cycle to the next and brought up to the table by the jobs it re-filed there
(`victim_index.KeptIndexes`), without the listing, which is then sorted only where a search
reads it whole (a policy other than `LowerPriority`). A search past the index's gains test
is judged from the index's sums per rank before its offer is listed (`_judged_early`), and
its trials take the offer in the victims' order a rank at a time (`_useful_in_order`).
`Preemption` sets every attribute declared here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from shoal.api.lifecycle import TaskState
from shoal.api.queue_policy import QueuePreemption, WithinQueue
from shoal.api.resources import Resources
from shoal.core.nodes import NodeState
from shoal.scheduler.actions.victim_trials import VictimTrials
from shoal.scheduler.gang_choice import GangNeed, least_request
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.preemptor_class import Generation, generation
from shoal.scheduler.queue_preemption import (
    newer_equal_allowed,
    policy_of,
    within_queue_victim,
)
from shoal.scheduler.running_order import worst_first
from shoal.scheduler.running_table import RankHolds, RunningTable
from shoal.scheduler.victim_index import KeptIndexes, QueueVictims, Score
from shoal.scheduler.victims import KeptUnits, VictimUnit, ordered, units_of


class VictimListing(VictimTrials):
    """The running jobs a preemption may take from, and what each gives up."""

    rank_keys: list[Callable[[JobInfo], tuple[Any, ...]]]
    looks: bool
    fresh: set[str]
    evicted: set[str]
    kept: KeptUnits
    table: RunningTable | None
    kept_indexes: KeptIndexes | None
    _holds: list[RankHolds]
    _ranks: dict[JobInfo, tuple[Any, ...]]
    _running: dict[str, list[JobInfo]] | None
    _snapshot: Generation | None
    """When the running jobs were first listed (`running`): under a kept table each virtual
    cluster's listing is taken when first asked for, as the table stood then."""
    _listed_fresh: frozenset[str]
    _lazy: bool
    """Whether some virtual clusters' listings are still to be taken from the table."""
    _units: dict[str, list[VictimUnit]]
    _refreshed: Generation | None
    _listed: bool
    _victims: int
    _indexed: int | None
    _indexes: dict[str, QueueVictims]
    _room_refused: bool
    """Whether `_judged_early` turned the search under way down on room, its policy noting
    nothing (`Preemption._preempt_for`): what a `JudgedVerdict` keeps
    (`shoal.scheduler.actions.judged_searches`)."""
    _room_freed: dict[int, tuple[NodeState, Resources]]
    """What the units behind the preemptor held per node when `_judged_early` last turned a
    search down on room (set with `_room_refused`, read only while that holds): its
    `JudgedVerdict` counts the room again with them."""

    by_start = True
    """Take each rank's victims in the score's order unit by unit from their kept
    shapes (`victims.ByStart`); False (a test knob): each rank sorted whole."""

    _read_table: RunningTable | None = None
    """The kept table once this execution brought it up to now (`_refresh`): a job filed
    there ranks as filed."""

    def rank(self, job: JobInfo) -> tuple[Any, ...]:
        key = self._ranks.get(job)
        if key is None:
            table = self._read_table
            if table is not None:
                key = table.rank_of(job)
                if key is not None:
                    self._ranks[job] = key
                    return key
            rank_keys = self.rank_keys
            if len(rank_keys) == 1:  # las, priority: no tuple to build
                key = rank_keys[0](job)
            else:
                key = ()
                for rank_key in rank_keys:
                    key += rank_key(job)
            self._ranks[job] = key
        return key

    def running(self, queue: str) -> list[JobInfo]:
        """Jobs of the virtual cluster holding tasks when the action began, worst first."""
        self._listed = True
        return self._listing(queue)

    def _listing(self, queue: str) -> list[JobInfo]:
        """`running`, without noting that the search under way listed them. Under a kept
        table each virtual cluster is listed when first asked for (most searches read one
        or two of them), from the table as it stood when the first was asked for: the
        table is refreshed again only after every one left was listed (`_refresh`)."""
        running = self._running
        if running is None:
            running = self._begin()
        listed = running.get(queue)
        if listed is None:
            table = self.table
            if table is None or not self._lazy:
                return []
            listed = running[queue] = table.listing(queue, self.session.now,
                                                    self._listed_fresh,
                                                    self.session.job_order_key)
        return listed

    def _begin(self) -> dict[str, list[JobInfo]]:
        """Take the running jobs as they stand when first asked for: every virtual
        cluster's listing at once, or under a kept table none yet (`_listing`)."""
        session = self.session
        table = self.table
        self._snapshot = generation(session)
        if table is None:
            running = self._running = worst_first(
                session.jobs.values(), self.fresh, session.now, self.rank,
                session.job_order_key, self.looks)
            return running
        self._refresh(table)
        running = self._running = {}
        self._listed_fresh = frozenset(self.fresh)
        self._lazy = True
        return running

    def _list_all(self, table: RunningTable) -> None:
        """List every virtual cluster not listed yet, before the table moves on."""
        running = self._running
        if running is None or not self._lazy:
            return
        self._lazy = False
        for queue in table.queues():
            if queue not in running:
                running[queue] = table.listing(queue, self.session.now, self._listed_fresh,
                                               self.session.job_order_key)

    def _refresh(self, table: RunningTable) -> None:
        """Bring the kept table up to now, its ranks read as if asked now (as the listing
        and the world asked every running job's rank). Once per commit: in between, no
        job's tasks or rank move.

        A job's rank is the one it was first filed at in this execution: read from the
        table when first asked (`rank`), not copied for every running job at every refresh.
        A later refresh re-files a job at the rank `rank` gives, so only a job it drops (a
        victim of a commit) would be read otherwise: its rank is pinned before."""
        now = generation(self.session)
        if now == self._refreshed:
            return
        self._list_all(table)
        self._refreshed = now
        holds = self._holds
        if self._read_table is not None:
            ranks, jobs = self._ranks, self.session.jobs
            for name in self.evicted:
                job = jobs.get(name)
                if job is not None and job not in ranks:
                    filed = table.rank_of(job)
                    if filed is not None:
                        ranks[job] = filed

        def until(job: JobInfo) -> float:
            return min(p.preemption_key_until(job) for p in holds) if holds else math.inf

        # One plugin that ranks (las): its own answer, with no generator around it.
        table.refresh(self.session, self.rank,
                      holds[0].preemption_key_until if len(holds) == 1 else until)
        self._read_table = table

    def candidates(self, preemptor: JobInfo, policy: QueuePreemption | None = None
                   ) -> list[VictimUnit]:
        """What the preemptor may take, in the order of the victims' score: what its
        virtual cluster's `withinQueue` allows (`shoal.scheduler.queue_preemption`), or
        `policy` when given (what another policy would have offered)."""
        if policy is None:
            policy = policy_of(self.session, preemptor)
        rank = self.rank(preemptor)
        index = self.victim_index(preemptor, policy)
        if index is not None:
            offered = index.offered(index.behind(rank))
            return [u for u in offered if u.job is not preemptor] if preemptor.running \
                else offered
        units: list[VictimUnit] = []
        for job in self.running(preemptor.queue):
            theirs = self.rank(job)
            if theirs <= rank and not (theirs == rank and newer_equal_allowed(policy)):
                break  # the list is worst first: no later job ranks behind (or level)
            if within_queue_victim(policy, preemptor, job, theirs > rank, theirs == rank) and \
                    self.takeable(job, preemptor):
                units.extend(self.units(job, preemptor))
        return ordered(units, self.rank, self.session.job_order_key, self.session.now)

    def offer(self, preemptor: JobInfo) -> tuple[list[VictimUnit], bool]:
        """`candidates`, and whether they come in the victims' order. Where the victim
        index answers (and keys come out the same whenever asked, `looks` False), they come
        in rank order instead, unsorted: a search reads only which units it is offered
        until it tries a placement (`VictimTrials._worth_evicting` judges them as a whole;
        the policy notes sum them), and under backlog most end before that. Sorting asks
        every offered job for its work lost and latest start; a search that goes on to its
        trials asks `candidates` for the order."""
        if self.looks or type(self).candidates is not VictimListing.candidates:
            return self.candidates(preemptor), True
        index = self.victim_index(preemptor, policy_of(self.session, preemptor))
        if index is None:
            return self.candidates(preemptor), True
        units = index.prefix(index.behind(self.rank(preemptor)))
        if preemptor.running:
            units = [u for u in units if u.job is not preemptor]
        return units, False

    def _judged_early(self, preemptor: JobInfo, need: GangNeed, index: QueueVictims,
                      behind: int, quota_bound: bool) -> bool | None:
        """What `_worth_evicting` would say of the units the preemptor is offered (the
        first `behind` of `index`, whose GPUs on its pools cover its demand), told from the
        index's sums per rank of what their tasks hold per node and whom they are charged
        to (`QueueVictims.held`), without listing them; None where it is not told so (they
        are listed and judged).

        Exact where `_worth_evicting` judges them as a whole (`_judged_whole`: every
        condition grows with what is evicted): it then asks for room node by node, which
        reads nothing of a unit that is not useful (it holds nothing on the preemptor's
        pools), and for the quota after every useful unit gave back what it holds off
        owned nodes — for a preemptor held by its quota every unit is useful. Only where
        keys come out the same whenever asked (`looks` False): the offer is then never
        sorted before its trials."""
        if not self._judgeable(preemptor, index, behind, quota_bound):
            return None
        held, _ = index.held(behind, _holds)
        by_name = self.session.cluster.by_name
        freed = {}
        for node, request in held.items():
            state = by_name[node]
            freed[state.ordinal] = (state, request)
        # Room first: both only read (the quota tree answers a refund as a hypothesis), and
        # under a las backlog room turns down most quota-bound searches, the quota none.
        if not self._room_after(preemptor, need, freed):
            self._room_refused = True  # kept by a `JudgedVerdict`: nothing read but room
            self._room_freed = freed
            return False
        if not quota_bound:
            return True
        refund = Resources()
        for state, request in freed.values():
            if state.owner is None:
                refund = refund + request
        return self._quota_allows_after(preemptor, refund, least_request(preemptor, need))

    def _judgeable(self, preemptor: JobInfo, index: QueueVictims, behind: int,
                   quota_bound: bool) -> bool:
        """Whether `_judged_early` tells its verdict (it does not return None): what it
        asks before it counts anything."""
        if self.looks or not self.judge_whole or self.session.cluster.limits_tasks() \
                or not self._judged_whole(preemptor, [], False):
            return False
        if quota_bound:
            _, charged = index.held(behind, _holds)
            account = preemptor.account
            if any(a != account for a in charged):
                return False  # `_judged_whole` would not judge them whole
        return True

    def _useful_in_order(self, index: QueueVictims, behind: int, nodes: set[int],
                         gains: dict[int, int], quota_bound: bool) -> Iterator[VictimUnit]:
        """The first `behind` units of `index` in the order they are tried (the victims'
        score), those of a chain that frees something on `nodes` only (the preemptor's
        pools) unless the preemptor is held by its quota, each one's GPUs there put in
        `gains` (by `id`) as it comes: a search that fits after a few units lists no
        more."""
        by_name = self.session.cluster.by_name
        helps: dict[str, bool] = {}

        def frees(unit: VictimUnit) -> int:
            return sum(unit.job.job.group(t.ref.group).resources.gpu for t in unit.tasks
                       if by_name[t.node].ordinal in nodes)

        def touches(unit: VictimUnit) -> bool:
            return any(by_name[t.node].ordinal in nodes for t in unit.tasks)

        for unit in index.in_order(behind):
            chain = unit.chain
            useful = quota_bound or helps.get(chain)
            if useful is None:
                useful = helps[chain] = touches(unit) if unit.alone else \
                    any(touches(u) for u in index.units_of(unit.job) if u.chain == chain)
            if useful:
                gains[id(unit)] = frees(unit)
                yield unit

    def victim_index(self, preemptor: JobInfo, policy: QueuePreemption
                     ) -> QueueVictims | None:
        """The preemptor's virtual cluster's victims indexed by rank and what they free
        (`shoal.scheduler.victim_index`), where its rank alone says what it is offered:
        under `withinQueue: LowerPriority`, without victim-selection plugins. After every
        commit that evicts, or places a job it lists, the jobs evicted or placed are
        listed again (`_forget_indexes`). Under a kept running table the index is the one
        kept for the virtual cluster, brought up to the table by the jobs re-filed there
        (`victim_index.KeptIndexes`), less what this execution took or placed."""
        if policy.within_queue is not WithinQueue.LOWER_PRIORITY \
                or self.session.hooks.victim_selections:
            return None
        if self._victims != self._indexed:
            self._forget_indexes()
        queue = preemptor.queue
        index = self._indexes.get(queue)
        if index is None:
            session = self.session

            def order(units: list[VictimUnit]) -> list[VictimUnit]:
                return ordered(units, self.rank, session.job_order_key, session.now,
                               self.looks)

            kept, table = self.kept_indexes, self.table
            if kept is not None and table is not None and self._table_listing():
                self._listed = True  # as `running` notes
                world = (session.model, session.hooks, session.cluster.layout)
                index = kept.current(queue, world, table, self._filed_segment, order) \
                    .renewed(order, not self.looks, self._score())
                for name in self.fresh | self.evicted:
                    job = session.jobs.get(name)
                    if job is not None and index.holds(job):
                        self._relist(index, job)
                self._indexes[queue] = index
                return index
            units, ranks = self._takeable_units(self.running(queue))
            index = self._indexes[queue] = QueueVictims(
                units, lambda u: self.rank(u.job), order, prefixes=not self.looks,
                ranks=ranks, score=self._score())
        return index

    def _score(self) -> Score | None:
        """What the victims' score reads besides the units, where an index may work it
        out one rank at a time and unit by unit (`QueueVictims.in_order`): keys that come
        out the same whenever asked (`looks` False)."""
        if self.looks or not self.by_start:
            return None
        session = self.session
        return Score(session.now, session.job_order_key)

    def _table_listing(self) -> bool:
        """Whether every virtual cluster's listing is the table's as it stands now: the
        table was not refreshed since the first was taken (`_list_all`)."""
        if self._running is None:
            self._begin()
        return self._lazy

    def _filed_segment(self, job: JobInfo) -> tuple[tuple[Any, ...], list[VictimUnit]] | None:
        """A job filed in the table: its rank and what it may give up, before this
        execution took or placed anything (`_takeable_units` with nothing fresh)."""
        running = job.running
        table = self.table
        if not running or table is None \
                or any(t.state is TaskState.RELEASING for t in running):
            return None
        units = self.kept.of(job, self.session.now)
        rank = table.rank_of(job)
        return None if not units or rank is None else (rank, units)

    def _relist(self, index: QueueVictims, job: JobInfo) -> None:
        """List the job's units in `index` again, as `_takeable_units` lists them now."""
        index.drop(job)
        units, ranks = self._takeable_units([job])
        if units:
            index.put(job, ranks[0], units)

    def lists(self, job: JobInfo) -> bool:
        """Whether `running` lists the job (it holds tasks placed before this execution,
        in its virtual cluster): under a kept table, known without listing them."""
        running = self._running
        if running is None:
            return False
        listed = running.get(job.queue)
        table = self.table
        if listed is None and table is not None and self._lazy:
            return table.queue_of(job) == job.queue and job.name not in self._listed_fresh \
                and bool(job.running)
        return any(j is job for j in self._listing(job.queue))

    def _takeable_units(self, listing: list[JobInfo]
                        ) -> tuple[list[VictimUnit], list[tuple[Any, ...]]]:
        """What the `listing`'s jobs may give up, each unit with its job's rank: `takeable`
        and `units` for every job, without a victim-selection plugin, in one walk (a
        virtual cluster's index is built from a hundred jobs under backlog). `running`
        lists the jobs worst rank first: so are their units."""
        fresh, evicted, cache = self.fresh, self.evicted, self._units
        kept, now, rank = self.kept, self.session.now, self.rank
        releasing = TaskState.RELEASING
        units: list[VictimUnit] = []
        ranks: list[tuple[Any, ...]] = []
        for job in listing:
            running = job.running
            name = job.job.name
            if not running or name in fresh or (name in evicted and job.job.gang) \
                    or any(t.state is releasing for t in running):
                continue
            given = cache.get(name)
            if given is None:
                given = cache[name] = kept.of(job, now)
            if given:
                units.extend(given)
                ranks.extend([rank(job)] * len(given))
        return units, ranks

    _moved: frozenset[str] = frozenset()
    """The jobs evicted or placed in this execution as of `_indexed`."""

    def _forget_indexes(self) -> None:
        """List again, in the indexes built, the jobs evicted or placed in this execution:
        what a job may give up moves only with its own tasks (`takeable`, `units`), and
        only an evicted or placed job's tasks move. Every other job is listed with the same
        units at the same ranks, and the order's keys come out the same whenever asked in
        this execution (`looks` False); where they may not, every index is built again."""
        self._indexed = self._victims
        moved = self.evicted | self.fresh
        if self.looks:
            self._indexes, self._moved = {}, frozenset(moved)
            return
        indexes, jobs = self._indexes, self.session.jobs
        if any(name not in jobs for name in moved - self._moved):
            indexes.clear()
        # A job taken from again since is moved already: every one is listed again. It
        # only gives up less now: one an index lists nothing of still lists nothing.
        for name in moved:
            job = jobs.get(name)
            index = None if job is None else indexes.get(job.queue)
            if job is not None and index is not None and index.holds(job):
                self._relist(index, job)
        self._moved = frozenset(moved)

    def takeable(self, job: JobInfo, preemptor: JobInfo | None) -> bool:
        """Whether `job` may give anything up in this execution: it runs tasks placed before
        it, was not taken from yet — unless it is placed task by task: then, as pods, its
        other tasks may go to the next preemptor —, and is not already stopping (its
        resources then come back without an eviction)."""
        return job is not preemptor and bool(job.running) and job.name not in self.fresh \
            and (job.name not in self.evicted or not job.job.gang) \
            and not any(t.state is TaskState.RELEASING for t in job.running)

    def units(self, job: JobInfo, preemptor: JobInfo) -> list[VictimUnit]:
        """What `job` may give up for `preemptor`, in its own order: the victim-selection
        plugins keep any task they do not list."""
        selections = self.session.hooks.victim_selections
        if not selections:
            # Then they do not depend on the preemptor, and a job's units stay as they are
            # until it is taken from (and then it is no candidate again): listed once per
            # execution, not once per preemptor that looks at it.
            units = self._units.get(job.name)
            if units is None:
                units = self._units[job.name] = self.kept.of(job, self.session.now)
            return units
        return units_of(job, self.session.now, lambda tasks: all(
            len(s.victims(preemptor, tasks)) == len(tasks) for s in selections))


def _holds(unit: VictimUnit) -> tuple[str, list[tuple[str, Resources]]]:
    """Whom the unit is charged to, and what each of its tasks holds with its node's name."""
    group = unit.job.job.group
    return unit.job.account, [(t.node, group(t.ref.group).resources) for t in unit.tasks]
