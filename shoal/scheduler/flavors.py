"""Which resource flavor a job is admitted on (issue 16, Kueue's flavor assignment).

A job in a virtual cluster with `flavors` runs on ONE of them. While it holds nothing, the
flavor is chosen again each time it could start (`choose`): the virtual cluster's flavors are
tried in its order of preference and the first that holds the tasks the job needs now is
taken —

- *fits*: within the virtual cluster's unused guarantee on that flavor, and the quota tree
  (ancestors, lending rules, the flavor's nodes' free capacity) allows it: taken;
- *borrows*: the quota tree allows it only above that guarantee: taken when
  `whenCanBorrow: Borrow` (Kueue's default), else the later flavors are tried first;
- *preempts*: it does not fit now but could with evictions (within every ceiling and the
  flavor's whole capacity, and something there could be evicted for it: `_evictable`):
  taken when `whenCanPreempt: Preempt`, else the later flavors are tried first (Kueue's
  default);
- otherwise the flavor cannot hold it.

When no flavor is taken outright, the best seen is (fits, then borrows, then preempts, the
earlier flavor first), and failing every one, the first flavor a job's node selector allows,
so its pending reason speaks of it. A flavor whose labels contradict a group's own
`nodeSelector` is never chosen; a job that every flavor contradicts waits, Unschedulable (it
is no candidate: placed on a flavor, its own selector would be lost).

A chosen flavor shows in the job the cycle sees (`JobInfo.job`, see `FlavorBook.flavored`):
each group's request gains the same amounts in the flavor's dimensions (those the virtual
cluster's quota for it covers; `shoal.api.flavors`), and its node selector gains the
flavor's node labels. So allocate, enqueue, backfill, preempt and reclaim all charge the
flavor's quota and place on its nodes without knowing about flavors. A job that runs keeps
its flavor; the model derives it from the nodes its tasks run on (`FlavorBook.running`),
so nothing about it is stored and a restarted scheduler finds the same one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from enum import IntEnum
from typing import TYPE_CHECKING

from shoal.api.decisions import PendingKind, PendingReason
from shoal.api.flavors import (
    FlavorQuota,
    ResourceFlavor,
    WhenCanBorrow,
    WhenCanPreempt,
    flavor_dimension,
    in_flavor,
    node_flavor_resources,
)
from shoal.api.objects import Job, Node, VirtualCluster
from shoal.api.resources import Resources
from shoal.scheduler.jobs import JobInfo

if TYPE_CHECKING:
    from shoal.scheduler.session import Session


class FlavorBook:
    """The model's flavors: the declared ones, the virtual clusters that have quota in them,
    and the job as submitted of every job the cycle sees flavored."""

    def __init__(self, flavors: Iterable[ResourceFlavor],
                 virtual_clusters: Iterable[VirtualCluster]) -> None:
        self.flavors = {f.name: f for f in flavors}
        self.queues = {vc.name: vc for vc in virtual_clusters if vc.flavors}
        self.submitted: dict[str, Job] = {}
        """Job name → the job without a flavor, for jobs shown with one."""

    def flavor(self, name: str) -> ResourceFlavor | None:
        return self.flavors.get(name)

    def nodes(self, nodes: Iterable[Node]) -> list[Node]:
        """The nodes as the core counts them: each offering its resources again in the
        dimensions of every flavor whose labels it carries."""
        if not self.flavors:
            return list(nodes)
        out: list[Node] = []
        for node in nodes:
            extra = node_flavor_resources(node.allocatable_resources, node.labels,
                                          self.flavors.values())
            if extra.is_zero():
                out.append(node)
                continue
            out.append(replace(
                node, capacity=node.capacity + extra,
                allocatable=None if node.allocatable is None else node.allocatable + extra))
        return out

    def flavored_queue(self, queue: str) -> VirtualCluster | None:
        return self.queues.get(queue)

    def submitted_job(self, info: JobInfo) -> Job:
        return self.submitted.get(info.name, info.job)

    def show(self, info: JobInfo, quota: FlavorQuota) -> None:
        """Show the job to the cycle as admitted on `quota`'s flavor."""
        job = self.submitted.setdefault(info.name, info.job)
        info.job = self.flavored(job, quota)
        info.note_change()

    def flavored(self, job: Job, quota: FlavorQuota) -> Job:
        labels = self._labels(quota.name)
        covered = quota.covered
        groups = tuple(replace(
            group, resources=group.resources + in_flavor(group.resources, quota.name, covered),
            node_selector={**group.node_selector, **labels}) for group in job.groups)
        return replace(job, groups=groups)

    def _labels(self, flavor: str) -> Mapping[str, str]:
        known = self.flavors.get(flavor)
        return known.node_labels if known is not None else {}

    def running(self, info: JobInfo, node_labels: Iterable[Mapping[str, str]]) -> None:
        """A job whose tasks already hold resources, on nodes with these labels: shown on
        the first of its virtual cluster's flavors (in its order) that those nodes belong
        to; left as it is when none does (its flavors changed under it)."""
        vc = self.queues.get(info.queue)
        if vc is None:
            return
        labels = list(node_labels)
        for quota in vc.flavors:
            flavor = self.flavors.get(quota.name)
            if flavor is not None and labels and all(flavor.matches(x) for x in labels):
                self.show(info, quota)
                return

    def forget(self, job: str) -> None:
        self.submitted.pop(job, None)


class Outcome(IntEnum):
    """How a flavor could take a job now, best first."""

    FITS = 0
    BORROWS = 1
    PREEMPTS = 2
    NEVER = 3


def choose(session: Session, info: JobInfo) -> None:
    """Show a job that holds nothing on the flavor it would be admitted on now (see the
    module's text); jobs outside flavored virtual clusters are left alone."""
    book = session.model.flavors
    vc = book.flavored_queue(info.queue)
    if vc is None or info.holding > 0 or info.stopping or not info.pending:
        return
    job = book.submitted_job(info)
    request = _needed(session, info, job)
    fungibility = vc.flavor_fungibility
    best: tuple[Outcome, FlavorQuota] | None = None
    allowed: FlavorQuota | None = None
    for quota in vc.flavors:
        flavor = book.flavor(quota.name)
        if flavor is not None and any(flavor.conflicts(g.node_selector) for g in job.groups):
            continue
        allowed = allowed or quota
        outcome = _outcome(session, info, quota, request)
        if outcome is Outcome.FITS \
                or (outcome is Outcome.BORROWS
                    and fungibility.when_can_borrow is WhenCanBorrow.BORROW) \
                or (outcome is Outcome.PREEMPTS
                    and fungibility.when_can_preempt is WhenCanPreempt.PREEMPT):
            book.show(info, quota)
            return
        if outcome is not Outcome.NEVER and (best is None or outcome < best[0]):
            best = (outcome, quota)
    chosen = best[1] if best is not None else allowed or vc.flavors[0]
    book.show(info, chosen)
    if allowed is None and info.reason is None:
        # Shown on a flavor, its groups' own selectors would be overridden by the flavor's
        # labels: it must not run at all, so it is no candidate in this cycle.
        info.reason = PendingReason(
            PendingKind.UNSCHEDULABLE, f"its nodeSelector contradicts every resource flavor "
            f"of virtual cluster {vc.name!r} ({', '.join(q.name for q in vc.flavors)})",
            queue=vc.name, predicate="flavor")


def choose_all(session: Session) -> None:
    """Choose for every waiting job that holds nothing (a cycle's start: enqueue, preempt
    and reclaim then see each job on its flavor)."""
    if not session.model.flavors.queues:
        return
    for info in list(session.model.waiting.values()):
        choose(session, info)


def _needed(session: Session, info: JobInfo, job: Job) -> Resources:
    """What the job asks to start: its first `minAvailable` pending tasks for a gang (its
    first pending task otherwise), as submitted."""
    count = max(1, session.min_tasks(info)) if session.is_gang(info) else 1
    out = Resources()
    for group, indices in info.first_pending(count, session.task_order()):
        out = out + job.group(group.name).resources.scale(len(indices))
    return out


def _nodes_hold(session: Session, info: JobInfo, quota: FlavorQuota) -> bool:
    """Whether the flavor's nodes have the room, group by group, for the tasks the job needs
    now: the quota tree counts capacity in aggregate, and work outside any flavor may fill
    a flavor's nodes without being charged to it."""
    job = session.model.flavors.flavored(session.model.flavors.submitted_job(info), quota)
    count = max(1, session.min_tasks(info)) if session.is_gang(info) else 1
    excluded = session.excluded_nodes
    for group, indices in info.first_pending(count, session.task_order()):
        flavored = job.group(group.name)
        request = flavored.resources
        if request.is_zero():
            continue
        room = 0
        for state in session.pool_for(flavored).nodes:
            if state.ordinal not in excluded:
                room += state.how_many(request)
                if room >= len(indices):
                    break
        if room < len(indices):
            return False
    return True


def _outcome(session: Session, info: JobInfo, quota: FlavorQuota, request: Resources
             ) -> Outcome:
    own = in_flavor(request, quota.name, quota.covered)
    asked = request + own
    if session.allocatable(info.account, asked) is None and _nodes_hold(session, info, quota):
        state = session.quota.get(info.queue)
        within = own.fits(state.min.saturating_sub(state.usage))
        return Outcome.FITS if within else Outcome.BORROWS
    if session.admissible(info.account, asked) is None and _evictable(session, info, quota, own):
        return Outcome.PREEMPTS
    return Outcome.NEVER


def _evictable(session: Session, info: JobInfo, quota: FlavorQuota, own: Resources) -> bool:
    """Whether evictions could make room on the flavor: the virtual cluster is below its
    guarantee there (reclaim may take it back), or a job of lower priority runs on it
    (preempt may). A cheap necessary condition, not a dry run of those actions: without it
    `whenCanPreempt: Preempt` would keep a job waiting on a flavor where nothing can be
    evicted for it while a later one has room (Kueue's fix #1366)."""
    state = session.quota.get(info.queue)
    if any(state.usage.get(dim) < state.min.get(dim) for dim, _ in own.items()):
        return True
    prefix = flavor_dimension(quota.name, "")
    for other in session.jobs.values():
        if other.holding and other.priority < info.priority and any(
                dim.startswith(prefix) for group in other.job.groups
                for dim, _ in group.resources.extras):
            return True
    return False
