"""What one scheduling cycle decides: binds, evictions, resizes, and why jobs wait.

A cycle returns one `Decisions` value. Drivers (the scenario runner, the control plane, the
simulator) apply binds and evictions; pending reasons are for people, so every one of them
says which resource, which virtual-cluster limit or which predicate stands in the way.
The JSON form (`to_dict`) is a documented, stable interface: see docs/decisions.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from shoal.api.objects import TaskRef, VirtualNodePlacement
from shoal.api.resources import Resources


class PendingKind(StrEnum):
    """Why a job is waiting, in categories a dashboard can group by."""

    UNSCHEDULABLE = "Unschedulable"
    """It can never run on this cluster as configured (too big, no matching node)."""
    INSUFFICIENT_RESOURCES = "InsufficientResources"
    """Not enough free capacity on matching nodes right now."""
    QUEUE_LIMIT = "QueueLimit"
    """Its virtual cluster (or an ancestor) would exceed its max."""
    GUARANTEE = "Guarantee"
    """The free capacity is other virtual clusters' guaranteed minimum."""
    GANG = "Gang"
    """Only part of the gang minimum fits; nothing is placed until all of it does."""
    BLOCKED = "Blocked"
    """Strict FIFO: an earlier job of the same queue is waiting."""
    RESERVATION = "Reservation"
    """Its virtual cluster's fixed-size nodes are not carved yet (queued, seed 003)."""
    QUEUE_CLOSED = "QueueClosed"
    """Its virtual cluster, or an ancestor of it, is closed: it admits nothing new."""
    DEPENDENCY = "Dependency"
    """A job it depends on (`spec.dependsOn`) has not succeeded yet (Slurm's Dependency);
    the scheduler does not consider it until then (`shoal.scheduler.gates`)."""
    HELD = "Held"
    """Held by its user or an admin (`spec.hold`, `shoal hold`; Slurm's JobHeldUser): not
    considered until released."""


@dataclass(frozen=True, slots=True)
class PendingReason:
    kind: PendingKind
    message: str
    resource: str | None = None
    """The resource dimension that is short, when one is."""
    queue: str | None = None
    """The virtual cluster whose limit binds, when one does."""
    predicate: str | None = None
    """The predicate that filtered nodes out, when one did."""
    field: str | None = None
    """The job's field at fault, as a path (`spec.taskGroups[0].resources.cpu`), when the
    reason is one field of the spec (a rule the job breaks, not a shortage)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value, "message": self.message}
        for key in ("resource", "queue", "predicate", "field"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True, slots=True)
class Bind:
    """Place a task on a node, with the exact GPU indices it gets there."""

    task: TaskRef
    node: str
    """The physical node."""
    gpus: tuple[int, ...]
    resources: Resources
    virtual_node: str | None = None
    """The virtual node of the job's virtual cluster it is placed on, carved from `node`;
    None on the flexible part."""

    def to_dict(self) -> dict[str, Any]:
        out = {"task": str(self.task), "job": self.task.job, "group": self.task.group,
               "index": self.task.index, "node": self.node, "gpus": list(self.gpus),
               "resources": self.resources.to_dict()}
        if self.virtual_node is not None:
            out["virtualNode"] = self.virtual_node
        return out


@dataclass(frozen=True, slots=True)
class Reserve:
    """A virtual cluster's fixed-size nodes were carved (`placements`), or given back and
    queued again (`placements` None, with the reason)."""

    virtual_cluster: str
    placements: tuple[VirtualNodePlacement, ...] | None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"virtualCluster": self.virtual_cluster, "reason": self.reason,
                "placements": None if self.placements is None else
                [{"node": p.node, "gpus": list(p.gpus)} for p in self.placements]}


@dataclass(frozen=True, slots=True)
class Evict:
    """Stop a task and give its resources back; the task returns to PENDING."""

    task: TaskRef
    node: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"task": str(self.task), "job": self.task.job, "node": self.node,
                "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Resize:
    """Change the number of replicas of an elastic job's task group — or, with
    `partial_admission`, of a job admitted with fewer replicas than it asked for."""

    job: str
    group: str
    replicas: int
    reason: str
    partial_admission: bool = False
    """Kueue's partial admission (`TaskGroup.min_count`): the group has `replicas` for good,
    its other replicas never run; drivers store the job's new size."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"job": self.job, "group": self.group,
                               "replicas": self.replicas, "reason": self.reason}
        if self.partial_admission:
            out["partialAdmission"] = True
        return out


@dataclass(frozen=True, slots=True)
class Pending:
    """A job that stays waiting after this cycle, and why."""

    job: str
    reason: PendingReason

    def to_dict(self) -> dict[str, Any]:
        return {"job": self.job, "reason": self.reason.to_dict()}


@dataclass(slots=True)
class Decisions:
    """Everything one cycle decided, in the order it decided it."""

    binds: list[Bind] = field(default_factory=list)
    evictions: list[Evict] = field(default_factory=list)
    resizes: list[Resize] = field(default_factory=list)
    pending: list[Pending] = field(default_factory=list)
    reservations: list[Reserve] = field(default_factory=list)

    def changes_anything(self) -> bool:
        return bool(self.binds or self.evictions or self.resizes or self.reservations)

    def pending_by_job(self) -> dict[str, PendingReason]:
        return {p.job: p.reason for p in self.pending}

    def to_dict(self) -> dict[str, Any]:
        return {
            "binds": [b.to_dict() for b in self.binds],
            "evictions": [e.to_dict() for e in self.evictions],
            "resizes": [r.to_dict() for r in self.resizes],
            "pending": [p.to_dict() for p in self.pending],
            "reservations": [r.to_dict() for r in self.reservations],
        }
