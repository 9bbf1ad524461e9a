"""The snapshot: everything one scheduling cycle may look at, frozen at one instant.

The core reads nothing else — no clock (`now` is a field), no store, no environment — so a
cycle is a pure function of its snapshot and profile, and the live control plane and the
simulator get identical decisions for identical snapshots.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from shoal.api.flavors import ResourceFlavor
from shoal.api.objects import (
    BUILTIN_PRIORITY_CLASSES,
    Job,
    Node,
    PriorityClass,
    VirtualCluster,
)
from shoal.api.queue_policy import PreemptionPolicy
from shoal.api.resources import Resources, total
from shoal.core.usage import UsageLedger


class SnapshotError(ValueError):
    """A snapshot that contradicts itself (a driver bug, not a user error)."""


class PriorityTable:
    """Priority class names → values: the built-in levels, overridden or extended by the
    declared classes, and the global default (a declared `globalDefault`, else `normal`)."""

    def __init__(self, declared: Iterable[PriorityClass] = ()) -> None:
        classes = {c.name: c for c in BUILTIN_PRIORITY_CLASSES}
        mine = {c.name: c for c in declared}
        classes.update(mine)
        defaults = [c for c in mine.values() if c.global_default]
        if len(defaults) > 1:
            raise SnapshotError("more than one priority class is the global default: "
                                + ", ".join(sorted(c.name for c in defaults)))
        default = defaults[0] if defaults else next(
            c for c in BUILTIN_PRIORITY_CLASSES if c.global_default)
        self._values = {n: c.value for n, c in classes.items()}
        self.default = classes[default.name].value
        self._never_preempt = frozenset(
            n for n, c in classes.items() if c.preemption_policy is PreemptionPolicy.NEVER)
        self._default_name = default.name

    def priority(self, job: Job) -> int:
        """The job's priority value: its class's, or the global default's."""
        if job.priority_class is None:
            return self.default
        try:
            return self._values[job.priority_class]
        except KeyError:
            raise SnapshotError(
                f"job {job.name} names unknown priority class {job.priority_class!r}") from None

    def may_preempt(self, job: Job) -> bool:
        """Whether the job may evict others to start: not when its priority class (or the
        global default's) says `preemptionPolicy: Never`."""
        return self.class_of(job) not in self._never_preempt

    def class_of(self, job: Job) -> str:
        """The name of the job's priority class: its own, or the global default's."""
        return self._default_name if job.priority_class is None else job.priority_class

    def __contains__(self, name: object) -> bool:
        return name in self._values


@dataclass(frozen=True, slots=True)
class Snapshot:
    nodes: tuple[Node, ...]
    jobs: tuple[Job, ...] = ()
    virtual_clusters: tuple[VirtualCluster, ...] = ()
    priority_classes: tuple[PriorityClass, ...] = ()
    """Declared classes; the built-in levels are always present unless redefined here."""
    now: float = 0.0
    resource_flavors: tuple[ResourceFlavor, ...] = ()
    """Declared resource flavors (issue 16): the node pools virtual clusters' `flavors`
    name."""
    usage: UsageLedger = field(default_factory=UsageLedger)
    """Decayed usage per virtual cluster and user (issue 17), as the driver charged it."""
    priorities: PriorityTable = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _unique("node", [n.name for n in self.nodes])
        _unique("job", [j.name for j in self.jobs])
        _unique("virtual cluster", [v.name for v in self.virtual_clusters])
        _unique("resource flavor", [f.name for f in self.resource_flavors])
        object.__setattr__(self, "priorities", PriorityTable(self.priority_classes))
        names = {n.name for n in self.nodes}
        for job in self.jobs:
            for task in job.tasks:
                if task.state.holds_resources and task.node not in names:
                    raise SnapshotError(
                        f"task {task.ref} holds resources on unknown node {task.node!r}")

    def priority(self, job: Job) -> int:
        return self.priorities.priority(job)

    def capacity(self) -> Resources:
        """Total allocatable of the schedulable nodes."""
        return total(n.allocatable_resources for n in self.nodes if n.schedulable)


def _unique(what: str, names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise SnapshotError(f"two {what}s are named {name!r}")
        seen.add(name)
