"""Searches turned down short, answered again from the numbers they read (issue 18).

Most of the preempt action's searches under backlog end before any trial placement: the
*gains test* (GPUs free on the preemptor's node pools plus the GPUs the units ranked behind
it free there fall short of the fewest its missing tasks need), or nothing at all ranks
behind it while what is free does not take it. The class verdicts of
`shoal.scheduler.preemptor_class` that last across cycles are void once anything running
moves anywhere (a job ends, one starts, one crosses a las threshold): about every cycle.
A `ShortVerdict` keeps such a search's numbers instead, and holds while

- the free GPUs on its pools, counted again (O(nodes), once per commit), plus what its
  victims freed then still fall short — they cannot have grown behind it: no job of its
  virtual cluster was filed behind its rank since (`RunningTable.grown_behind`: a job that
  started there, changed its tasks or crossed a threshold to behind it; one that left frees
  capacity, which the count of free GPUs sees), and jobs placed in its cycle, not offered
  then, were counted in as if they were;
- or nothing ranks behind it still, and what is free still does not take it (tried again as
  the search would: `_fits_without_eviction`);
- the model, plugins, quota tree and node layout are those it read (`short_world`).

The victims a search is offered are the running jobs as the table listed them when the
execution first listed any (`VictimListing._listing`), less those it may no longer take
(placed or evicted in this execution): never more than the table's latest events allow.
So a verdict is checked against those events after a commit too, where the execution has
listed its victims; before its first listing, only while nothing was committed (the listing
would be taken now). A verdict is kept only from a search whose listing is the table as it
stands, so that every later filing comes after its stamp.

Then the search would have ended the same way — no note, no eviction, the quota tree's
lending at `may_borrow` — so it is answered so without listing or indexing a victim.
Where that is known without a trial placement — the gains test, or with nothing ranked
behind it the count node by node a placement on what is free starts with
(`_could_fit`, whose no is kept while no capacity comes back: `ShortVerdict.unfit`, and
made once per class shape on the same capacity: `_unfit_of`) — the
class is answered before its job is even asked whether it wants to
preempt (`short_verdict`, read by `Preemption.answered`): whether it wants to or not, its
turn changes nothing but the lending, which is settled where read. So a preemptor walk by
class parks the whole class at its first job (`shoal.scheduler.actions.preemptor_walk`),
instead of asking that job's readiness and searching for it first; and where the
facts it kept still say so at the start of an execution, before it visits any job of the
class (`known_answers`). Only
for the preempt action itself under a kept running table (not reclaim, whose offer reads
more than ranks) and a virtual cluster whose policy notes nothing when it turns one down.

Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from operator import attrgetter
from typing import Any

from shoal.scheduler.actions.victim_listing import VictimListing
from shoal.scheduler.gang_choice import GangNeed
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.preemptor_class import (
    Generation,
    PreemptorClasses,
    ShortVerdict,
    Verdict,
    generation,
    short_world,
)

_GPU = attrgetter("gpu")

_HELD = {lending: Verdict((), lending, (), True) for lending in (False, True)}
"""What a `ShortVerdict` that holds answers, by the lending it left (`_short_held`)."""

ShortRead = tuple[Hashable, set[int], int, int, bool]
"""What a search turned down short read: its pools, their nodes, its demand, what the units
behind it free there, whether any unit ranks behind it."""


class ShortSearches(VictimListing):
    """The preempt action's searches, answered again by a `ShortVerdict` where it holds."""

    carries = True
    """Answer classes from their kept facts before the walk reaches them (`known_answers`)
    and keep the count node by node that turned a class down while no capacity comes back
    (`ShortVerdict.unfit`); False (a test knob): every class is asked at its first job and
    counted afresh."""
    classes: PreemptorClasses
    shorts: bool
    """Whether searches may be answered so (the preempt action itself, a kept table)."""
    _entered: Generation | None
    _short_read: ShortRead | None
    """What the search under way read, where it was turned down short (`_preempt_for`)."""
    _counted: Generation | None
    _free: dict[Hashable, int]
    """Per set of node pools, its free GPUs as of `_counted`."""
    _world_now: tuple[Generation, Hashable] | None = None
    """`short_world` as of a generation (`_short_world`)."""
    _unfit_at: tuple[int, set[int]] | None = None
    """The committed capacity `_unfits` were counted on (`_unfit_of`)."""
    _unfits: dict[Hashable, bool]
    """Per class shape, whether its missing tasks do not fit on what is free."""

    def _free_on(self, pools: Hashable, nodes: set[int] | frozenset[int]) -> int:
        """GPUs free on `nodes` (named `pools`), counted once per commit."""
        now = generation(self.session)
        if now != self._counted:
            self._free, self._counted = {}, now
        free = self._free.get(pools)
        if free is None:
            states = self.session.cluster.states
            free = self._free[pools] = sum(map(_GPU, map(states.__getitem__, nodes)))
        return free

    def short_answer(self, preemptor: JobInfo, key: Hashable, before: Generation
                     ) -> bool | None:
        """Answer the search for `preemptor` (of class `key`) from its class's
        `ShortVerdict` where it holds (module text): False, as the search would return,
        with the lending it would leave and its verdict remembered; None: search."""
        verdict = self._short_standing(key, before)
        if verdict is None:
            return None
        session = self.session
        free = self._free_on(verdict.pools, verdict.nodes)
        session.quota.lending = True
        if free + verdict.behind >= verdict.demand:
            if verdict.units:
                return None  # it may get past the gains test: search
            if self._fits_without_eviction(preemptor, GangNeed.of(session, preemptor)):
                return False  # placed on what is free, as the search would have
        session.quota.lending = verdict.lending
        self._short_held(key, before, verdict)
        return False

    def short_verdict(self, preemptor: JobInfo, key: Hashable, before: Generation
                      ) -> Verdict | None:
        """The verdict `preemptor`, of class `key`, would be answered by, known before it is
        asked whether it wants to preempt (`Preemption.answered`): where its class's
        `ShortVerdict` holds and the search would place nothing on what is free — by the
        gains test, or, with nothing ranked behind it, because the count node by node that
        comes first in that placement (`_could_fit`) already says no. Where only the
        placement itself could say, None: the job is asked as before (a search that fits
        places it). Whether or not the job wants to preempt, its class's verdict is then
        the one its search would give, so the class is answered by it from here on."""
        verdict = self._short_standing(key, before)
        if verdict is None:
            return None
        if self._free_on(verdict.pools, verdict.nodes) + verdict.behind >= verdict.demand:
            if verdict.units or self._held_nodes(preemptor):
                return None
            epoch = self.session.cluster.release_epoch
            if verdict.unfit != epoch or not self.carries:
                if not self._unfit_of(preemptor, key):
                    return None
                verdict.unfit = epoch
        return self._short_held(key, before, verdict)

    def known_answers(self, keys: Iterable[tuple[int, Hashable]], before: Generation,
                      first: Callable[[int], JobInfo | None] | None = None
                      ) -> list[tuple[int, Verdict]]:
        """Of `keys` (a walk's sources and their classes), those whose verdict a job would be
        answered by now (`answered`) is known from the class's kept facts alone, before
        the walk reaches it, with that verdict: one that lasts in the world entered (noting
        nothing), or a `ShortVerdict` that holds — its virtual cluster's stamp in the
        running table unmoved or nothing filed behind its rank since, and the free GPUs on
        its pools plus what its victims freed still short of its demand, or with nothing
        ranked behind it, no capacity given back since the count node by node said it does
        not fit on what is free (`ShortVerdict.unfit`). The others are asked as the walk
        reaches them. Only at the generation the world was entered in, nothing committed
        since: the state any job visited before the execution's first commit meets. One
        pass over the classes with what they share looked up once: the walk asks this of
        every class in every cycle.

        `first`: per source, the job the walk would visit first. With it, a class with
        nothing ranked behind it, whose count node by node is void because capacity came
        back, is counted again here on that job, as `short_verdict` would count it when
        the walk reached it in the same state (after a commit the walk asks it anew)."""
        classes, table = self.classes, self.table
        found: list[tuple[int, Verdict]] = []
        if table is None or not self.shorts or before != self._entered:
            return found
        lasting, shorts, now = classes.lasting_verdicts, classes.short_verdicts, classes.now
        world = self._short_world(before)
        epoch = self.session.cluster.release_epoch
        stamps: dict[str, int] = {}
        grown_at: dict[tuple[str, int, Any], bool] = {}
        unfits: dict[Hashable, bool] = {}
        held_any: bool | None = None
        stamp_of, grown = table.queue_stamp, table.grown_behind
        free_on = self._free_on
        if self._counted != before:
            self._free, self._counted = {}, before
        counted = self._free
        held_now = (before, _HELD[False]), (before, _HELD[True])
        answers = 0
        for index, key in keys:
            verdict: Any = lasting.get(key)
            if verdict is not None:
                if not verdict.notes:
                    found.append((index, verdict))
                continue
            verdict = shorts.get(key)
            if verdict is None:
                continue
            if verdict.world is not world:
                if verdict.world != world:
                    continue
                verdict.world = world  # the same facts: compared by identity from now on
            queue = verdict.queue
            stamp = stamps.get(queue)
            if stamp is None:
                stamp = stamps[queue] = stamp_of(queue)
            if stamp != verdict.stamp:
                # The table files nothing during the pass: verdicts of one virtual cluster
                # kept at one stamp and rank (a las service class) get one answer.
                asked = (queue, verdict.stamp, verdict.rank)
                behind = grown_at.get(asked)
                if behind is None:
                    behind = grown_at[asked] = grown(queue, verdict.stamp, verdict.rank)
                if behind:
                    continue
            free = counted.get(verdict.pools)
            if free is None:
                free = free_on(verdict.pools, verdict.nodes)
            if free + verdict.behind >= verdict.demand \
                    and (verdict.units or verdict.unfit != epoch):
                job = None if verdict.units or first is None else first(index)
                if job is None:
                    continue
                if held_any is None:
                    held_any = self._holds_back_any()
                if held_any and self._held_nodes(job):
                    continue
                # `_unfit_of` counts once per shape and commit: asked of it once per shape.
                shape = getattr(key, "shape", None) if self.carries else None
                unfit = None if shape is None else unfits.get(shape)
                if unfit is None:
                    unfit = self._unfit_of(job, key)
                    if shape is not None:
                        unfits[shape] = unfit
                if not unfit:
                    continue
                verdict.unfit = epoch
            # As `_short_held`: what came behind it since freed nothing behind it.
            verdict.stamp = stamp
            answers += 1
            lending = verdict.lending
            now[key] = held_now[lending]
            held = lasting[key] = _HELD[lending]
            found.append((index, held))
        classes.skipped += len(found) - answers
        classes.short_answers += answers
        return found

    def _unfit_now(self, preemptor: JobInfo) -> bool:
        """Whether the count node by node says the preemptor's missing tasks do not fit on
        what is free now (for a class with nothing ranked behind it, and a preemptor no
        reservation keeps off nodes)."""
        need = GangNeed.of(self.session, preemptor)
        return not self._could_fit(preemptor, need, self._fitting_now())

    def _unfit_of(self, preemptor: JobInfo, key: Hashable) -> bool:
        """`_unfit_now` for a preemptor of class `key`, counted once per class shape
        (`ClassKey.shape`) on the same committed capacity: after capacity comes back, the
        classes of a few shapes in every virtual cluster and rank are each counted again,
        and the count reads nothing of the class but its shape."""
        shape = getattr(key, "shape", None)
        if shape is None or not self.carries:
            return self._unfit_now(preemptor)
        session = self.session
        at = self._unfit_at
        if at is None or at[0] != session.commits or at[1] is not session.excluded_nodes:
            self._unfit_at, self._unfits = (session.commits, session.excluded_nodes), {}
        found = self._unfits.get(shape)
        if found is None:
            found = self._unfits[shape] = self._unfit_now(preemptor)
        return found

    def _short_standing(self, key: Hashable, before: Generation) -> ShortVerdict | None:
        """The class's `ShortVerdict`, where nothing but free capacity could void it now."""
        verdict = self.classes.short(key)
        table = self.table
        if verdict is None or table is None or not self.shorts \
                or (self._running is None and before != self._entered):
            return None
        world = self._short_world(before)
        if (verdict.world is not world and verdict.world != world) \
                or (table.queue_stamp(verdict.queue) != verdict.stamp
                    and table.grown_behind(verdict.queue, verdict.stamp, verdict.rank)):
            return None
        return verdict

    def _short_world(self, now: Generation) -> Hashable:
        """`short_world`, worked out once per commit: nothing it reads moves in between."""
        known = self._world_now
        if known is None or known[0] != now:
            facts = short_world(self.session)
            # One object while the facts stand, from one cycle to the next: the kept
            # verdicts compare theirs by identity first (`known_answers`).
            last = self.classes.world_seen
            if last is not None and last == facts:
                facts = last
            else:
                self.classes.world_seen = facts
            known = self._world_now = (now, facts)
        return known[1]

    def _short_held(self, key: Hashable, before: Generation, verdict: ShortVerdict
                    ) -> Verdict:
        """The short verdict held now: remembered as the class's verdict."""
        assert self.table is not None
        # What came behind it so far freed nothing behind it, nor will the jobs placed in
        # this cycle: their filing came after the stamp and ranks at or ahead of it.
        verdict.stamp = self.table.queue_stamp(verdict.queue)
        self.classes.short_answers += 1
        held = _HELD[verdict.lending]
        self.classes.remember(key, before, held, lasting=before == self._entered)
        return held

    def keep_short(self, preemptor: JobInfo, key: Hashable) -> None:
        """Keep what the search just made read, where it was turned down short with nothing
        noted, and its victims were listed from the table as it stands."""
        read = self._short_read
        table = self.table
        if read is None or table is None or not self.shorts \
                or self._snapshot != self._refreshed:
            return
        pools, nodes, demand, behind, units = read
        session = self.session
        rank = self.rank(preemptor)
        cluster = session.cluster
        # Placed in this cycle, so not offered now, but offered from the next on.
        for name in self.fresh:
            job = session.jobs.get(name)
            if job is None or job.queue != preemptor.queue:
                continue
            filed: Any = table.rank_of(job)
            if filed is None or not filed > rank:
                continue
            units = True
            behind += sum(job.job.group(t.ref.group).resources.gpu for t in job.running
                          if cluster.by_name[t.node].ordinal in nodes)
        facts = short_world(session)
        if facts == self.classes.world_seen:
            facts = self.classes.world_seen  # compared by identity first (`known_answers`)
        self.classes.remember_short(key, ShortVerdict(
            facts, preemptor.queue,
            table.queue_stamp(preemptor.queue), rank,
            pools, frozenset(nodes), demand, behind, units, session.quota.lending))

