"""The schema of the cluster's `shoal/v1` documents, as pydantic models: Node,
VirtualCluster, ResourceFlavor, PriorityClass and SchedulerProfile (jobs:
`shoal.spec.documents`). Like every document model they own the *form* only; nothing is
converted here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool, StrictStr

from shoal.api import PlacementPolicy, QueueingPolicy
from shoal.api.flavors import WhenCanBorrow, WhenCanPreempt
from shoal.api.queue_policy import (
    BorrowPolicy,
    PreemptionPolicy,
    QueueStatus,
    ReclaimWithinParent,
    WithinQueue,
)
from shoal.spec.document_types import (
    INT64_MIN,
    DocumentModel,
    Int64,
    Number,
    ObjectName,
    Quantities,
    StringMap,
)

# ---- Node ---------------------------------------------------------------------------------

class NodeMetadata(DocumentModel):
    name: ObjectName
    labels: StringMap = Field(default_factory=dict)


class NodeSpec(DocumentModel):
    capacity: Quantities = Field(
        description="cpu, memory, gpu (or nvidia.com/gpu) and named extras with whole counts; "
                    "pods: the node's task limit (every task counts one, whatever it "
                    "requests; none given: unlimited).")
    allocatable: Quantities | None = Field(
        default=None, description="What the scheduler may hand out; defaults to capacity.")
    unschedulable: StrictBool = False
    count: Int64 = Field(
        default=1, ge=1,
        description="More than 1 declares identical nodes named <name>-0 … <name>-(count-1).")


class NodeStatusSpec(DocumentModel):
    reserved: Quantities = Field(
        default_factory=dict,
        description="Resources used outside Shoal on this node (an online service, a "
                    "daemon), e.g. {gpu: 2}: subtracted from what the node offers in every "
                    "decision; at most its allocatable. Default none.")


class NodeDocument(DocumentModel):
    api_version: Literal["shoal/v1"] = Field(alias="apiVersion")
    kind: Literal["Node"]
    metadata: NodeMetadata
    spec: NodeSpec
    status: NodeStatusSpec | None = None


# ---- VirtualCluster -----------------------------------------------------------------------

class VirtualClusterMetadata(DocumentModel):
    name: ObjectName


class FixedSizeNodeSpec(DocumentModel):
    resources: Quantities = Field(description="The virtual node's size, e.g. {gpu: 4}.")
    labels: StringMap = Field(
        default_factory=dict,
        description="Labels in addition to those inherited from the parent node; a task's "
                    "nodeSelector may name them.")


class FixedSizeNodesSpec(DocumentModel):
    nodes: list[FixedSizeNodeSpec] = Field(min_length=1, max_length=512)
    scheduling_policy: PlacementPolicy = Field(
        default=PlacementPolicy.PACK, alias="schedulingPolicy",
        description="PACK: as few parent nodes as possible; SPREAD: as many as possible; "
                    "STRICT_SPREAD: one parent node per virtual node.")


class ClusterResourcesSpec(DocumentModel):
    """What a virtual cluster holds (seed 003): flexible resources and fixed-size virtual
    nodes, reserved all at once."""

    flexible_resource_min: Quantities | None = Field(
        default=None, alias="flexibleResourceMin",
        description="Guaranteed flexible resources, reserved when the cluster is created; "
                    "default none.")
    flexible_resource_max: Quantities | None = Field(
        default=None, alias="flexibleResourceMax",
        description="Ceiling on the flexible resources; dimensions not named are unlimited.")
    fixed_size_nodes: list[FixedSizeNodesSpec] = Field(
        default_factory=list, alias="fixedSizeNodes",
        description="Groups of fixed-size virtual nodes, reserved in full with the minimum.")
    flexible_idle_timeout: Number = Field(
        default=0, ge=0, alias="flexibleIdleTimeout",
        description="Seconds the flexible resources its tasks held on a node stay its own "
                    "after they end, for its next tasks; then they go back to the parent. "
                    "Default 0: at once.")


class BorrowWithinParentSpec(DocumentModel):
    policy: BorrowPolicy = Field(
        default=BorrowPolicy.NEVER,
        description="LowerPriority: a job that must borrow to start may preempt lower-"
                    "priority jobs of other virtual clusters under the same parent.")
    max_priority_threshold: Int64 | None = Field(
        default=None, ge=INT64_MIN, alias="maxPriorityThreshold",
        description="Only jobs of at most this priority may be preempted so; absent: any "
                    "lower priority.")


class QueuePreemptionSpec(DocumentModel):
    within_queue: WithinQueue = Field(
        default=WithinQueue.LOWER_PRIORITY, alias="withinQueue",
        description="Never, LowerPriority (default) or LowerOrNewerEqualPriority: whom a "
                    "waiting job may preempt in its own virtual cluster.")
    reclaim_within_parent: ReclaimWithinParent = Field(
        default=ReclaimWithinParent.ANY, alias="reclaimWithinParent",
        description="Never, LowerPriority or Any (default): whom a job owed its guarantee "
                    "may take it back from.")
    borrow_within_parent: BorrowWithinParentSpec = Field(
        default_factory=BorrowWithinParentSpec, alias="borrowWithinParent")


class FlavorQuotaSpec(DocumentModel):
    name: ObjectName = Field(description="A declared ResourceFlavor.")
    min: Quantities | None = Field(
        default=None, description="Guaranteed on this flavor, e.g. {gpu: 8}; default none.")
    max: Quantities | None = Field(
        default=None, description="Ceiling on this flavor; resources not named are "
                                  "unlimited.")


class FlavorFungibilitySpec(DocumentModel):
    when_can_borrow: WhenCanBorrow = Field(
        default=WhenCanBorrow.BORROW, alias="whenCanBorrow",
        description="Borrow (default): a flavor where the job fits only by borrowing is "
                    "taken; TryNextFlavor: the later flavors are tried first.")
    when_can_preempt: WhenCanPreempt = Field(
        default=WhenCanPreempt.TRY_NEXT_FLAVOR, alias="whenCanPreempt",
        description="TryNextFlavor (default): a flavor where the job fits only after "
                    "evictions is passed over for a later one that fits; Preempt: taken.")


class VirtualClusterSpec(ClusterResourcesSpec):
    """Seed 003's virtual cluster, plus Shoal's parent, weight and queueing. `min` and `max`
    are the older names of the flexible fields."""

    parent: StrictStr = Field(
        default="root", description="'root' (the physical cluster) or a declared VirtualCluster.")
    min: Quantities | None = Field(default=None, description="Older name of flexibleResourceMin.")
    max: Quantities | None = Field(default=None, description="Older name of flexibleResourceMax.")
    weight: Int64 = Field(default=1, ge=1, description="Fair-share weight among siblings.")
    queueing_policy: QueueingPolicy = Field(
        default=QueueingPolicy.PRIORITY, alias="queueingPolicy")
    state: QueueStatus = Field(
        default=QueueStatus.OPEN,
        description="Open, or Closed: it admits nothing new while its running jobs run on "
                    "(Volcano's queue state).")
    priority: Int64 = Field(
        default=0, ge=INT64_MIN,
        description="Sibling virtual clusters are served highest priority first, before "
                    "their share is compared (Volcano's queue priority).")
    preemption: QueuePreemptionSpec = Field(
        default_factory=QueuePreemptionSpec,
        description="Whom its jobs may preempt and reclaim from (Kueue's ClusterQueue "
                    "preemption).")
    borrowing_limit: Quantities | None = Field(
        default=None, alias="borrowingLimit",
        description="At most this much above its guarantee, per resource (Kueue's "
                    "borrowingLimit); dimensions not named are unlimited.")
    lending_limit: Quantities | None = Field(
        default=None, alias="lendingLimit",
        description="At most this much of its unused guarantee is lent to others, per "
                    "resource (Kueue's lendingLimit); at most the guarantee.")
    flavors: list[FlavorQuotaSpec] = Field(
        default_factory=list, max_length=64,
        description="Quota per ResourceFlavor, in order of preference: a job is admitted "
                    "on one of them (Kueue's resourceGroups flavors).")
    flavor_fungibility: FlavorFungibilitySpec = Field(
        default_factory=FlavorFungibilitySpec, alias="flavorFungibility",
        description="Whether a job tries the next flavor rather than borrow or wait for "
                    "evictions (Kueue's flavorFungibility).")
    max_per_user: Quantities | None = Field(
        default=None, alias="maxPerUser",
        description="At most this much held by one user's running tasks in this virtual "
                    "cluster (and its children), per resource (Slurm's MaxTRESPerUser); "
                    "dimensions not named are unlimited.")


class VirtualClusterDocument(DocumentModel):
    api_version: Literal["shoal/v1"] = Field(alias="apiVersion")
    kind: Literal["VirtualCluster"]
    metadata: VirtualClusterMetadata
    spec: VirtualClusterSpec = Field(default_factory=VirtualClusterSpec)


# ---- ResourceFlavor -----------------------------------------------------------------------

class ResourceFlavorMetadata(DocumentModel):
    name: ObjectName


class ResourceFlavorSpec(DocumentModel):
    node_labels: StringMap = Field(
        default_factory=dict, alias="nodeLabels",
        description="The flavor's nodes are those carrying every one of these labels, e.g. "
                    "{gpu-type: a100}; none: every node.")


class ResourceFlavorDocument(DocumentModel):
    """A node pool a virtual cluster's quota may be given in (Kueue's ResourceFlavor)."""

    api_version: Literal["shoal/v1"] = Field(alias="apiVersion")
    kind: Literal["ResourceFlavor"]
    metadata: ResourceFlavorMetadata
    spec: ResourceFlavorSpec = Field(default_factory=ResourceFlavorSpec)


# ---- PriorityClass ------------------------------------------------------------------------

class PriorityClassMetadata(DocumentModel):
    name: ObjectName


class PriorityClassDocument(DocumentModel):
    """Like Kubernetes' PriorityClass, `value` and friends sit at the top level."""

    api_version: Literal["shoal/v1"] = Field(alias="apiVersion")
    kind: Literal["PriorityClass"]
    metadata: PriorityClassMetadata
    value: Int64 = Field(ge=INT64_MIN, description="Higher values are served first.")
    global_default: StrictBool = Field(default=False, alias="globalDefault")
    preemption_policy: PreemptionPolicy = Field(
        default=PreemptionPolicy.PREEMPT_LOWER_PRIORITY, alias="preemptionPolicy",
        description="PreemptLowerPriority (default), or Never: its jobs never evict others "
                    "to start.")
    description: StrictStr = ""


# ---- SchedulerProfile ---------------------------------------------------------------------

class SchedulerProfileMetadata(DocumentModel):
    name: StrictStr | None = None


class SchedulerProfileDocument(DocumentModel):
    """The scheduler reads and validates `spec` itself; the spec layer only carries it."""

    api_version: Literal["shoal/v1"] = Field(alias="apiVersion")
    kind: Literal["SchedulerProfile"]
    metadata: SchedulerProfileMetadata = Field(default_factory=SchedulerProfileMetadata)
    spec: dict[StrictStr, Any]
