"""Brute-force oracles for the property tests: recomputed from the api objects alone, never
from the core's own working structures (`ClusterState`, `QuotaTree`), so that a bug in those
cannot hide itself."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from shoal.api import (
    DEFAULT_QUEUE,
    ROOT_QUEUE,
    Decisions,
    Job,
    Node,
    ResourceLimit,
    Resources,
    TaskRef,
    VirtualCluster,
)
from shoal.api.resources import CORE_DIMENSIONS, total

# ---- nodes --------------------------------------------------------------------------------


def holding(job: Job) -> int:
    return sum(1 for t in job.tasks if t.state.holds_resources)


def node_usage(nodes: Sequence[Node], jobs: Iterable[Job]) -> dict[str, Resources]:
    """Σ requests of the tasks holding resources, per node."""
    used: dict[str, list[Resources]] = {n.name: [] for n in nodes}
    for job in jobs:
        for task in job.tasks:
            if task.state.holds_resources:
                assert task.node is not None
                used[task.node].append(job.group(task.group).resources)
    return {name: total(rs) for name, rs in used.items()}


def node_free(nodes: Sequence[Node], jobs: Iterable[Job]) -> dict[str, Resources]:
    used = node_usage(nodes, jobs)
    return {n.name: n.allocatable_resources.saturating_sub(used[n.name]) for n in nodes}


def node_problems(nodes: Sequence[Node], jobs: Sequence[Job]) -> list[str]:
    """Every over-committed dimension and every bad GPU index assignment."""
    problems: list[str] = []
    used = node_usage(nodes, jobs)
    by_name = {n.name: n for n in nodes}
    for name, usage in used.items():
        alloc = by_name[name].allocatable_resources
        for dim in usage.shortfall(alloc):
            problems.append(f"node {name}: {dim} used {usage.get(dim)} > allocatable "
                            f"{alloc.get(dim)}")
    gpus: dict[str, dict[int, TaskRef]] = {n.name: {} for n in nodes}
    for job in jobs:
        for task in job.tasks:
            if not task.state.holds_resources:
                continue
            assert task.node is not None
            want = job.group(task.group).resources.gpu
            if len(task.gpus) != want:
                problems.append(f"task {task.ref} holds GPUs {task.gpus}, requested {want}")
            count = by_name[task.node].allocatable_resources.gpu
            for index in task.gpus:
                if not 0 <= index < count:
                    problems.append(f"task {task.ref}: GPU index {index} not below {count} "
                                    f"on node {task.node}")
                other = gpus[task.node].get(index)
                if other is not None:
                    problems.append(f"GPU {index} of node {task.node} given to both {other} "
                                    f"and {task.ref}")
                gpus[task.node][index] = task.ref
    return problems


def bind_problems(nodes: Sequence[Node], before: Sequence[Job], decisions: Decisions
                  ) -> list[str]:
    """Binds that are malformed: wrong resources or GPU count, unknown or unschedulable node,
    a node not matching the group's selector, a task bound twice or already holding a node."""
    problems: list[str] = []
    jobs = {j.name: j for j in before}
    by_name = {n.name: n for n in nodes}
    seen: set[TaskRef] = set()
    for bind in decisions.binds:
        job = jobs.get(bind.task.job)
        if job is None:
            problems.append(f"bind of unknown job {bind.task}")
            continue
        group = job.group(bind.task.group)
        if not 0 <= bind.task.index < group.replicas:
            problems.append(f"bind of {bind.task}: index out of range {group.replicas}")
        if bind.task in seen:
            problems.append(f"task {bind.task} bound twice in one cycle")
        seen.add(bind.task)
        if any(t.ref == bind.task and t.state.holds_resources for t in job.tasks):
            problems.append(f"task {bind.task} bound while it already holds a node")
        if bind.resources != group.resources:
            problems.append(f"bind of {bind.task} carries {bind.resources}, group requests "
                            f"{group.resources}")
        if len(bind.gpus) != group.resources.gpu or len(set(bind.gpus)) != len(bind.gpus):
            problems.append(f"bind of {bind.task} gets GPUs {bind.gpus}, requested "
                            f"{group.resources.gpu}")
        node = by_name.get(bind.node)
        if node is None or not node.schedulable:
            problems.append(f"bind of {bind.task} to unknown or unschedulable node {bind.node}")
            continue
        for key, value in group.node_selector.items():
            if node.labels.get(key) != value:
                problems.append(f"bind of {bind.task} to {bind.node}, which does not match "
                                f"nodeSelector {key}={value}")
    return problems


# ---- the quota tree, from its docstring ---------------------------------------------------


class QuotaOracle:
    """The quota tree's definitions recomputed from scratch, as `shoal.core.quota`'s
    docstring states them, per dimension:

        usage(q)    = Σ what was charged to q and its descendants
        reserved(q) = max(min(q) − usage(q), Σ reserved(k) over q's children k, 0)
        headroom(root) = capacity − usage(root)
        headroom(c)    = min(max(c) − usage(c), min(c) + borrowingLimit(c) − usage(c),
                             headroom(parent) − Σ reserved(siblings))

    with a negative headroom read as 0 and an unlimited dimension of max (and of
    borrowingLimit) as +∞. Lent (`lend=True`), the siblings' `unlent` is subtracted instead
    of their `reserved` (`shoal.core.quota_limits`):

        unlent(q) = max(reserved(q) − lendingLimit(q), Σ unlent(k) over q's children k, 0)

    an unlimited dimension of lendingLimit keeping nothing back."""

    def __init__(self, vcs: Sequence[VirtualCluster], capacity: Resources,
                 charged: Mapping[str, Resources]) -> None:
        self.capacity = capacity
        self.specs = {vc.name: vc for vc in vcs}
        self.specs.setdefault(DEFAULT_QUEUE, VirtualCluster(DEFAULT_QUEUE))
        self.parent = {name: vc.parent for name, vc in self.specs.items()}
        self.children: dict[str, list[str]] = {ROOT_QUEUE: []}
        for name in self.specs:
            self.children.setdefault(name, [])
        for name, parent in self.parent.items():
            self.children[parent].append(name)
        self.charged = dict(charged)
        self.usage = {name: self._subtree(name) for name in [ROOT_QUEUE, *self.specs]}
        dims = set(CORE_DIMENSIONS) | capacity.dimensions()
        for r in [*charged.values(), *(vc.min for vc in self.specs.values())]:
            dims |= r.dimensions()
        for vc in self.specs.values():
            dims |= {d for d, _ in (*vc.max.limits, *vc.borrowing_limit.limits,
                                    *vc.lending_limit.limits)}
        self.dims = sorted(dims)

    def _subtree(self, name: str) -> Resources:
        return total([self.charged.get(name, Resources()),
                      *(self._subtree(c) for c in self.children[name])])

    def minimum(self, name: str) -> Resources:
        return self.capacity if name == ROOT_QUEUE else self.specs[name].min

    def limit(self, name: str) -> ResourceLimit:
        return ResourceLimit() if name == ROOT_QUEUE else self.specs[name].max

    def reserved(self, name: str, dim: str) -> int:
        """The guarantee still owed to `name`'s subtree."""
        own = self.minimum(name).get(dim) - self.usage[name].get(dim)
        below = sum(self.reserved(k, dim) for k in self.children[name])
        return max(own, below, 0)

    def reserved_vector(self, name: str) -> dict[str, int]:
        return {d: self.reserved(name, d) for d in self.dims}

    def unlent(self, name: str, dim: str) -> int:
        """What of the guarantee owed to `name`'s subtree is never lent."""
        below = sum(self.unlent(k, dim) for k in self.children[name])
        lending = None if name == ROOT_QUEUE else self.specs[name].lending_limit.get(dim)
        own = 0 if lending is None else self.reserved(name, dim) - lending
        return max(own, below, 0)

    def unlent_vector(self, name: str) -> dict[str, int]:
        return {d: self.unlent(name, d) for d in self.dims}

    def borrowing_cap(self, name: str, dim: str) -> int | None:
        """min + borrowingLimit in `dim`; None when unlimited."""
        limit = self.specs[name].borrowing_limit.get(dim)
        return None if limit is None else self.specs[name].min.get(dim) + limit

    def path(self, name: str) -> list[str]:
        out = [name]
        while out[-1] != ROOT_QUEUE:
            out.append(self.parent[out[-1]])
        return out[::-1]

    def headroom(self, name: str, lend: bool = False) -> dict[str, int]:
        room = {d: max(0, self.capacity.get(d) - self.usage[ROOT_QUEUE].get(d))
                for d in self.dims}
        owed = self.unlent if lend else self.reserved
        for queue in self.path(name)[1:]:
            siblings = [s for s in self.children[self.parent[queue]] if s != queue]
            for d in self.dims:
                value = room[d] - sum(owed(s, d) for s in siblings)
                for ceiling in (self.limit(queue).get(d), self.borrowing_cap(queue, d)):
                    if ceiling is not None:
                        value = min(value, ceiling - self.usage[queue].get(d))
                room[d] = max(0, value)
        return room

    def admits(self, name: str, request: Resources, lend: bool = False) -> bool:
        """Whether a job placed in `name` itself fits: its headroom less what its
        children are owed (lent: keep unlent), as a job in a parent is outside every child."""
        room = self.headroom(name, lend)
        owed = self.unlent if lend else self.reserved
        return all(request.get(d) <= room.get(d, 0)
                   - sum(owed(k, d) for k in self.children[name])
                   for d in request.dimensions())


def queue_usage(jobs: Iterable[Job]) -> dict[str, Resources]:
    """What the tasks holding resources charge, per job queue (not per subtree)."""
    parts: dict[str, list[Resources]] = {}
    for job in jobs:
        for task in job.tasks:
            if task.state.holds_resources:
                parts.setdefault(job.queue, []).append(job.group(task.group).resources)
    return {q: total(rs) for q, rs in parts.items()}


def vc_max_problems(vcs: Sequence[VirtualCluster], jobs: Sequence[Job]) -> list[str]:
    """Every VC whose subtree usage is above its max in some limited dimension."""
    oracle = QuotaOracle(vcs, Resources(), queue_usage(jobs))
    return [f"virtual cluster {vc.name}: subtree uses {oracle.usage[vc.name]}, above its max "
            f"{vc.max} in {', '.join(vc.max.exceeded(oracle.usage[vc.name]))}"
            for vc in vcs if not vc.max.admits(oracle.usage[vc.name])]
