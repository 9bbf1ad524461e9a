"""The reclaim action (seed 001): a virtual cluster takes back, job by job, the guarantee it
lent.

Under the capacity plugin's `reclaim` and `elastic` modes a virtual cluster may run on the
unused guarantee of others (`shoal.scheduler.plugins.capacity`). When a job W of a lender
then cannot start, reclaim takes the borrowed resources back for it:

- W is *entitled* when W's missing tasks fit in the unused guarantee of its virtual cluster
  and in what the quota tree still owes each of its ancestors' subtrees (below the root):
  `reserved`, the larger of its own unused min and what its children are owed. Not the
  ancestors' own unused min: when team B borrows team A's guarantee inside department D,
  B's borrowing is D's usage, so D's min looks used while A is still owed its share of it
  (issue 16 found A's job then waited for ever). A job that would itself borrow reclaims
  nothing — unless its virtual cluster's `borrowWithinParent` is `LowerPriority` (below).
- W's virtual cluster's policy narrows the candidates (`shoal.scheduler.queue_preemption`):
  an entitled W takes from any borrower (`reclaimWithinParent: Any`, the default), only from
  those of lower priority (`LowerPriority`), or from none (`Never`); a W that would borrow
  takes, under `borrowWithinParent: LowerPriority`, from the borrowers below those of lower
  priority than its own and, with `maxPriorityThreshold`, at most that.
- Candidates are the running jobs of *borrowing* virtual clusters outside W's line (neither
  W's virtual cluster, nor an ancestor, nor a descendant of it): every virtual cluster on
  the candidate's path below the lowest one it shares with W is above its own guarantee in
  GPUs (or, for a job that needs none, in a dimension it needs). Those are the subtrees that
  compete with W's line for what their common ancestor was guaranteed, at whatever level the
  two lines meet. Rank does not matter across virtual clusters: a guarantee is owed whatever
  the borrower's priority (unless W's policy says otherwise, above).
- A borrower gives back only what it borrowed: units that would take any of those virtual
  clusters below its own guarantee in GPUs are not offered.
- W is usually held by room on its nodes alone; but when an ancestor's ceiling holds it
  (its `max`, or its `borrowingLimit` used up by a borrowing sibling), room freed on any
  node inside that ancestor counts (`quota_bound`): otherwise W, though owed, would wait for
  ever beside idle GPUs it may not use.
- What they give up, in which order, and all or nothing, is the preempt action's
  (`shoal.scheduler.actions.preempt`, `shoal.scheduler.victims`): elastic surplus one
  allowed size at a time, then whole jobs (single tasks of a job placed task by task);
  nothing of a non-preemptable job, nor for a job whose priority class never preempts;
  never a protected task; nothing for a job that fits without it; evicted only if W then
  starts. A W kept from reclaiming by its priority class or its policy, where the borrowers
  excluded would have let it evict, has its reason say so (`shoal.scheduler.held_back`).
  Under the `elastic` mode only elastic surplus ever borrows, so only elastic
  surplus is ever taken.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any, NamedTuple

from shoal.api.queue_policy import QueuePreemption
from shoal.api.resources import Resources
from shoal.core.quota import QueueState
from shoal.scheduler.actions.preempt import Preemption
from shoal.scheduler.gang_choice import GangNeed, least_request
from shoal.scheduler.held_back import reclaim_note, widest_reclaim
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.plugins.capacity import Capacity, ReclaimMode
from shoal.scheduler.preemptor_class import PreemptorClasses, preemptor_class
from shoal.scheduler.queue_preemption import policy_of, reclaim_victim, reclaims
from shoal.scheduler.registry import Arguments
from shoal.scheduler.session import Session
from shoal.scheduler.victim_index import QueueVictims
from shoal.scheduler.victims import VictimUnit, ordered


class ReclaimArguments(Arguments):
    pass


class Reclaim:
    name = "reclaim"

    def __init__(self, arguments: ReclaimArguments) -> None:
        del arguments
        self.classes = PreemptorClasses()
        """Verdicts per class of preemptor, kept from one cycle to the next
        (`shoal.scheduler.preemptor_class`)."""

    def execute(self, session: Session) -> None:
        capacity = next((p for p in session.hooks.plugins if isinstance(p, Capacity)), None)
        mode = ReclaimMode.NONE if capacity is None else capacity.reclaim_mode
        cycle: Reclamation
        if capacity is not None and capacity.deserved is not None:
            # `share: proportional`: what is above a deserved share is taken back, whether
            # guarantees are lent or not. Imported here: that module extends this one.
            from shoal.scheduler.actions.reclaim_proportional import ProportionalReclamation
            cycle = ProportionalReclamation(session, capacity.deserved,
                                            surplus_only=mode is ReclaimMode.ELASTIC,
                                            classes=self.classes)
        elif mode is ReclaimMode.NONE:
            return  # nothing is ever lent: nothing to take back
        else:
            cycle = Reclamation(session, surplus_only=mode is ReclaimMode.ELASTIC,
                                classes=self.classes)
        for job in sorted(session.candidates, key=session.job_order_key):
            if cycle.wants(job):
                cycle.preempt_for(job)


class Reclamation(Preemption):
    verb = "reclaimed"

    def __init__(self, session: Session, *, surplus_only: bool,
                 classes: PreemptorClasses | None = None) -> None:
        super().__init__(session, classes)
        self.surplus_only = surplus_only
        self._claims: dict[str, _Claim] = {}
        """Per preemptor, judged once per execution: what it holds does not change while
        it is looked at, and a preemptor is looked at once."""

    def why(self, preemptor: JobInfo) -> str:
        if self._claim(preemptor).entitled:
            return (f"job {preemptor.name!r}: virtual cluster {preemptor.account!r} takes "
                    "back its guarantee")
        return (f"job {preemptor.name!r} of virtual cluster {preemptor.account!r}, which "
                "borrows ahead of lower-priority borrowers (borrowWithinParent)")

    def class_key(self, preemptor: JobInfo) -> Hashable | None:
        """Its class, without its rank: reclaim does not rank a preemptor against its
        victims (`shoal.scheduler.preemptor_class`)."""
        return preemptor_class(self.session, preemptor, lambda job: ())

    def world_rank(self, job: JobInfo) -> tuple[Any, ...]:
        del job
        return ()  # reclaim ranks nobody against its preemptor

    def ordered(self, units: list[VictimUnit]) -> list[VictimUnit]:
        """`victims.ordered`, noting whose order keys it asked for (`look_at`)."""
        self._looked_at.extend(u.job.name for u in units)
        session = self.session
        return ordered(units, self.rank, session.job_order_key, session.now)

    def victim_index(self, preemptor: JobInfo, policy: QueuePreemption
                     ) -> QueueVictims | None:
        del preemptor, policy
        return None  # its victims are other virtual clusters' borrowers, not ranked ones

    def may_borrow(self, preemptor: JobInfo) -> bool:
        return True  # entitled: it asks only for what it is owed; else it borrows on purpose

    def quota_bound(self, preemptor: JobInfo, need: GangNeed) -> bool:
        """Entitled, it is owed the request: only room on its nodes stands in its way —
        unless an ancestor's ceiling does (`max`, or the `borrowingLimit` a borrowing
        sibling has used up): then what frees it is taken back inside that ancestor, on
        whatever node. A borrower (borrowWithinParent) may meet its own ceilings too."""
        if self._claim(preemptor).entitled:
            return self.session.quota.over_ceiling(preemptor.account,
                                                   least_request(preemptor, need))
        return super().quota_bound(preemptor, need)

    def _claim(self, preemptor: JobInfo) -> _Claim:
        """What the preemptor asks of the quota tree, and whether it is owed it. Any
        choice of its missing tasks may start it: it is owed at least the least any choice
        asks (`shoal.scheduler.gang_choice`). GPUs are what a GPU job lacks: a virtual
        cluster over its (often zero) CPU minimum but within its GPUs does not borrow
        anything such a job could use."""
        claim = self._claims.get(preemptor.name)
        if claim is None:
            request = least_request(preemptor, GangNeed.of(self.session, preemptor))
            dims = frozenset({"gpu"} if request.gpu else request.dimensions())
            claim = self._claims[preemptor.name] = _Claim(
                request, dims, self._entitled(preemptor, request, dims))
        return claim

    def widest(self, preemptor: JobInfo, policy: QueuePreemption) -> QueuePreemption:
        return widest_reclaim(policy, self._claim(preemptor).entitled)

    def policy_note(self, preemptor: JobInfo, policy: QueuePreemption) -> str | None:
        return reclaim_note(preemptor.queue, policy, self._claim(preemptor).entitled)

    def candidates(self, preemptor: JobInfo, policy: QueuePreemption | None = None
                   ) -> list[VictimUnit]:
        session = self.session
        request, dims, entitled = self._claim(preemptor)
        if policy is None:
            policy = policy_of(session, preemptor)
        if request.is_zero() or not reclaims(policy, entitled):
            return []  # its virtual cluster's policy keeps it from taking anything
        units: list[VictimUnit] = []
        for job in self._borrowers(preemptor, dims):
            if not reclaim_victim(policy, preemptor, job, entitled):
                continue
            for unit in self.units(job, preemptor):
                if self.surplus_only and unit.shrink_to is None:
                    break
                units.append(unit)
        return self._within_excess(preemptor, self.ordered(units))

    def _within_excess(self, preemptor: JobInfo, units: list[VictimUnit]
                       ) -> list[VictimUnit]:
        """The units, in order, as long as taking them keeps every virtual cluster on the
        borrower's path below the lowest one it shares with the preemptor at or above its
        own guarantee in GPUs: reclaim takes back what was borrowed, not what is owed to the
        borrower at any level. A job whose next unit would cut into one of those guarantees
        gives nothing more (a task that stands alone only itself: `VictimUnit.chain`)."""
        line = set(map(id, self.session.quota.get(preemptor.account).path()))
        excess: dict[str, int] = {}
        stopped: set[str] = set()
        out: list[VictimUnit] = []
        by_account: dict[str, list[QueueState]] = {}
        for unit in units:
            if unit.chain in stopped:
                continue
            levels = by_account.get(unit.job.account)
            if levels is None:
                levels = by_account[unit.job.account] = self._levels(unit.job.account, line)
            lefts = [excess.setdefault(q.name, q.usage.gpu - q.min.gpu) for q in levels]
            if any(unit.gpus > left for left in lefts):
                stopped.add(unit.chain)
                self._tried = True  # its order cut what it is offered
                continue
            for queue in levels:
                excess[queue.name] -= unit.gpus
            out.append(unit)
        return out

    def _levels(self, account: str, line: set[int]) -> list[QueueState]:
        """The virtual clusters on `account`'s path below the lowest one it shares with the
        preemptor's line (`line`: the ids of that line's virtual clusters)."""
        return [q for q in self.session.quota.get(account).path() if id(q) not in line]

    def _entitled(self, preemptor: JobInfo, request: Resources, dims: frozenset[str]
                  ) -> bool:
        """The request fits in its virtual cluster's unused guarantee and in what each
        ancestor's subtree is still owed (`QueueState.reserved`), below the root: it asks
        only for what it is owed, at every level."""
        queue = self.session.quota.get(preemptor.account)
        if queue.parent is None:
            return False
        if any(request.get(d) > queue.idle.get(d) for d in dims):
            return False
        return all(request.get(d) <= q.reserved.get(d)
                   for q in queue.path()[1:-1] for d in dims)

    def _borrowers(self, preemptor: JobInfo, dims: frozenset[str]) -> Iterator[JobInfo]:
        quota = self.session.quota
        own = quota.get(preemptor.account)
        line = set(map(id, own.path()))
        # Per virtual cluster, not per job: a few hundred running jobs share a few.
        borrowing: dict[str, bool] = {}
        for job in self.session.jobs.values():
            if not self.takeable(job, preemptor):
                continue
            verdict = borrowing.get(job.account)
            if verdict is None:
                queue = quota.get(job.account)
                levels = self._levels(job.account, line)
                verdict = borrowing[job.account] = not _related(queue, own) and bool(levels) \
                    and all(any(q.usage.get(d) > q.min.get(d) for d in dims) for q in levels)
            if verdict:
                yield job


class _Claim(NamedTuple):
    request: Resources
    dims: frozenset[str]
    entitled: bool
    """It fits in what its virtual cluster and every ancestor's subtree are owed: it would
    not borrow."""


def _related(queue: QueueState, other: QueueState) -> bool:
    """One is the other or an ancestor of it."""
    return queue in other.path() or other in queue.path()
