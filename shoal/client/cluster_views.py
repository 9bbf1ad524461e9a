"""What the client returns about the cluster and its accounts — nodes, virtual clusters,
priority classes, resource flavors, users: small frozen dataclasses built from the API's
JSON, as in `models.py` (field names Python's, keys the server's camelCase aliases, the JSON
each was built from in `raw`). Apart from the job views, so that the job verbs define
only what they use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shoal.api.lifecycle import NodePhase
from shoal.client.models import Json, Quantities


@dataclass(frozen=True)
class NodeView:
    """`state`: Ready, NotReady (its engine says it cannot run tasks now; `reason` says
    why) or Cordoned (declared unschedulable)."""

    name: str
    labels: dict[str, str]
    capacity: Quantities
    allocatable: Quantities
    unschedulable: bool
    state: NodePhase = NodePhase.READY
    reason: str = ""
    reserved: Quantities = field(default_factory=dict)
    """Used outside Shoal (`status.reserved`); `allocatable` is already net of it."""
    raw: Json = field(default_factory=dict, compare=False, hash=False, repr=False)
    draining: bool = False
    """Being drained (`shoal node drain`): its tasks are evicted as their protection ends."""

    @classmethod
    def from_json(cls, data: Json) -> NodeView:
        unschedulable = bool(data.get("unschedulable", False))
        # A server from before node states says only whether it is cordoned.
        default = NodePhase.CORDONED if unschedulable else NodePhase.READY
        return cls(name=str(data["name"]), labels=dict(data.get("labels") or {}),
                   capacity=dict(data.get("capacity") or {}),
                   allocatable=dict(data.get("allocatable") or {}),
                   unschedulable=unschedulable,
                   state=NodePhase(data.get("state") or default),
                   reason=str(data.get("reason") or ""),
                   reserved=dict(data.get("reserved") or {}), raw=data,
                   draining=bool(data.get("draining", False)))


@dataclass(frozen=True)
class VirtualClusterStatusView:
    """How a virtual cluster stands now: quantities as the API writes them (`cpu: "500m"`),
    `ceiling` in canonical units with unlimited dimensions absent."""

    name: str
    parent: str | None
    children: list[str]
    guaranteed: Quantities
    ceiling: dict[str, int]
    used: Quantities
    available: Quantities
    borrowed: Quantities
    pending_jobs: int
    running_jobs: int
    running_tasks: int
    reservation: str = ""
    """With fixed-size nodes: "reserved", or why it still waits for them."""
    virtual_nodes: list[Json] = field(default_factory=list)
    """`[{"name", "node", "labels", "total", "used", "available"}]`, as the API sends it."""
    flexible_nodes: list[Json] = field(default_factory=list)
    """`[{"name", "node", "used"}]`: at most one per physical node."""
    raw: Json = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def from_json(cls, data: Json) -> VirtualClusterStatusView:
        parent = data.get("parent")
        return cls(name=str(data["name"]), parent=None if parent is None else str(parent),
                   children=[str(c) for c in data.get("children") or []],
                   guaranteed=dict(data.get("guaranteed") or {}),
                   ceiling=dict(data.get("ceiling") or {}), used=dict(data.get("used") or {}),
                   available=dict(data.get("available") or {}),
                   borrowed=dict(data.get("borrowed") or {}),
                   pending_jobs=int(data.get("pendingJobs", 0)),
                   running_jobs=int(data.get("runningJobs", 0)),
                   running_tasks=int(data.get("runningTasks", 0)),
                   reservation=str(data.get("reservation") or ""),
                   virtual_nodes=[dict(v) for v in data.get("virtualNodes") or []],
                   flexible_nodes=[dict(f) for f in data.get("flexibleNodes") or []], raw=data)


@dataclass(frozen=True)
class VirtualClusterView:
    """`min` and `max` are the flexible minimum and maximum (`flexibleResourceMin` / `Max`);
    `guaranteed` adds the fixed-size nodes to the minimum. `fixed_size_nodes` is as the API
    sends it: `[{"schedulingPolicy", "nodes": [{"resources", "labels"}]}]`."""

    name: str
    parent: str
    min: Quantities
    max: dict[str, int]
    weight: int
    queueing_policy: str
    state: str = "Open"
    """Open, or Closed: it admits nothing new."""
    priority: int = 0
    guaranteed: Quantities = field(default_factory=dict)
    fixed_size_nodes: list[Json] = field(default_factory=list)
    max_per_user: dict[str, int] = field(default_factory=dict)
    """`maxPerUser` (issue 17) in canonical units; empty: no per-user limit."""
    status: VirtualClusterStatusView | None = None
    """Absent in the answer to a creation."""
    raw: Json = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def from_json(cls, data: Json) -> VirtualClusterView:
        return cls(name=str(data["name"]), parent=str(data["parent"]),
                   min=dict(data.get("flexibleResourceMin") or {}),
                   max=dict(data.get("flexibleResourceMax") or {}),
                   weight=int(data["weight"]), queueing_policy=str(data["queueingPolicy"]),
                   state=str(data.get("state", "Open")), priority=int(data.get("priority", 0)),
                   guaranteed=dict(data.get("guaranteed") or {}),
                   fixed_size_nodes=list(data.get("fixedSizeNodes") or []),
                   max_per_user=dict(data.get("maxPerUser") or {}),
                   status=(None if not data.get("status")
                           else VirtualClusterStatusView.from_json(data["status"])),
                   raw=data)


@dataclass(frozen=True)
class PriorityClassView:
    name: str
    value: int
    description: str
    global_default: bool
    preemption_policy: str = "PreemptLowerPriority"
    raw: Json = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def from_json(cls, data: Json) -> PriorityClassView:
        return cls(name=str(data["name"]), value=int(data["value"]),
                   description=str(data.get("description", "")),
                   global_default=bool(data.get("globalDefault", False)),
                   preemption_policy=str(data.get("preemptionPolicy", "PreemptLowerPriority")),
                   raw=data)


@dataclass(frozen=True)
class ResourceFlavorView:
    """A resource flavor (issue 16): a node pool named by its labels; `nodes`, how many
    nodes they match now (None from a server that does not say)."""

    name: str
    node_labels: dict[str, str]
    nodes: int | None = None
    raw: Json = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def from_json(cls, data: Json) -> ResourceFlavorView:
        count = data.get("nodes")
        return cls(name=str(data["name"]),
                   node_labels={str(k): str(v) for k, v in
                                (data.get("nodeLabels") or {}).items()},
                   nodes=None if count is None else int(count), raw=data)


@dataclass(frozen=True)
class UserView:
    """A user; `token` is set only in the answer that created it (shown once)."""

    name: str
    admin: bool
    queues: tuple[str, ...]
    token: str | None = field(default=None, repr=False)
    raw: Json = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def from_json(cls, data: Json) -> UserView:
        return cls(name=str(data["name"]), admin=bool(data.get("admin", False)),
                   queues=tuple(str(q) for q in data.get("queues") or ()),
                   token=None if data.get("token") is None else str(data["token"]),
                   raw=data)
