"""Reclaim by deserved share (the capacity plugin's `share: proportional`, Volcano's
`proportion` plugin's `Reclaimable`/`Overused`): a virtual cluster below what it deserves
takes resources back from virtual clusters above what they deserve.

What each virtual cluster deserves this cycle is the capacity plugin's water-filling
(`shoal.core.deserved`). For a waiting job W (the reclaim action's candidates, in job order):

- W may reclaim from a running job J of another line (neither W's virtual cluster, nor an
  ancestor, nor a descendant of it) when, on W's path below the lowest virtual cluster the
  two share, every level stays within what it deserves once W's missing tasks are added
  (the least any choice of them asks, `shoal.scheduler.gang_choice`), and every level on
  J's path below that shared one is above what it deserves. The levels above the shared
  one do not move: what J gives up, W takes.
- J gives up units (`shoal.scheduler.victims`: elastic surplus first, then the job) only
  while every one of its levels stays at or above what it deserves: reclaim takes the
  excess, never part of a deserved share.
- Dimensions: GPUs for a job that asks GPUs (what it lacks); otherwise every dimension it
  asks.
- W's virtual cluster's policy narrows the candidates as it does for a job owed its
  guarantee (`shoal.scheduler.queue_preemption`, entitled): W stays within what it
  deserves, so `reclaimWithinParent` governs — `Any` (default) takes from any of them,
  `LowerPriority` only from jobs of lower priority, `Never` nothing (W waits, and its
  reason says why). `borrowWithinParent` plays no part: W never goes above its share.
- The candidates are judged on the least W asks; the placement may choose tasks that ask
  more. When it evicts, no virtual cluster on W's path that the statement makes grow may
  end above what it deserves, or nothing is evicted.

The rest — all or nothing, unneeded victims spared, nothing evicted for a job that fits —
is the preempt action's machinery, as for the guarantee-based reclaim
(`shoal.scheduler.actions.reclaim`), of which this is a variant with other candidates.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import NamedTuple

from shoal.api.queue_policy import QueuePreemption, ReclaimWithinParent
from shoal.api.resources import Resources
from shoal.core.deserved import DeservedShares
from shoal.core.quota import QueueState
from shoal.core.statement import Allocation, Eviction, Statement
from shoal.scheduler.actions.reclaim import Reclamation
from shoal.scheduler.gang_choice import GangNeed, least_request
from shoal.scheduler.held_back import reclaim_note, widest_reclaim
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.preemptor_class import Generation, PreemptorClasses, generation
from shoal.scheduler.queue_preemption import policy_of, reclaim_victim, reclaims
from shoal.scheduler.session import Session
from shoal.scheduler.victims import VictimUnit, ordered

#: Deserved shares are fractions: a level "within" its share may be this far over it.
_EPSILON = 1e-9

_ListingKey = tuple[str, Resources, QueuePreemption, int | None]
"""What a listing reads of its preemptor: its virtual cluster, the least it asks, its
policy, and its priority where the policy compares it (`reclaim_victim`)."""


class _Listing(NamedTuple):
    """What `candidates` offered a preemptor, kept for those of the same terms."""

    units: tuple[VictimUnit, ...]
    looked_at: tuple[str, ...]
    """Whose order keys the listing asked, in order (as `Reclamation.ordered` notes)."""
    cut: bool
    """Whether `_above_deserved` cut what it is offered."""


class ProportionalReclamation(Reclamation):
    keeps_listings = True
    """Answer a preemptor with the listing an earlier one of the same terms was offered in
    this execution while nothing was committed since (`candidates`); False (a test knob):
    every preemptor is listed afresh."""

    def __init__(self, session: Session, deserved: DeservedShares, *,
                 surplus_only: bool, classes: PreemptorClasses | None = None) -> None:
        super().__init__(session, surplus_only=surplus_only, classes=classes)
        self.deserved = deserved
        self._by_account: dict[str, list[JobInfo]] | None = None
        self._listings: dict[_ListingKey, _Listing] = {}
        """What preemptors were offered since the last commit, by the terms it reads."""
        self._listed_at: Generation | None = None

    def world_extra(self) -> Hashable:
        """What each virtual cluster deserves: it moves with what waiting jobs ask."""
        return tuple(sorted((queue, tuple(sorted(dims.items())))
                            for queue, dims in self.deserved.by_queue.items()))

    def why(self, preemptor: JobInfo) -> str:
        return (f"job {preemptor.name!r}: virtual cluster {preemptor.account!r} is below its "
                "deserved share and takes back what is above others'")

    # A preemptor here stays within its deserved share: it asks for what it is owed, so its
    # virtual cluster's `reclaimWithinParent` governs it, as for a job entitled to its
    # guarantee (issue 17 found proportional reclaim evicting under `Never`).

    def widest(self, preemptor: JobInfo, policy: QueuePreemption) -> QueuePreemption:
        del preemptor
        return widest_reclaim(policy, entitled=True)

    def policy_note(self, preemptor: JobInfo, policy: QueuePreemption) -> str | None:
        return reclaim_note(preemptor.queue, policy, entitled=True)

    def candidates(self, preemptor: JobInfo, policy: QueuePreemption | None = None
                   ) -> list[VictimUnit]:
        session = self.session
        if policy is None:
            policy = policy_of(session, preemptor)
        request = least_request(preemptor, GangNeed.of(session, preemptor))
        if request.is_zero() or not reclaims(policy, entitled=True):
            return []
        listing: _Listing | None = None
        key: _ListingKey | None = None
        if self.keeps_listings and not session.hooks.victim_selections:
            # What a preemptor is offered reads only these terms (and its priority where
            # its policy compares it): preemptors of one virtual cluster that ask alike,
            # under backlog most of a cycle's, are offered the same until a commit.
            lower = policy.reclaim_within_parent is ReclaimWithinParent.LOWER_PRIORITY
            key = (preemptor.account, request, policy, preemptor.priority if lower else None)
            stamp = generation(session)
            if stamp != self._listed_at:
                self._listed_at, self._listings = stamp, {}
            listing = self._listings.get(key)
        if listing is None:
            listing = self._list(preemptor, policy, request)
            if key is not None:
                self._listings[key] = listing
        # What listing it did: it asked these jobs' order keys (`Reclamation.ordered`), and
        # its cut ends a verdict's lasting (`_tried`), for every preemptor it answers.
        self._looked_at.extend(listing.looked_at)
        if listing.cut:
            self._tried = True
        return list(listing.units)

    def _list(self, preemptor: JobInfo, policy: QueuePreemption, request: Resources
              ) -> _Listing:
        """The units the preemptor is offered, in order (`candidates`)."""
        session = self.session
        dims = {"gpu"} if request.gpu else request.dimensions()
        units: list[VictimUnit] = []
        for job in self._over_deserved(preemptor, request, dims):
            if not reclaim_victim(policy, preemptor, job, entitled=True):
                continue
            for unit in self.units(job, preemptor):
                if self.surplus_only and unit.shrink_to is None:
                    break
                units.append(unit)
        looked_at = tuple(u.job.name for u in units)
        offered, cut = self._above_deserved(
            preemptor, ordered(units, self.rank, session.job_order_key, session.now), dims)
        return _Listing(tuple(offered), looked_at, cut)

    def _place(self, statement: Statement, job: JobInfo, need: GangNeed) -> bool:
        """Place as the preempt action does; but when the statement evicts, no virtual
        cluster the placement makes grow may end above what it deserves. The candidates
        were judged on the least any choice of the job's tasks asks, and the choice placed
        may ask more (a default-scheduler job's first pending task, a bigger group)."""
        mark = statement.savepoint()
        if not super()._place(statement, job, need):
            return False
        operations = statement.operations_since(0)
        if not any(isinstance(op, Eviction) for op in operations) or \
                self._grows_within_deserved(job, operations):
            return True
        statement.roll_back(mark)
        return False

    def _grows_within_deserved(self, job: JobInfo, operations: list[Allocation | Eviction]
                               ) -> bool:
        quota = self.session.quota
        for level in quota.get(job.account).path()[1:]:
            change: dict[str, int] = {}  # signed: what the level gains, per dimension
            for op in operations:
                if level in quota.get(op.queue).path():
                    sign = 1 if isinstance(op, Allocation) else -1
                    for dim, value in op.request.items():
                        change[dim] = change.get(dim, 0) + sign * value
            if any(value > 0 and self.deserved.room(level, dim) < -_EPSILON
                   for dim, value in change.items()):
                return False
        return True

    def _over_deserved(self, preemptor: JobInfo, request: Resources, dims: set[str]
                       ) -> Iterator[JobInfo]:
        quota = self.session.quota
        mine = quota.get(preemptor.account).path()
        # Judged per virtual cluster, and only the running jobs of those above what they
        # deserve are looked at: a few hundred running jobs share a few virtual clusters,
        # and thousands of waiting ones would otherwise be walked for every preemptor.
        for account, jobs in self._running_by_account().items():
            theirs = quota.get(account).path()
            shared = _shared(mine, theirs)
            if shared < min(len(mine), len(theirs)) and \
                    all(self.deserved.room(q, d) + _EPSILON >= request.get(d)
                        for q in mine[shared:] for d in dims) and \
                    all(any(self.deserved.room(q, d) < -_EPSILON for d in dims)
                        for q in theirs[shared:]):
                yield from (job for job in jobs if self.takeable(job, preemptor))

    def _running_by_account(self) -> dict[str, list[JobInfo]]:
        """The jobs running when this execution began, per virtual cluster charged: a job
        that starts later in it is fresh, never a victim (`takeable`)."""
        if self._by_account is None:
            self._by_account = {}
            for job in self.session.jobs.values():
                if job.running:
                    self._by_account.setdefault(job.account, []).append(job)
        return self._by_account

    def _above_deserved(self, preemptor: JobInfo, units: list[VictimUnit], dims: set[str]
                        ) -> tuple[list[VictimUnit], bool]:
        """The units, in order, as long as taking them leaves every level of the victim's
        line (below the one it shares with the preemptor) at or above what it deserves. A
        job whose next unit would cut into a deserved share gives nothing more. True with
        them if that cut any: its order cut what it is offered."""
        quota = self.session.quota
        mine = quota.get(preemptor.account).path()
        excess: dict[tuple[str, str], float] = {}
        stopped: set[str] = set()
        out: list[VictimUnit] = []
        cut = False
        for unit in units:
            if unit.job.name in stopped:
                continue
            theirs = quota.get(unit.job.account).path()
            levels = theirs[_shared(mine, theirs):]
            request = unit.request
            lefts = [(q, d, excess.setdefault((q.name, d), -self.deserved.room(q, d)))
                     for q in levels for d in dims]
            if any(request.get(d) > left + _EPSILON for _, d, left in lefts):
                stopped.add(unit.job.name)
                cut = True
                continue
            for q, d, _ in lefts:
                excess[(q.name, d)] -= request.get(d)
            out.append(unit)
        return out, cut


def _shared(mine: list[QueueState], theirs: list[QueueState]) -> int:
    """How many virtual clusters two paths from the root share (the root at least)."""
    count = 0
    for a, b in zip(mine, theirs, strict=False):
        if a is not b:
            break
        count += 1
    return count
