"""Job classes: waiting jobs that ask for the same thing in the same way, so that a cycle
that finds one of them does not fit knows the others do not either.

A job is *classed* while it is fresh — nothing of it holds resources, has ended, is being
stopped or is held back — and while everything a placement reads of it is in its class:
its virtual cluster, gang semantics and minimums, its elastic group and its task groups as
the profile's predicates see them (`Session.pool_key`). Jobs whose placement reads more —
per-user quotas, their virtual cluster's own virtual nodes or kept flexible parts, resource
flavors, partial admission — are not classed and are always tried.

`ClassVerdicts` keeps the enqueue action's verdict per class across cycles: whether a job
could ever start on the idle cluster reads only the nodes, the quota tree's shape and the
profile, so a verdict stands until nodes are cordoned, brought back or carved, or virtual
clusters come, go or change capacity (the `layout` counters).

`Misfits` remembers, within one cycle, the reason a class was last turned down with, and
the state it was turned down in: the cycle's commits, the nodes placements keep off
(`Session.scope`), the fit memo's version and the cluster's release epoch. While none of
those moved, trying another job of the class would read the same state and give the same
answer, reason included — so it is not tried
(`shoal.scheduler.actions.allocate.allocate_job`).

A reason also lasts from one cycle to the next (`ClassVerdicts.kept`) while the *world* it
was found in stays (`Misfits.world`): the nodes' free capacity (capacity taken for good,
`ClusterState.taken`, and given back, the release epoch), their layout and CPU kept per
idle GPU, the quota tree's layout and lending, the model's fit memo, the profile, the class
numbering and the closed virtual clusters — with placements kept off no node. A class's
trial reads nothing else: its jobs hold nothing, and a virtual cluster whose placements read
more (users, virtual nodes, kept parts, flavors) has no classes (`classable`). Under backlog
most cycles come from arrivals and the clock, with no capacity freed since the last one:
the classes turned down then are not tried again.

Under backlog, though, a job ends and another starts in most cycles, so the world moves and
each class turned down is tried again only to be turned down by the quota tree, most often
because the cluster as a whole has too little free. A class's trial asks the quota tree
first, and for a fresh job of the class it asks exactly the same (`Probe`: the gang's
`need`, its request and whether it is elastic surplus), so the first trial that reaches that
question notes it, and later ones ask it directly (`allocate.quota_refusal`): a refusal is
the trial's, reason included, without the trial's set-up; then its node pool and fit bound
(`shoal.scheduler.fitting.refusal`). A session opened unworded (`Session.worded`: the
simulator) does not even ask the quota tree when the cluster as a whole, read from its
root, is short of the request; and its reasons carry their kind, resource and predicate,
which decisions read, but no message (`UNWORDED`). An unworded reason is kept across cycles
like a worded one, but only an unworded session takes it: a worded one tries the class.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shoal.api.decisions import PendingReason
from shoal.api.objects import TaskGroup
from shoal.api.resources import Resources
from shoal.core.nodes import ClusterState, FitMemo
from shoal.core.quota import QuotaTree
from shoal.scheduler.jobs import JobInfo

if TYPE_CHECKING:
    from shoal.scheduler.session import Hooks, Session

UNWORDED = "(not worded: the cycle was decided without reasons)"
"""The message of a reason an unworded session did not word (`Session.worded`)."""


def job_class(session: Session, job: JobInfo) -> int | None:
    """The job's class (module docstring) as a small number, or None when it is not
    classed. Classes are numbered per model (`ClassVerdicts.number`): comparing and hashing
    a number is what every cycle does per job, not a nested tuple. The class is worked out
    once and kept on the job (`JobInfo.klass`) until what it waits for or holds
    changes, or its spec, virtual cluster or the profile's plugins do."""
    account = job.account
    if not classable(session, account):
        return None
    hooks = session.hooks
    spec = job.job
    known = job.klass
    verdicts = session.model.class_verdicts
    if known is not None and known[0] is hooks and known[1] is spec and known[2] == account \
            and known[4] == verdicts.generation:
        number: int = known[3]
        return number
    if job.holding or job.ended or job.stopping or spec.min_resources is not None:
        return None
    if job.pending_count() != spec.replicas - spec.elastic_surplus or job.admits_partially():
        return None
    key = (account, spec.gang, job.gang_minimum, job.floors, spec.elastic,
           tuple((g.name, g.replicas, g.resources, g.min_available, g.min_count,
                  session.pool_key(g)) for g in spec.groups))
    number = verdicts.number(key)
    job.klass = (hooks, spec, account, number, verdicts.generation)
    return number


def classable(session: Session, account: str) -> bool:
    """Whether the jobs charged to the virtual cluster may be classed in this cycle."""
    known = session.classable.get(account)
    if known is None:
        # Per virtual cluster and cycle: its virtual nodes and kept parts do not change
        # within a cycle (they are carved, and kept parts expire, as it starts).
        model = session.model
        known = session.classable[account] = not (
            model.users or model.flavors.queues or not model.incremental
            or model.reservations.on(account) or model.holds.on(account))
    return known


def all_classable(session: Session) -> bool:
    """Whether every virtual cluster's jobs may be classed in this cycle (`classable` for
    each, asked of the model once): no users, flavors, virtual nodes or kept parts at all."""
    model = session.model
    return not (model.users or model.flavors.queues or not model.incremental
                or model.reservations.nodes or model.holds.kept)


@dataclass(frozen=True, slots=True)
class _Misfit:
    state: tuple[int, int, int, int]
    reason: PendingReason


@dataclass(frozen=True, slots=True)
class Probe:
    """What a fresh job of a class asks first when it is tried: the quota tree, for its
    gang's `need` tasks of one task group (`request` in all), then the group's node pool
    and fit bound (`shoal.scheduler.fitting.refusal`)."""

    hooks: object
    """The profile's plugins it was found under: it holds under those only."""
    need: int
    group: TaskGroup
    count: int
    """Replicas of `group` asked for (`need`, as `place_replicas` counts them)."""
    request: Resources
    """`count` × the group's request."""
    surplus: bool
    """Whether all of them are elastic surplus (they may borrow where others may not)."""
    pool_key: Hashable
    """The group's node pool (`Session.pool_key`, which reads only the group and the
    profile's predicates): looked up, not worked out again, on every trial."""
    account: str
    """The virtual cluster its jobs are charged to (every job of a class is)."""
    short: dict[str, PendingReason] = field(default_factory=dict, compare=False)
    """Per dimension the whole cluster is short of, the unworded reason it is refused with
    (`allocate.class_refusal`): one object per class and dimension, not one per trial."""


World = tuple[object, ...]
"""What a class's trial reads besides the class, comparable across cycles (`Misfits.world`)."""


class Misfits:
    """Per cycle: the last reason each job class was turned down with, per fit memo; and
    those that last between cycles (module docstring)."""

    keeps_room_answers = True
    """Whether `answers` keeps what `short` says for a later cycle in the same world (a
    test knob: off, each cycle asks `short` again)."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._known: dict[tuple[int, int, int, bool], _Misfit] = {}

    def state(self, memo: FitMemo) -> tuple[int, int, int, int]:
        """What a reason noted under `memo` reads: while it stays, the reason stands."""
        session = self._session
        return (session.commits, session.scope, memo.version, session.cluster.release_epoch)

    def world(self, memo: FitMemo) -> World | None:
        """What a trial under `memo` reads besides its class, in a form that outlives the
        cycle; None where a reason found now may not outlive it (another memo than the
        model's, or placements kept off some nodes)."""
        session = self._session
        if session.scope or session.excluded_nodes or memo is not session.model.fit_memo:
            return None
        cluster, quota = session.cluster, session.quota
        return (session.hooks, session.model.class_verdicts.generation,
                cluster.release_epoch, cluster.taken, cluster.layout, cluster.cpu_reserve,
                quota.layout, quota.lending, memo.version,
                tuple(session.closed) if session.closed else None)

    def known(self, memo: FitMemo, klass: int, best_effort: bool
              ) -> PendingReason | None:
        """Why the class was turned down, if nothing it reads moved since."""
        verdicts = self._session.model.class_verdicts
        misfit = self._known.get((id(memo), verdicts.generation, klass, best_effort))
        if misfit is not None and misfit.state == self.state(memo):
            return misfit.reason
        kept = verdicts.kept.get((klass, best_effort))
        if kept is None or kept[0] != self.world(memo):
            return None
        reason = kept[1]
        # Left unworded by an unworded session: a worded one words it by trying the class.
        return None if reason.message is UNWORDED and self._session.worded else reason

    def standing(self, memo: FitMemo) -> Callable[[int], PendingReason | None]:
        """`known` (not best-effort) for many classes at one moment: what every answer
        reads is read once, and each class costs two look-ups."""
        return self._standing(memo, self.world(memo))

    def _standing(self, memo: FitMemo, world: World | None
                  ) -> Callable[[int], PendingReason | None]:
        """`standing` in `world` (`world(memo)`, worked out by the caller)."""
        session = self._session
        verdicts = session.model.class_verdicts
        state = self.state(memo)
        in_cycle, kept, worded = self._known, verdicts.kept, session.worded
        memo_id, generation = id(memo), verdicts.generation

        def reason(klass: int) -> PendingReason | None:
            misfit = in_cycle.get((memo_id, generation, klass, False))
            if misfit is not None and misfit.state == state:
                return misfit.reason
            found = kept.get((klass, False))
            if found is None or found[0] != world:
                return None
            known = found[1]
            return None if known.message is UNWORDED and worded else known
        return reason

    def answers(self, memo: FitMemo, short: Callable[[int], PendingReason | None] | None
                ) -> Callable[[int], PendingReason | None]:
        """`standing`, then `short` for a class that has no standing answer: what the walk
        would be told on reaching the class now (`shoal.scheduler.actions.class_walk`).
        An answer `short` gives is kept for the class in this world, as `note` keeps a
        trial's: `short` gives what the trial's first question would (the cluster's room,
        the node pool's bound), which reads nothing the world does not hold. A later cycle
        in the same world (one woken by arrivals alone) then finds it standing, one look-up
        and one comparison, not the room and the pool asked again."""
        world = self.world(memo)
        standing = self._standing(memo, world)
        if short is None:
            return standing
        if world is None or not self.keeps_room_answers:
            return lambda klass: standing(klass) or short(klass)
        kept = self._session.model.class_verdicts.kept

        def answer(klass: int) -> PendingReason | None:
            found = standing(klass)
            if found is None:
                found = short(klass)
                if found is not None:
                    kept[(klass, False)] = (world, found)
            return found
        return answer

    def note(self, memo: FitMemo, klass: int, best_effort: bool,
             reason: PendingReason) -> None:
        verdicts = self._session.model.class_verdicts
        self._known[(id(memo), verdicts.generation, klass, best_effort)] = _Misfit(
            self.state(memo), reason)
        world = self.world(memo)
        if world is not None:
            verdicts.kept[(klass, best_effort)] = (world, reason)


class ClassVerdicts:
    """The enqueue action's verdicts per job class, kept between cycles while the cluster's
    and the quota tree's layout and the profile stay (module docstring)."""

    def __init__(self, cluster: ClusterState, quota: QuotaTree) -> None:
        self._cluster = cluster
        self._quota = quota
        self._stamp: tuple[object, int, int] | None = None
        self._verdicts: dict[int, PendingReason | None] = {}
        self._numbers: dict[tuple[Any, ...], int] = {}
        self.kept: dict[tuple[int, bool], tuple[World, PendingReason]] = {}
        """Per (class, best-effort part), the last reason it was turned down with and the
        world it was found in: it stands in any later cycle in the same world (`Misfits`)."""
        self.probes: dict[int, Probe] = {}
        """Per class, what its trial asks the quota tree first (`Probe`)."""
        self.generation = 0
        """Moves when the numbers start over (with the verdicts): a number kept on a job
        from an older generation is stale. Starting over keeps the table from growing with
        every job-scoped virtual cluster a long-lived server ever saw."""

    def number(self, key: tuple[Any, ...]) -> int:
        """The class's number in this model (a new one for a class not seen before)."""
        return self._numbers.setdefault(key, len(self._numbers))

    def under(self, hooks: Hooks) -> dict[int, PendingReason | None]:
        """The verdicts that still stand under `hooks` (emptied when one may not)."""
        stamp = (hooks, self._cluster.layout, self._quota.layout)
        if self._stamp is None or self._stamp[0] is not hooks or self._stamp[1:] != stamp[1:]:
            self._stamp = stamp
            self._verdicts = {}
            self._numbers = {}
            self.kept = {}
            self.probes = {}
            self.generation += 1
        return self._verdicts
