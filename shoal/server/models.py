"""The JSON the API returns for the cluster's objects (nodes, virtual clusters, priority
classes, resource flavors) and users, as pydantic models, and the conversions from
`shoal.api` objects (jobs: `shoal.server.job_models`; what both share:
`shoal.server.shared_models`).

Field names follow the `shoal/v1` YAML spec wherever the object has one (`metadata.name`,
`spec.flexibleResourceMin`), so what `GET` returns reads like what was sent; resources are
Kubernetes-style quantities (`cpu: "500m"`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from shoal.api import (
    Node,
    NodePhase,
    PriorityClass,
    VirtualCluster,
)
from shoal.api.flavors import ResourceFlavor
from shoal.scheduler.introspection import VirtualClusterStatus
from shoal.server.shared_models import (
    FixedSizeNodesOut,
    OutModel,
    Quantities,
    fixed_size_nodes_out,
    quantities,
)
from shoal.store import User
from shoal.store.nodes import NodeRecord

# ---- cluster objects ----------------------------------------------------------------------

class NodeOut(OutModel):
    name: str
    labels: dict[str, str]
    capacity: Quantities
    allocatable: Quantities = Field(
        description="What the scheduler may hand out: its allocatable less `reserved`.")
    unschedulable: bool = Field(description="Declared unschedulable (cordoned).")
    state: NodePhase = Field(
        default=NodePhase.READY,
        description="Ready; NotReady: its engine reports it cannot run tasks now (dead, "
                    "drained, gone; `reason` says which), nothing is placed on it and its "
                    "tasks are lost; Cordoned: declared unschedulable.")
    reason: str = Field(default="", description="Why it is NotReady; empty otherwise.")
    draining: bool = Field(default=False, description="Being drained (`shoal node drain`): "
                           "its tasks are evicted as their protection ends.")
    reserved: Quantities = Field(
        default_factory=dict, description="Used outside Shoal (`status.reserved`).")


class VirtualNodeOut(OutModel):
    """One fixed-size virtual node, carved from a physical node."""

    name: str
    node: str = Field(description="The physical node it is carved from.")
    labels: dict[str, str]
    total: Quantities
    used: Quantities
    available: Quantities


class FlexibleNodeOut(OutModel):
    """A virtual cluster's flexible virtual node: its share of one physical node."""

    name: str
    node: str
    used: Quantities
    kept: Quantities = Field(
        default_factory=dict, description="Idle, kept for its next tasks until its "
                                          "flexibleIdleTimeout is up.")


class VirtualClusterStatusOut(OutModel):
    """A virtual cluster as the scheduler sees it now (seed 003's introspection)."""

    name: str
    parent: str | None = Field(description="None for the root: the physical cluster.")
    children: list[str]
    guaranteed: Quantities = Field(
        description="Flexible minimum plus fixed-size nodes; the root: the capacity.")
    ceiling: dict[str, int] = Field(
        description="Flexible maximum plus fixed-size nodes, canonical units; a dimension "
                    "not named is unlimited.")
    used: Quantities = Field(description="What the tasks of its whole subtree hold.")
    available: Quantities = Field(
        description="What its subtree could take now: what its ancestors have idle, less "
                    "every guarantee still owed to others, within its ceiling and its "
                    "borrowingLimit.")
    borrowed: Quantities = Field(description="What it uses beyond its guarantee.")
    pending_jobs: int = Field(alias="pendingJobs", description="Its own jobs still waiting.")
    running_jobs: int = Field(alias="runningJobs")
    running_tasks: int = Field(alias="runningTasks")
    reservation: str = Field(
        default="", description='With fixed-size nodes: "reserved", or why it is still '
                                "queued for them; empty without.")
    virtual_nodes: list[VirtualNodeOut] = Field(default_factory=list, alias="virtualNodes")
    flexible_nodes: list[FlexibleNodeOut] = Field(
        default_factory=list, alias="flexibleNodes",
        description="At most one per physical node: what its own tasks hold there outside "
                    "its fixed-size nodes.")


class BorrowWithinParentOut(OutModel):
    policy: str = "Never"
    max_priority_threshold: int | None = Field(default=None, alias="maxPriorityThreshold")


class QueuePreemptionOut(OutModel):
    within_queue: str = Field(default="LowerPriority", alias="withinQueue")
    reclaim_within_parent: str = Field(default="Any", alias="reclaimWithinParent")
    borrow_within_parent: BorrowWithinParentOut = Field(
        default_factory=BorrowWithinParentOut, alias="borrowWithinParent")


class FlavorQuotaOut(OutModel):
    name: str
    min: Quantities
    max: dict[str, int] = Field(
        description="Limits in canonical units; a dimension not named is unlimited.")


class FlavorFungibilityOut(OutModel):
    when_can_borrow: str = Field(default="Borrow", alias="whenCanBorrow")
    when_can_preempt: str = Field(default="TryNextFlavor", alias="whenCanPreempt")


class ResourceFlavorOut(OutModel):
    name: str
    node_labels: dict[str, str] = Field(alias="nodeLabels")
    nodes: int = Field(description="How many of the cluster's nodes its labels match now, "
                                   "cordoned and not-ready ones included.")


class VirtualClusterOut(OutModel):
    name: str
    parent: str
    flexible_resource_min: Quantities = Field(alias="flexibleResourceMin")
    flexible_resource_max: dict[str, int] = Field(
        alias="flexibleResourceMax",
        description="Limits in canonical units; a dimension not named is unlimited.")
    fixed_size_nodes: list[FixedSizeNodesOut] = Field(alias="fixedSizeNodes")
    guaranteed: Quantities = Field(
        description="What the cluster reserves for it: flexibleResourceMin plus every "
                    "fixed-size node.")
    weight: int
    queueing_policy: str = Field(alias="queueingPolicy")
    flexible_idle_timeout: float = Field(
        default=0.0, alias="flexibleIdleTimeout",
        description="Seconds its idle flexible resources on a node stay its own.")
    state: str = Field(default="Open", description="Open, or Closed: it admits nothing new.")
    priority: int = 0
    preemption: QueuePreemptionOut = Field(default_factory=QueuePreemptionOut)
    borrowing_limit: dict[str, int] = Field(
        default_factory=dict, alias="borrowingLimit",
        description="In canonical units; a dimension not named is unlimited.")
    lending_limit: dict[str, int] = Field(
        default_factory=dict, alias="lendingLimit",
        description="In canonical units; a dimension not named may all be lent.")
    flavors: list[FlavorQuotaOut] = Field(
        default_factory=list, description="Its quota per resource flavor, in order of "
                                          "preference.")
    flavor_fungibility: FlavorFungibilityOut = Field(
        default_factory=FlavorFungibilityOut, alias="flavorFungibility")
    max_per_user: dict[str, int] = Field(
        default_factory=dict, alias="maxPerUser",
        description="At most this much held by one user's running tasks in it, canonical "
                    "units; a dimension not named is unlimited.")
    status: VirtualClusterStatusOut | None = None


class PriorityClassOut(OutModel):
    name: str
    value: int
    description: str
    global_default: bool = Field(alias="globalDefault")
    preemption_policy: str = Field(default="PreemptLowerPriority", alias="preemptionPolicy")


def node_out(record: NodeRecord) -> NodeOut:
    node = record.node
    return NodeOut(name=node.name, labels=dict(node.labels),
                   capacity=quantities(node.capacity),
                   allocatable=quantities(node.allocatable_resources),
                   unschedulable=not node.schedulable, state=record.phase,
                   reason=record.condition.reason, reserved=quantities(node.reserved),
                   draining=record.draining)


def vc_status_out(status: VirtualClusterStatus) -> VirtualClusterStatusOut:
    return VirtualClusterStatusOut(
        name=status.name, parent=status.parent, children=list(status.children),
        guaranteed=quantities(status.guaranteed), ceiling=status.ceiling.to_dict(),
        used=quantities(status.used), available=quantities(status.available),
        borrowed=quantities(status.borrowed), pending_jobs=status.pending_jobs,
        running_jobs=status.running_jobs, running_tasks=status.running_tasks,
        reservation=status.reservation,
        virtual_nodes=[VirtualNodeOut(name=v.name, node=v.node, labels=v.labels,
                                      total=quantities(v.total), used=quantities(v.used),
                                      available=quantities(v.available))
                       for v in status.virtual_nodes],
        flexible_nodes=[FlexibleNodeOut(name=f.name, node=f.node, used=quantities(f.used),
                                        kept=quantities(f.kept))
                        for f in status.flexible_nodes])


def vc_out(vc: VirtualCluster, status: VirtualClusterStatus | None = None
           ) -> VirtualClusterOut:
    return VirtualClusterOut(
        name=vc.name, parent=vc.parent, flexible_resource_min=quantities(vc.min),
        flexible_resource_max=vc.max.to_dict(), fixed_size_nodes=fixed_size_nodes_out(vc),
        guaranteed=quantities(vc.guaranteed), weight=vc.weight,
        queueing_policy=vc.queueing.value, flexible_idle_timeout=vc.idle_timeout,
        state=vc.state.value, priority=vc.priority, preemption=_preemption_out(vc),
        borrowing_limit=vc.borrowing_limit.to_dict(), lending_limit=vc.lending_limit.to_dict(),
        flavors=[FlavorQuotaOut(name=q.name, min=quantities(q.min), max=q.max.to_dict())
                 for q in vc.flavors],
        flavor_fungibility=FlavorFungibilityOut(
            when_can_borrow=vc.flavor_fungibility.when_can_borrow.value,
            when_can_preempt=vc.flavor_fungibility.when_can_preempt.value),
        max_per_user=vc.max_per_user.to_dict(),
        status=None if status is None else vc_status_out(status))


def _preemption_out(vc: VirtualCluster) -> QueuePreemptionOut:
    borrow = vc.preemption.borrow_within_parent
    return QueuePreemptionOut(
        within_queue=vc.preemption.within_queue.value,
        reclaim_within_parent=vc.preemption.reclaim_within_parent.value,
        borrow_within_parent=BorrowWithinParentOut(
            policy=borrow.policy.value, max_priority_threshold=borrow.max_priority_threshold))


def resource_flavor_out(flavor: ResourceFlavor, nodes: Iterable[Node]) -> ResourceFlavorOut:
    return ResourceFlavorOut(name=flavor.name, node_labels=dict(flavor.node_labels),
                             nodes=sum(1 for n in nodes if flavor.matches(n.labels)))


def priority_class_out(pc: PriorityClass) -> PriorityClassOut:
    return PriorityClassOut(name=pc.name, value=pc.value, description=pc.description,
                            global_default=pc.global_default,
                            preemption_policy=pc.preemption_policy.value)


# ---- users --------------------------------------------------------------------------------

MAX_USER_QUEUES = 1_024
"""The most queues one user may be given."""
MAX_QUEUE_NAME = 1_024
"""The longest queue name a user may be given (a sub-cluster's joins its parents' names)."""
QueueName = Annotated[str, Field(min_length=1, max_length=MAX_QUEUE_NAME,
                                 pattern=r"^[^\x00-\x1f\x7f]+$")]
"""A queue a user may be given: no control characters (PostgreSQL refuses NUL in text)."""


class UserIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-zA-Z0-9]([a-zA-Z0-9._-]*[a-zA-Z0-9])?$", max_length=253)
    admin: bool = False
    queues: list[QueueName] = Field(
        default_factory=list, max_length=MAX_USER_QUEUES,
        description="The queues (virtual clusters) the user may submit to.")


class UserOut(OutModel):
    name: str
    admin: bool
    queues: list[str]


class NewUserOut(UserOut):
    token: str = Field(description="The user's bearer token: shown once, never stored.")


def user_out(user: User) -> dict[str, Any]:
    return {"name": user.name, "admin": user.admin, "queues": list(user.queues)}
