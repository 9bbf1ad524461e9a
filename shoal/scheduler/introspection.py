"""What a virtual cluster looks like from inside (seed 003's introspection): what it is
guaranteed, its ceiling, what its subtree uses, what it could still take now, its parent and
children, and how many of its jobs wait or run.

Read off a `SchedulerModel` and its quota tree; pure. The live control plane asks it in its
loop thread (which owns the model), the API serves it, and `shoal vc tree` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass

from shoal.api.resources import ResourceLimit, Resources
from shoal.scheduler.model import SchedulerModel


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
    resources it may borrow, less every guarantee still owed to others)."""
    borrowed: Resources
    """What it uses beyond its guarantee."""
    pending_jobs: int
    """Its own jobs (not its children's) with tasks still to place."""
    running_jobs: int
    running_tasks: int


def virtual_cluster_status(model: SchedulerModel) -> dict[str, VirtualClusterStatus]:
    """Every virtual cluster of the model, the root and `default` included, by name."""
    pending: dict[str, int] = {}
    running_jobs: dict[str, int] = {}
    running_tasks: dict[str, int] = {}
    for info in model.jobs.values():
        if info.pending_count():
            pending[info.queue] = pending.get(info.queue, 0) + 1
        if info.running:
            running_jobs[info.queue] = running_jobs.get(info.queue, 0) + 1
            running_tasks[info.queue] = running_tasks.get(info.queue, 0) + len(info.running)
    tree = model.quota
    out: dict[str, VirtualClusterStatus] = {}
    for queue in tree:  # the root and `default` included
        name = queue.name
        out[name] = VirtualClusterStatus(
            name=name, parent=None if queue.parent is None else queue.parent.name,
            children=tuple(c.name for c in queue.children), guaranteed=queue.min,
            ceiling=queue.max, used=queue.usage, available=tree.headroom(name),
            borrowed=queue.usage.saturating_sub(queue.min),
            pending_jobs=pending.get(name, 0), running_jobs=running_jobs.get(name, 0),
            running_tasks=running_tasks.get(name, 0))
    return out
