"""Searches the early judgement turned down on room, answered again while their room, counted
with what they read of their victims, still falls short (issue 18).

Under a `las` backlog most of the preempt action's full searches that get past the gains
test are turned down by the early judgement (`VictimListing._judged_early`): even with every
unit ranked behind the preemptor evicted, its node pools would not have room for its
missing tasks. Such a search is made again whenever its class's verdict is void — that is,
whenever anything running moved anywhere — though often nothing it read moved: on the first
20,000 Philly jobs, 4,041 of 10,514 such searches followed one of their class that said the
same, with no capacity given back in between and nothing filed behind the class's rank.

A `JudgedVerdict` keeps what such a search read, and holds while

- no job of its virtual cluster was filed behind its rank since (`RunningTable.grown_behind`:
  one that started there, changed its tasks or crossed a threshold to behind it), so what
  the units behind it hold only shrank, node by node; a job placed or taken from in the
  search's own cycle, which its listing left out but a later one offers, keeps the search
  from being kept where the table files it behind that rank;
- the model, plugins, quota tree and node layout are those it read (`short_world`);
- its room still falls short: while no capacity came back anywhere
  (`ClusterState.release_epoch` unmoved) every node's free capacity only shrank, and it
  does; once some came back, the room is counted again (`_room_after`) on the nodes as
  they are now with what the units behind its rank held then (`JudgedVerdict.freed`) —
  at least what they hold now, node by node, so at least the room a search now would
  count — and it holds if that falls short too (the release epoch is then taken as
  counted: from there on, again, free capacity only shrank).

Then room node by node after evicting any of the units behind it — every count the search
and its trial placements make: `_could_fit` on what is free, `_room_after` on all of them,
`CensusRoom` on some — is at most the room counted with what they held then (a node's
count only grows with its free capacity and what is freed there: `_judged_whole` held for
it), which falls short, so the search would end the same way: no placement, no eviction,
no note (kept only where its virtual cluster's policy notes nothing), the quota tree's
lending at `may_borrow`. A search turned down by the quota, not the room, is not kept:
another virtual cluster's refund may move the quota's answer.

Most releases under a `las` backlog give a node back where the room stays short (on the
first 20,000 Philly jobs, 5,834 judged refusals followed one of their class with only
capacity given back in between; counted again, all but a few dozen still fell short).

Only for the preempt action itself under a kept running table (`ShortSearches.shorts`), and
only at a preemptor's turn (`Preemption.preempt_for`): a walk by class still visits the
class. Pure.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from itertools import chain
from typing import Any

from shoal.api.resources import Resources
from shoal.core.nodes import NodeState
from shoal.scheduler.actions.policy_notes import PolicyNotes
from shoal.scheduler.gang_choice import GangNeed
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.preemptor_class import Generation, Verdict, generation

_HELD = {lending: Verdict((), lending, (), True) for lending in (False, True)}
"""What a `JudgedVerdict` that holds answers, by the lending it left."""


@dataclass(slots=True)
class JudgedVerdict:
    """A search the early judgement turned down on room: what it read."""

    world: Hashable
    """`short_world` then: the model, plugins, quota tree, node layout."""
    queue: str
    stamp: int
    """Its virtual cluster's stamp in the running table then (`RunningTable.queue_stamp`),
    moved on each time it is found to hold."""
    rank: tuple[Any, ...]
    epoch: int
    """The cluster's release epoch when its room was last counted (then, or when it was
    found to hold after capacity came back)."""
    lending: bool
    """The quota tree's lending it left (`Preemption.may_borrow`)."""
    freed: dict[int, tuple[NodeState, Resources]]
    """What the units behind its rank held then, per node ordinal (`_judged_early`): what
    its room is counted again with after capacity came back."""


class KeptJudgements:
    """The last `JudgedVerdict` of each preemptor class, kept from one cycle to the next by
    the action's instance."""

    def __init__(self) -> None:
        self.verdicts: dict[Hashable, JudgedVerdict] = {}
        self.answers = 0
        """Searches answered by a `JudgedVerdict` (for benchmarks and tests)."""
        self.recounted = 0
        """Of those, answered after capacity came back, their room counted again."""

    def remember(self, key: Hashable, verdict: JudgedVerdict) -> None:
        if len(self.verdicts) > 4096 and key not in self.verdicts:
            self.verdicts = {}  # classes come and go with the waiting jobs' shapes
        self.verdicts[key] = verdict


class JudgedSearches(PolicyNotes):
    """The preempt action's searches, answered again by a `JudgedVerdict` where it holds."""

    keeps_judged = True
    """Answer searches turned down by the early judgement from what they read; False (a
    test knob): search in full."""
    recounts_judged = True
    """Count a `JudgedVerdict`'s room again after capacity came back; False (a test knob):
    any release voids it."""
    judgements: KeptJudgements | None
    """Where the action keeps them across cycles (None: not kept)."""

    def judged_answer(self, preemptor: JobInfo, key: Hashable, before: Generation
                      ) -> bool | None:
        """Answer the search for `preemptor` (of class `key`) from its class's
        `JudgedVerdict` where it holds (module text): False, as the search would return,
        with the lending it would leave and its verdict remembered; None: search."""
        kept = self.judgements
        table = self.table
        if kept is None or table is None or not self.shorts or not self.keeps_judged:
            return None
        verdict = kept.verdicts.get(key)
        if verdict is None:
            return None
        # As `ShortSearches._short_standing`: before its first listing, only while nothing
        # was committed in this execution (its listing would be taken now).
        if self._running is None and before != self._entered:
            return None
        world = self._short_world(before)
        if verdict.world is not world:
            if verdict.world != world:
                return None
            verdict.world = world  # the same facts: compared by identity from now on
        stamp = table.queue_stamp(verdict.queue)
        if stamp != verdict.stamp and table.grown_behind(verdict.queue, verdict.stamp,
                                                         verdict.rank):
            return None
        # What was filed since came ahead of it or at its rank: nothing behind it grew.
        epoch = self.session.cluster.release_epoch
        if verdict.epoch != epoch:
            # Capacity came back: its room, counted now with what was behind it then.
            if not self.recounts_judged or self._room_after(
                    preemptor, GangNeed.of(self.session, preemptor), verdict.freed):
                return None
            verdict.epoch = epoch
            kept.recounted += 1
        verdict.stamp = stamp
        kept.answers += 1
        self.session.quota.lending = verdict.lending
        self.classes.remember(key, before, _HELD[verdict.lending],
                              lasting=before == self._entered)
        return False

    def keep_judged(self, preemptor: JobInfo, key: Hashable) -> None:
        """Keep what the search just made read, where its early judgement turned it down on
        room with nothing noted, its victims listed from the table as it stands, and no job
        placed or taken from in this cycle filed behind its rank (its listing left that one
        out; a later one offers it)."""
        kept = self.judgements
        table = self.table
        if not self._room_refused or kept is None or table is None or not self.shorts \
                or not self.keeps_judged or self._snapshot != self._refreshed:
            return
        session = self.session
        rank = self.rank(preemptor)
        queue = preemptor.queue
        jobs = session.jobs
        for name in chain(self.fresh, self.evicted):
            job = jobs.get(name)
            if job is None or job.queue != queue or not job.running:
                continue
            filed: Any = table.rank_of(job)
            if filed is not None and filed > rank:
                return
        kept.remember(key, JudgedVerdict(
            self._short_world(generation(session)), queue, table.queue_stamp(queue),
            rank, session.cluster.release_epoch, session.quota.lending, self._room_freed))

