"""What a virtual cluster looks like from inside (seed 003's introspection): what it is
guaranteed, its ceiling, what its subtree uses, what it could still take now, its parent and
children, and how many of its jobs wait or run.

Read off a `SchedulerModel` and its quota tree; pure. Fixed-size nodes, once carved, live
outside the quota tree (`shoal.scheduler.reservations`): they are added back here, so that
what a VC is shown to be guaranteed, use and have available counts them. The live control
plane asks it in its loop thread (which owns the model), the API serves it, and
`shoal vc tree` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shoal.api.resources import ResourceLimit, Resources, total
from shoal.core.nodes import NodeState
from shoal.scheduler.model import SchedulerModel


@dataclass(frozen=True)
class VirtualNodeStatus:
    """One fixed-size virtual node: where it is carved and how full it is."""

    name: str
    node: str
    """The physical node it is carved from."""
    labels: dict[str, str]
    total: Resources
    used: Resources
    available: Resources

    @staticmethod
    def of(state: NodeState) -> VirtualNodeStatus:
        return VirtualNodeStatus(state.name, state.physical.name, dict(state.node.labels),
                                 state.allocatable, state.used(), state.free())


@dataclass(frozen=True)
class FlexibleNodeStatus:
    """A virtual cluster's flexible virtual node on one physical node: what its own tasks
    outside its fixed-size nodes hold there. There is at most one per physical node (seed
    003): the flexible part on a node is one slice, grown and shrunk with its tasks."""

    name: str
    """`<vc>/flexible/<node>`."""
    node: str
    used: Resources
    kept: Resources = field(default_factory=Resources)
    """Idle, kept for its next tasks (`flexibleIdleTimeout`); goes back when that is up."""


@dataclass(frozen=True)
class VirtualClusterStatus:
    name: str
    parent: str | None
    """None for the root: the physical cluster."""
    children: tuple[str, ...]
    guaranteed: Resources
    """Flexible minimum plus fixed-size nodes (the root: the cluster's capacity)."""
    ceiling: ResourceLimit
    """Flexible maximum plus fixed-size nodes; unlimited where the maximum is."""
    used: Resources
    """What the tasks of its whole subtree hold now."""
    available: Resources
    """What its subtree could take now: its headroom in the quota tree (the parent's idle
    resources it may borrow, less every guarantee still owed to others, within its max and
    its `min + borrowingLimit`). Guarantees are not counted as lent here, whatever the
    profile's reclaimMode: what may be lent is taken back."""
    borrowed: Resources
    """What it uses beyond its guarantee."""
    pending_jobs: int
    """Its own jobs (not its children's) with tasks still to place."""
    running_jobs: int
    running_tasks: int
    reservation: str = ""
    """For a VC with fixed-size nodes: "reserved", or why it is still queued."""
    virtual_nodes: tuple[VirtualNodeStatus, ...] = field(default=())
    flexible_nodes: tuple[FlexibleNodeStatus, ...] = field(default=())
    """Its own tasks' share of each physical node outside its fixed-size nodes."""
    waiting: Resources = field(default_factory=Resources)
    """What its own pending jobs' tasks still to place ask for."""


def virtual_cluster_status(model: SchedulerModel) -> dict[str, VirtualClusterStatus]:
    """Every virtual cluster of the model, the root and `default` included, by name."""
    pending: dict[str, int] = {}
    running_jobs: dict[str, int] = {}
    running_tasks: dict[str, int] = {}
    waiting: dict[str, Resources] = {}
    for info in model.jobs.values():
        if info.pending_count():
            pending[info.account] = pending.get(info.account, 0) + 1
            waiting[info.account] = waiting.get(info.account, Resources()) + total(
                info.job.group(group).resources.scale(len(indices))
                for group, indices in info.pending.items() if indices)
        if info.running:
            running_jobs[info.account] = running_jobs.get(info.account, 0) + 1
            running_tasks[info.account] = running_tasks.get(info.account, 0) + len(info.running)
    flexible: dict[str, dict[str, Resources]] = {}
    """Per VC, per physical node, what its own tasks hold there outside virtual nodes."""
    kept_nodes = {state.name for state in model.holds.kept.values()}
    for info in model.jobs.values():
        for task in info.running:
            state = model.node(task.node)
            if state.host is None or state.name in kept_nodes:
                here = flexible.setdefault(info.account, {})
                host = state.physical.name
                here[host] = here.get(host, Resources()) + \
                    info.job.group(task.ref.group).resources
    kept = {key: state.free() for key, state in model.holds.kept.items()}
    for vc, host in kept:
        flexible.setdefault(vc, {}).setdefault(host, Resources())
    tree = model.quota
    held = model.reservations
    on_virtual: dict[str, Resources] = {}
    """Per VC, what tasks hold on the virtual nodes of its subtree."""
    for vc, states in held.nodes.items():
        used = total(s.used() for s in states)
        for queue in tree.get(vc).path():
            on_virtual[queue.name] = on_virtual.get(queue.name, Resources()) + used
    carved = total(child.carved for child in tree.root.children)
    out: dict[str, VirtualClusterStatus] = {}
    for queue in tree:  # the root and `default` included
        name = queue.name
        mine = held.on(name)
        is_root = queue.parent is None
        guaranteed = queue.min + (carved if is_root else queue.carved)
        used = queue.usage + on_virtual.get(name, Resources())
        reservation = "" if name not in held.specs else \
            "reserved" if name in held.nodes else held.queued[name]
        out[name] = VirtualClusterStatus(
            name=name, parent=None if queue.parent is None else queue.parent.name,
            children=tuple(c.name for c in queue.children), guaranteed=guaranteed,
            ceiling=queue.max.raised_by(queue.carved), used=used,
            available=tree.headroom(name) + total(s.free() for s in mine),
            borrowed=used.saturating_sub(guaranteed),
            pending_jobs=pending.get(name, 0), running_jobs=running_jobs.get(name, 0),
            running_tasks=running_tasks.get(name, 0), reservation=reservation,
            virtual_nodes=tuple(VirtualNodeStatus.of(s) for s in mine),
            flexible_nodes=tuple(
                FlexibleNodeStatus(f"{name}/flexible/{node}", node, used,
                                   kept.get((name, node), Resources()))
                for node, used in sorted(flexible.get(name, {}).items())),
            waiting=waiting.get(name, Resources()))
    return out
