"""Preemptors by class (issue 18): waiting jobs that put the preempt and reclaim actions the
same question get the same answer, so within one execution of an action the question is
asked once per class until the answer could change.

Under backlog thousands of jobs wait, most of a few shapes (Philly: 1, 2, 4, 8 GPUs per task
in 15 virtual clusters), and each one used to look for victims among all running jobs. A
job's *class* is everything about it that its search for victims reads: its virtual cluster
and the one it is charged to, its user (per-user quotas), its priority and priority class,
its rank as the action ranks it, its gang minimum, each pending task group's request,
selector, pool and own minima and which of its tasks wait, and its elastic surplus. Two
jobs of one class that meet the same cluster, quota tree and victims get the same verdict.

A verdict is remembered only when the search evicted and placed nothing, and then the next
job of the class is skipped, with the notes the first one got
(`shoal.scheduler.held_back`) replayed and the quota tree's lending left as the search left
it. It holds

- within the execution, until the action commits anything (`Generation`: the session's
  binds, evictions and resizes so far);
- across cycles, for a search made before the action committed anything in its cycle
  that failed before any trial placement (what it was offered
  could not cover it, or nothing of it was on its node pools: order plays no part), until
  the *world* it was given in changes (`world`): the model and quota tree, the nodes'
  capacity (the release epoch, which moves whenever capacity comes back; cordons, carved
  virtual nodes, the CPU kept per idle GPU), every running job's rank, charged virtual
  cluster and tasks (how many, how many stopping, how many still protected) — which with
  the release epoch say what each node has free —, the jobs placed or evicted in this cycle,
  the closed virtual clusters, and what the action adds (the deserved shares of
  proportional reclaim). A search whose offer its order cut (reclaim takes a borrower's
  units in order while they stay within what it borrowed) does not last. Time enters
  through the ranks (las's thresholds, crossed as running jobs attain service) and
  protection: a world where either moved is another one.

Whatever the action cannot vouch for goes uncached: a job holding or having ended tasks
(what it holds enters its gang count and could be a victim of itself), a job kept off a
starving job's reservation (those nodes are judged when its search first needs them,
`shoal.scheduler.aging`), a job with a job-scoped virtual cluster, profiles with
victim-selection or task-order plugins (they read the job itself), and virtual clusters
whose `withinQueue` lets a job evict newer jobs of its own rank (the answer then depends on
its submission time).

Plugins compute some order keys once per cycle, when first asked (`las`'s attained
service, `fairshare`'s score): a skipped search asks for the keys the search that gave the
verdict asked for (`Verdict.looked_at`, `Verdict.listed`), so every key is computed when
it would have been.

A job's class itself is kept from one cycle to the next while its job class stands
(`PreemptorClasses.class_of`): working it out walks its task groups, for every waiting job
of every cycle.

Pure: the verdicts that last are kept by the action's instance, which drivers keep from
one cycle to the next (`run_cycle` makes a new one each time, so nothing lasts there).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from shoal.api.lifecycle import TaskState
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.model import user_of
from shoal.scheduler.session import Session

Generation = tuple[int, int, int]
"""How many binds, evictions and resizes the session has decided: it moves with every
statement an action commits."""


def generation(session: Session) -> Generation:
    decisions = session.decisions
    return (len(decisions.binds), len(decisions.evictions), len(decisions.resizes))


@dataclass(frozen=True, slots=True)
class Verdict:
    """A search that evicted and placed nothing: what it left behind."""

    notes: tuple[str, ...]
    """What it noted on the job's reason (`Session.hold_back`), in order."""
    lending: bool
    """The quota tree's lending as the search left it (`Preempt.execute` restores it)."""
    looked_at: tuple[str, ...] = ()
    """The running jobs whose order keys it asked for: plugins compute a job's key once
    per cycle (`las`, `fairshare`), when first asked, so a verdict that lasts asks for
    them in its place, as the search would have, and every later key stays the same."""
    listed: bool = False
    """It listed every running job of the action (`Preemption.running`): so does a
    verdict that lasts, in its place."""


@dataclass(slots=True)
class ShortVerdict:
    """A search turned down before any trial because its victims cannot cover it (the
    gains test: GPUs free on its pools plus those the units ranked behind it free there,
    fewer than it needs), or because nothing at all ranked behind it while what is free
    did not take it: with the numbers it read, so that it can be checked again without
    listing its victims (`Preemption.short_answer`)."""

    world: Hashable
    """What else it read (`short_world`): the model, plugins, quota tree, node layout."""
    queue: str
    stamp: int
    """Its virtual cluster's stamp in the running table then (`RunningTable.queue_stamp`),
    moved on each time it is found to hold (nothing came behind it meanwhile)."""
    rank: tuple[Any, ...]
    pools: Hashable
    nodes: frozenset[int]
    demand: int
    """The fewest GPUs any choice of its missing tasks needs."""
    behind: int
    """At most what the units ranked behind it free on its pools (jobs placed in its
    cycle, not yet offered then, counted in)."""
    units: bool
    """Whether any unit ranked behind it (or a job placed in its cycle would)."""
    lending: bool
    """The quota tree's lending it left (`Preemption.may_borrow`)."""
    unfit: int | None = None
    """With nothing ranked behind it and enough GPUs free: the release epoch
    (`ClusterState.release_epoch`) at which the count node by node said its missing tasks
    do not fit on what is free (`VictimTrials._could_fit`). While no capacity came back
    since, free capacity only shrank, and the count says no again."""


def short_world(session: Session) -> Hashable:
    """What a `ShortVerdict` read besides free GPUs and the running table: the model (the
    virtual clusters' policies), plugins, quota tree, node layout and what keeps jobs off
    nodes. Not the jobs evicted in its cycle: what they no longer offer, the table sees
    when it files them again."""
    cluster = session.cluster
    return (session.model, session.hooks, session.quota, cluster.layout,
            len(cluster.states), cluster.cpu_reserve, frozenset(session.closed),
            frozenset(session.excluded_nodes))


def world(session: Session, rank: Callable[[JobInfo], tuple[Any, ...]],
          placed: Iterable[str], evicted: Iterable[str], extra: Hashable = None,
          kept: Hashable = None) -> Hashable:
    """What a failed search that tried no placement read besides its preemptor (the
    module's text), in O(nodes + running tasks). A running job counts by how many tasks it
    runs, not which: in one model, tasks stop only by giving capacity back, which moves
    the release epoch. `kept`: what stands for the running jobs, where a kept table says
    when any of them moved (`shoal.scheduler.running_table`); then they are not walked."""
    now = session.now
    running: list[Hashable] = []
    releasing = TaskState.RELEASING
    for job in session.jobs.values() if kept is None else ():
        tasks = job.running
        if not tasks:
            continue
        protect = job.job.protect_for
        if len(tasks) == 1:  # most jobs: no generators
            task = tasks[0]
            stopping = int(task.state is releasing)
            guarded = protect > 0 and int(task.started is not None
                                          and now - task.started < protect)
        else:
            stopping = sum(t.state is releasing for t in tasks)
            guarded = protect > 0 and sum(t.started is not None and now - t.started < protect
                                          for t in tasks)
        running.append((job.job.name, job.account, rank(job), len(tasks), stopping, guarded))
    cluster = session.cluster
    # The model and quota tree themselves, not their ids: a driver that rebuilds its model
    # must never meet a new one at an old one's address.
    return (session.model, session.quota, cluster.release_epoch,
            len(cluster.states), frozenset(cluster.cordoned), cluster.cpu_reserve,
            tuple((name, s.allocatable) for name, s in cluster.virtual.items()),
            tuple(running) if kept is None else kept,
            frozenset(placed), frozenset(evicted), frozenset(session.preempted),
            frozenset(session.closed), frozenset(session.excluded_nodes), extra)


class ClassKey:
    """A preemptor class as a dictionary key: its hash worked out once. A class is a
    nested tuple (task groups, requests, selectors, rank), and the walk and the verdicts
    look it up several times per class per cycle; a tuple hashes all of it each time."""

    __slots__ = ("_hash", "shape", "value")

    def __init__(self, value: tuple[Any, ...], shape: Hashable = None) -> None:
        self.value = value
        self._hash = hash(value)
        self.shape = shape
        """What of the class a count node by node on what is free reads (`class_shape`):
        classes of one shape in other virtual clusters or ranks get the same count."""

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, ClassKey) and self._hash == other._hash
                                 and self.value == other.value)

    def __repr__(self) -> str:
        return f"ClassKey({self.value!r})"


def preemptor_class(session: Session, job: JobInfo,
                    rank: Callable[[JobInfo], tuple[Any, ...]]) -> ClassKey | None:
    """The job's class for a search that ranks it by `rank` (asked only for a job that
    has a class), or None when the search reads something of the job the class does not
    say (the module's text)."""
    if job.running or job.holding or job.ended or job.stopping \
            or job.job.virtual_cluster is not None or job.job.sub_clusters \
            or job.name in session.behind_reservation:
        return None
    hooks = session.hooks
    if hooks.victim_selections or hooks.task_orders:
        return None
    groups = tuple(
        (group.name, group.replicas, group.resources,
         tuple(sorted(group.node_selector.items())), group.min_available, group.min_count,
         session.pool_key(group), tuple(job.pending[group.name]))
        for group in job.groups_with_pending())
    spec = job.job
    shape = (spec.scheduler_name, spec.min_available, spec.min_resources, spec.elastic,
             job.gang_minimum, job.floors, groups, tuple(job.surplus))
    value = (job.queue, job.account, user_of(job), job.priority, spec.priority_class,
             *shape[:6], rank(job), *shape[6:])
    return ClassKey(value, ClassKey(shape))


class PreemptorClasses:
    """Verdicts per class: this execution's, and those that last across cycles."""

    def __init__(self) -> None:
        self._now: dict[Hashable, tuple[Generation, Verdict]] = {}
        self._world: Hashable = None
        self._lasting: dict[Hashable, Verdict] = {}
        """Verdicts given in `_world`: only the latest world's are kept."""
        self._classes: dict[JobInfo, tuple[tuple[Any, ...], ClassKey | None]] = {}
        """Per job, its class and what it was worked out from (`class_of`)."""
        self._keys: dict[ClassKey, ClassKey] = {}
        """Each class worked out by `class_of`, once."""
        self._shapes: dict[Hashable, Hashable] = {}
        """Each class's shape (`ClassKey.shape`), once: the classes of one shape share it."""
        self.skipped = 0
        """Searches answered by a verdict (for benchmarks)."""
        self._short: dict[Hashable, ShortVerdict] = {}
        """Per class, its last search turned down short (`ShortVerdict`): kept across
        worlds, checked against the numbers it read."""
        self.short_answers = 0
        """Searches answered by a `ShortVerdict` (for benchmarks and tests)."""
        self.world_seen: Hashable = None
        """The last `short_world` worked out, kept so that an equal one is the same object
        (`ShortSearches._short_world`)."""

    def class_of(self, session: Session, job: JobInfo,
                 rank: Callable[[JobInfo], tuple[Any, ...]]) -> ClassKey | None:
        """`preemptor_class`, kept per job from one cycle to the next while its job class
        stands (`JobInfo.klass`, forgotten whenever what the job waits for or holds
        changes: the same object means the same pending tasks, nothing held, nothing ended)
        under the same plugins and spec, and its rank, priority, virtual clusters and
        minimums are the same."""
        known = job.klass
        if known is None or known[0] is not session.hooks or known[1] is not job.job \
                or job.name in session.behind_reservation:
            return preemptor_class(session, job, rank)
        stamp = (known, rank(job), job.priority, job.queue, job.account, job.gang_minimum,
                 job.floors)
        kept = self._classes.get(job)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        value = preemptor_class(session, job, rank)
        if value is not None:
            # One object per class: lookups of an equal key made elsewhere would compare
            # the nested tuples themselves.
            if len(self._keys) > 4096 and value not in self._keys:
                self._keys, self._shapes = {}, {}
            known_key = self._keys.get(value)
            if known_key is None:
                value.shape = self._shapes.setdefault(value.shape, value.shape)
                known_key = self._keys[value] = value
            value = known_key
        self._classes[job] = (stamp, value)
        return value

    def prune(self, live: dict[str, JobInfo]) -> None:
        """Forget jobs no longer live, once they outnumber the live ones (amortised O(1))."""
        if len(self._classes) > 2 * len(live) + 1024:
            alive = set(live.values())
            self._classes = {job: k for job, k in self._classes.items() if job in alive}

    def begin(self) -> None:
        """An execution of the action begins: the last one's own verdicts are void."""
        self._now = {}

    def enter(self, world: Hashable) -> None:
        """The world lasting verdicts are now looked up and given in."""
        if world != self._world:
            self._world, self._lasting = world, {}

    def verdict(self, key: Hashable, now: Generation, lasting: bool) -> Verdict | None:
        """The class's verdict: this execution's if nothing was committed since it was
        given, else (`lasting`: still in the world last entered) one that lasts."""
        found = self._now.get(key)
        verdict = found[1] if found is not None and found[0] == now else \
            self._lasting.get(key) if lasting else None
        if verdict is not None:
            self.skipped += 1
        return verdict

    @property
    def lasting_verdicts(self) -> dict[Hashable, Verdict]:
        """The verdicts that last in the world last entered, per class (a walk answering
        classes up front reads and adds to them: `ShortSearches.known_answers`)."""
        return self._lasting

    @property
    def short_verdicts(self) -> dict[Hashable, ShortVerdict]:
        return self._short

    @property
    def now(self) -> dict[Hashable, tuple[Generation, Verdict]]:
        """This execution's verdicts, per class, with the generation they were given at."""
        return self._now

    def short(self, key: Hashable) -> ShortVerdict | None:
        return self._short.get(key)

    def remember_short(self, key: Hashable, verdict: ShortVerdict) -> None:
        if len(self._short) > 4096 and key not in self._short:
            self._short = {}  # classes come and go with the waiting jobs' shapes
        self._short[key] = verdict

    def forget_short(self, key: Hashable) -> None:
        self._short.pop(key, None)

    def remember(self, key: Hashable, now: Generation, verdict: Verdict, lasting: bool
                 ) -> None:
        """`lasting`: it holds in the world last entered, across cycles."""
        self._now[key] = (now, verdict)
        if lasting:
            self._lasting[key] = verdict
