"""Why a preemptor evicts nothing, where its virtual cluster's policy is the reason: the
preempt and reclaim actions' notes of victims their policy excluded
(`shoal.scheduler.held_back`).

A search that ends without eviction asks whether the widest policy `widest` names would
have offered victims that let the preemptor evict; if so, its pending reason says what
narrowed its offer (`policy_note`), and the note is kept with its class's verdict so that
the jobs the verdict answers get it too. Reclaim overrides `widest` and `policy_note`.
Pure.
"""

from __future__ import annotations

from shoal.api.queue_policy import QueuePreemption
from shoal.scheduler.actions.short_searches import ShortSearches
from shoal.scheduler.gang_choice import GangNeed, least_request
from shoal.scheduler.held_back import (
    could_evict,
    unit_key,
    widest_within_queue,
    within_queue_note,
)
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.queue_preemption import policy_of
from shoal.scheduler.victims import VictimUnit


class PolicyNotes(ShortSearches):
    """A search's policy note, and whether its virtual cluster's quota is what holds it."""

    _notes: list[str] | None
    """The notes of the search under way, kept with its verdict (None: none under way)."""

    def quota_bound(self, preemptor: JobInfo, need: GangNeed) -> bool:
        """Whether the preemptor is held by its virtual cluster's quota rather than by room
        on its nodes: then any eviction in that virtual cluster helps it. Judged on the
        least any choice of its tasks asks."""
        return self.session.allocatable(preemptor.account,
                                        least_request(preemptor, need)) is not None

    def widest(self, preemptor: JobInfo, policy: QueuePreemption) -> QueuePreemption:
        """The policy that would have offered the preemptor the most victims, as far as
        `policy_note` can name what narrowed it (`shoal.scheduler.held_back`)."""
        del preemptor
        return widest_within_queue(policy)

    def policy_note(self, preemptor: JobInfo, policy: QueuePreemption) -> str | None:
        """Why its virtual cluster's policy offered it fewer victims than `widest`."""
        return within_queue_note(preemptor.queue, policy)

    def _note_policy(self, preemptor: JobInfo, units: list[VictimUnit] | None) -> bool:
        """The preemptor evicts nothing: if its virtual cluster's policy excluded victims
        that would have let it evict, its reason says so (`shoal.scheduler.held_back`).
        `units`: what it was offered (None: not listed yet). True if its policy could say
        so (whether or not it did)."""
        policy = policy_of(self.session, preemptor)
        widest = self.widest(preemptor, policy)
        note = None if widest == policy else self.policy_note(preemptor, policy)
        if note is None:
            return False
        if units is None:
            units = self.candidates(preemptor)
        offered = {unit_key(u) for u in units}
        excluded = [u for u in self.candidates(preemptor, widest) if unit_key(u) not in offered]
        if self._could_evict(preemptor, units, excluded):
            self.session.hold_back(preemptor, note)
            if self._notes is not None:
                self._notes.append(note)
        return True

    def _could_evict(self, preemptor: JobInfo, offered: list[VictimUnit],
                     excluded: list[VictimUnit]) -> bool:
        need = GangNeed.of(self.session, preemptor)
        return need.count > 0 and bool(excluded) and could_evict(
            self.session, preemptor, need, self.quota_bound(preemptor, need), offered,
            excluded)
