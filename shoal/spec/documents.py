"""The schema of the native `shoal/v1` documents, as pydantic models.

These models own the *form* of a document: which fields exist, their types, their defaults
and the per-field bounds. They accept exactly what the YAML may say (unknown fields are
errors) and nothing is converted here: resource quantities stay as written, because their
meaning depends on the resource name and `shoal.spec.convert` reports them field by field.
The same models generate the published JSON Schema (`shoal.spec.schema`).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
    WithJsonSchema,
)
from pydantic.fields import ComputedFieldInfo, FieldInfo

from shoal.api import PlacementPolicy, QueueingPolicy
from shoal.api.flavors import WhenCanBorrow, WhenCanPreempt
from shoal.api.lifecycle import TaskState
from shoal.api.queue_policy import (
    BorrowPolicy,
    PreemptionPolicy,
    QueueStatus,
    ReclaimWithinParent,
    WithinQueue,
)
from shoal.spec.errors import quote
from shoal.spec.generated_names import MAX_PREFIX

API_VERSION = "shoal/v1"

#: Job names end up in task ids (`job/group/index`) and in OpenPAI, which allows only these.
JOB_NAME_PATTERN = r"^[a-zA-Z0-9_-]+$"
#: Task group names become parts of host names and environment variables: a DNS label.
GROUP_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
#: Nodes, virtual clusters and priority classes: Kubernetes-like object names.
OBJECT_NAME_PATTERN = r"^[a-zA-Z0-9]([a-zA-Z0-9._-]*[a-zA-Z0-9])?$"

#: What each pattern means, for error messages that people can act on.
PATTERN_DESCRIPTIONS = {
    JOB_NAME_PATTERN: "letters, digits, '_' and '-' only",
    GROUP_NAME_PATTERN: "lower-case letters, digits and '-', starting and ending with a letter "
                        "or digit",
    OBJECT_NAME_PATTERN: "letters, digits, '.', '_' and '-', starting and ending with a letter "
                         "or digit",
}


#: Every integer a document holds fits in 64 bits, as the store's columns and the scheduling
#: core assume: larger ones are refused here, under their field, whatever the limits say.
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
#: The longest quantity string (`'500m'`, `'4Gi'`): a quantity is a number and a unit.
MAX_QUANTITY_LENGTH = 64


def _quantity(value: Any) -> int | float | str:
    # bool is an int to Python but `true` is never a quantity someone meant to write.
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(
            f"must be a number or a quantity string like '500m' or '4Gi', got {quote(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {quote(value)}")
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"must be below 2**63, got {quote(value)}")
    if isinstance(value, str) and len(value) > MAX_QUANTITY_LENGTH:
        raise ValueError(f"must be at most {MAX_QUANTITY_LENGTH} characters long, got "
                         f"{len(value)} ({quote(value)})")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number, got {quote(value)}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        finite = False
    if not finite:
        raise ValueError(f"must be a finite number, got {quote(value)}")
    return float(value)


Quantity = Annotated[
    int | float | str,
    PlainValidator(_quantity),
    WithJsonSchema({
        "anyOf": [{"type": "number"}, {"type": "string"}],
        "description": "A Kubernetes-style quantity: cpu '2', '500m'; memory '4Gi', '512Mi' "
                       "(a bare number is bytes); gpu and extras whole counts.",
    }),
]
Number = Annotated[float, PlainValidator(_number), WithJsonSchema({"type": "number"})]
# Only the upper bound here: a field's own Field(ge=...) would replace a lower one.
Int64 = Annotated[StrictInt, Field(le=INT64_MAX)]
Quantities = dict[StrictStr, Quantity]
StringMap = dict[StrictStr, StrictStr]
ObjectName = Annotated[StrictStr, Field(pattern=OBJECT_NAME_PATTERN, max_length=253)]


def _field_title(name: str, info: FieldInfo | ComputedFieldInfo) -> str:
    # The default title is the Python name in title case ("Apiversion"); YAML authors see
    # the field as they write it.
    return (info.alias if isinstance(info, FieldInfo) else None) or name


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, field_title_generator=_field_title)


# ---- Node ---------------------------------------------------------------------------------

class NodeMetadata(_Model):
    name: ObjectName
    labels: StringMap = Field(default_factory=dict)


class NodeSpec(_Model):
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


class NodeStatusSpec(_Model):
    reserved: Quantities = Field(
        default_factory=dict,
        description="Resources used outside Shoal on this node (an online service, a "
                    "daemon), e.g. {gpu: 2}: subtracted from what the node offers in every "
                    "decision; at most its allocatable. Default none.")


class NodeDocument(_Model):
    api_version: Literal["shoal/v1"] = Field(alias="apiVersion")
    kind: Literal["Node"]
    metadata: NodeMetadata
    spec: NodeSpec
    status: NodeStatusSpec | None = None


# ---- VirtualCluster -----------------------------------------------------------------------

class VirtualClusterMetadata(_Model):
    name: ObjectName


class FixedSizeNodeSpec(_Model):
    resources: Quantities = Field(description="The virtual node's size, e.g. {gpu: 4}.")
    labels: StringMap = Field(
        default_factory=dict,
        description="Labels in addition to those inherited from the parent node; a task's "
                    "nodeSelector may name them.")


class FixedSizeNodesSpec(_Model):
    nodes: list[FixedSizeNodeSpec] = Field(min_length=1, max_length=512)
    scheduling_policy: PlacementPolicy = Field(
        default=PlacementPolicy.PACK, alias="schedulingPolicy",
        description="PACK: as few parent nodes as possible; SPREAD: as many as possible; "
                    "STRICT_SPREAD: one parent node per virtual node.")


class ClusterResourcesSpec(_Model):
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


class BorrowWithinParentSpec(_Model):
    policy: BorrowPolicy = Field(
        default=BorrowPolicy.NEVER,
        description="LowerPriority: a job that must borrow to start may preempt lower-"
                    "priority jobs of other virtual clusters under the same parent.")
    max_priority_threshold: Int64 | None = Field(
        default=None, ge=INT64_MIN, alias="maxPriorityThreshold",
        description="Only jobs of at most this priority may be preempted so; absent: any "
                    "lower priority.")


class QueuePreemptionSpec(_Model):
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


class FlavorQuotaSpec(_Model):
    name: ObjectName = Field(description="A declared ResourceFlavor.")
    min: Quantities | None = Field(
        default=None, description="Guaranteed on this flavor, e.g. {gpu: 8}; default none.")
    max: Quantities | None = Field(
        default=None, description="Ceiling on this flavor; resources not named are "
                                  "unlimited.")


class FlavorFungibilitySpec(_Model):
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


class VirtualClusterDocument(_Model):
    api_version: Literal["shoal/v1"] = Field(alias="apiVersion")
    kind: Literal["VirtualCluster"]
    metadata: VirtualClusterMetadata
    spec: VirtualClusterSpec = Field(default_factory=VirtualClusterSpec)


# ---- ResourceFlavor -----------------------------------------------------------------------

class ResourceFlavorMetadata(_Model):
    name: ObjectName


class ResourceFlavorSpec(_Model):
    node_labels: StringMap = Field(
        default_factory=dict, alias="nodeLabels",
        description="The flavor's nodes are those carrying every one of these labels, e.g. "
                    "{gpu-type: a100}; none: every node.")


class ResourceFlavorDocument(_Model):
    """A node pool a virtual cluster's quota may be given in (Kueue's ResourceFlavor)."""

    api_version: Literal["shoal/v1"] = Field(alias="apiVersion")
    kind: Literal["ResourceFlavor"]
    metadata: ResourceFlavorMetadata
    spec: ResourceFlavorSpec = Field(default_factory=ResourceFlavorSpec)


# ---- PriorityClass ------------------------------------------------------------------------

class PriorityClassMetadata(_Model):
    name: ObjectName


class PriorityClassDocument(_Model):
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


# ---- Job ----------------------------------------------------------------------------------

class JobMetadata(_Model):
    name: Annotated[StrictStr, Field(pattern=JOB_NAME_PATTERN, max_length=253)]
    generate_name: Annotated[StrictStr, Field(pattern=JOB_NAME_PATTERN,
                                              max_length=MAX_PREFIX)] | None = Field(
        default=None, alias="generateName",
        description="Without a name: the job is named this prefix and 5 random characters "
                    "(Kubernetes' generateName); name wins when both are given.")
    creation_timestamp: Number | None = Field(
        default=None, alias="creationTimestamp",
        description="Submission time on the scheduler clock; defaults to the job's position "
                    "among the Job documents of the load, so FIFO follows file order.")
    user: StrictStr | None = None
    annotations: StringMap = Field(
        default_factory=dict,
        description="Free-form; seed 001's volcano.sh/elastic-train, "
                    "volcano.sh/elastic-train-power-of-two, volcano.sh/elastic-train-factor, "
                    "volcano.sh/elastic-cooldown-time and volcano.sh/cooldown-time mean what "
                    "spec.elastic says.")
    labels: StringMap = Field(default_factory=dict,
                              description="Free-form; kept and shown, as annotations are.")


class GroupCompletionSpec(_Model):
    min_succeeded: Int64 | None = Field(
        default=None, ge=1, alias="minSucceeded",
        description="The job succeeds as soon as this many tasks of this group have "
                    "succeeded (at most the group's replicas); absent: no rule of its own.")


class FailurePolicySpec(_Model):
    """Volcano's task policy: what a task's bad end does while its `taskRetryCount` lasts,
    or (`TaskCompleted → CompleteJob`) what the group's completion does to the job."""

    event: Literal["TaskFailed", "TaskLost", "TaskCompleted"] = Field(
        description="TaskFailed: it exited non-zero, was killed by a signal or could not be "
                    "launched; TaskLost: it vanished with no exit status (its node died); "
                    "TaskCompleted: every task of the group the job waits for has ended, one "
                    "at least succeeded (with CompleteJob only).")
    action: Literal["RestartTask", "RestartGang", "CompleteJob"] = Field(
        description="RestartTask: retry it in place (default for TaskFailed); RestartGang: "
                    "stop its peers and place the whole gang again, charged to its retries "
                    "(default for TaskLost; a rigid gang only); CompleteJob: the job succeeds "
                    "and its other tasks are stopped (for TaskCompleted only: a "
                    "TrainingJob's trainers end it, its master and pservers are stopped).")


class TaskGroupSpec(_Model):
    name: Annotated[StrictStr, Field(pattern=GROUP_NAME_PATTERN, max_length=63)]
    replicas: Int64 = Field(ge=1)
    resources: Quantities = Field(
        description="Per replica. {} (no request at all): best-effort tasks, placed by the "
                    "backfill action only; pods may not be requested.")
    command: list[StrictStr] = Field(default_factory=list)
    env: StringMap = Field(default_factory=dict)
    node_selector: StringMap = Field(default_factory=dict, alias="nodeSelector")
    working_dir: StrictStr | None = Field(default=None, alias="workingDir")
    task_retry_count: Int64 = Field(
        default=0, ge=0, alias="taskRetryCount",
        description="How many times a failed task (non-zero exit, signal, lost process) is "
                    "restarted in place before it counts as failed; a lost member of a "
                    "rigid gang restarts its whole gang, charged to its own count.")
    completion: GroupCompletionSpec | None = None
    policies: list[FailurePolicySpec] = Field(
        default_factory=list, max_length=3,
        description="What a task's bad end does, per event, where it differs from the "
                    "default, and whether the group's completion completes the job "
                    "(TaskCompleted: CompleteJob); at most one per event.")
    min_available: Int64 | None = Field(
        default=None, ge=1, alias="minAvailable",
        description="Tasks of this group the gang needs to run at all (Volcano's "
                    "minTaskMember); only with schedulerName shoal or volcano.")
    min_count: Int64 | None = Field(
        default=None, ge=1, alias="minCount",
        description="Partial admission (Kueue's minCount): the group may start with as few "
                    "as this many replicas when that is all that fits; the rest never run.")
    image: Annotated[StrictStr, Field(min_length=1, max_length=512)] | None = Field(
        default=None,
        description="A container image to run the command in; an engine runs it with its "
                    "container runtime, or refuses the job (`shoal up --images`).")


class CompletionSpec(_Model):
    """OpenPAI's completion policy; tasks count once their retries are exhausted."""

    min_succeeded: Int64 | None = Field(
        default=None, ge=1, alias="minSucceeded",
        description="The job succeeds as soon as this many tasks have succeeded; the rest are "
                    "stopped. Absent or null: every task (at most the total replicas).")
    min_failed: Int64 | None = Field(
        default=None, ge=1, alias="minFailed",
        description="The job fails as soon as this many tasks have failed. Absent or null: 1 "
                    "(at most the total replicas).")


class JobVirtualClusterSpec(ClusterResourcesSpec):
    """A job's own virtual cluster (seed 003's job-scoped cluster): created inside the job's
    queue when the queue can guarantee it, removed with the job. Its parent is always that
    queue."""


class ScaleFactorSpec(_Model):
    factor: Int64 = Field(ge=1, description="Sizes are multiples of it.")


Duration = Number | StrictStr
"""Seconds, or a Go duration as Kubernetes annotations write them (`10m0s`)."""


class ElasticSpec(_Model):
    """Seed 001's elastic job: one task group whose size ranges over [min, max] replicas."""

    task_group: StrictStr | None = Field(
        default=None, alias="taskGroup",
        description="The elastic task group; default: the job's only one.")
    min_replicas: Int64 = Field(ge=1, alias="minReplicas")
    max_replicas: Int64 | None = Field(
        default=None, ge=1, alias="maxReplicas",
        description="The group's replicas (its largest size); if given, must equal them.")
    step: Literal[1, "powerOfTwo"] | ScaleFactorSpec = Field(
        default=1, description="1: any size; powerOfTwo; or {factor: k}: multiples of k.")
    scale_cooldown: Duration = Field(
        default=0, alias="scaleCooldown",
        description="Least time between two scaling operations (seed 001's "
                    "elastic-cooldown-time).")
    protect_for: Duration = Field(
        default=0, alias="protectFor",
        description="A task is neither preempted nor reclaimed until it has run this long "
                    "(Volcano's volcano.sh/cooldown-time).")


class QuietWindowSpec(_Model):
    """Hours of the day (UTC, the scheduler's clock) in which a service needs fewer
    replicas."""

    from_: StrictStr = Field(alias="from", max_length=8,
                             description="Start, HH:MM or HH:MM:SS (UTC).")
    to: StrictStr = Field(max_length=8,
                          description="End (exclusive), HH:MM or HH:MM:SS (UTC); before "
                                      "`from`: the window wraps midnight.")
    replicas: Int64 = Field(ge=1, description="Replicas of its task group it needs then.")


class ServiceSpec(_Model):
    """Seed 002's online service: never preempted, reclaimed nor shrunk for others."""

    task_group: StrictStr | None = Field(
        default=None, alias="taskGroup",
        description="The task group the schedule sizes; default: the job's only one.")
    schedule: list[QuietWindowSpec] = Field(
        default_factory=list, max_length=48,
        description="Quiet windows, not overlapping: training jobs may use the "
                    "difference then.")
    hand_back: Duration = Field(
        default=900, alias="handBack",
        description="Seconds (or a duration such as 15m) before a quiet window ends at "
                    "which the service grows back, evicting training that used its share. "
                    "Default 900.")


class SchedulingPolicySpec(_Model):
    """Seed 004's scheduling policy block (Sedna's `SchedulingPolicy`): the flat fields of
    the same meaning, gathered (`shoal.spec.scheduling_policy`)."""

    min_available: Int64 | None = Field(
        default=None, ge=1, alias="minAvailable", description="Same as spec.minAvailable.")
    queue: StrictStr | None = Field(default=None, description="Same as spec.queue.")
    min_resources: Quantities | None = Field(
        default=None, alias="minResources",
        description="Same as spec.minResources; values may be quantity strings.")
    priority_class: StrictStr | None = Field(
        default=None, alias="priorityClass", description="Same as spec.priorityClassName.")


class JobSpec(_Model):
    scheduler_name: Literal["default", "shoal", "volcano"] | None = Field(
        default=None, alias="schedulerName",
        description="default: tasks placed one by one; shoal (alias volcano): gang scheduling.")
    min_available: Int64 | None = Field(
        default=None, ge=1, alias="minAvailable",
        description="Gang minimum; only with schedulerName shoal or volcano.")
    queue: StrictStr = Field(default="default", description="The job's virtual cluster.")
    min_resources: Quantities | None = Field(default=None, alias="minResources")
    priority_class_name: StrictStr | None = Field(default=None, alias="priorityClassName")
    scheduling_policy: SchedulingPolicySpec | None = Field(
        default=None, alias="schedulingPolicy",
        description="minAvailable, queue, minResources and priorityClass in one block (seed "
                    "004); each means what its flat field means, and one given both ways must "
                    "agree.")
    task_groups: list[TaskGroupSpec] = Field(alias="taskGroups", min_length=1)
    completion: CompletionSpec | None = None
    job_retry_count: Int64 = Field(
        default=0, ge=0, alias="jobRetryCount",
        description="When the job would fail, stop all its tasks and schedule it again from "
                    "scratch, up to this many times.")
    virtual_cluster: JobVirtualClusterSpec | None = Field(
        default=None, alias="virtualCluster",
        description="The job's own virtual cluster, inside its queue (seed 003).")
    elastic: ElasticSpec | None = Field(
        default=None, description="An elastic job (seed 001): one task group scaled in "
                                  "steps between its min and max replicas.")
    preemptable: StrictBool | None = Field(
        default=None,
        description="false: preempt, reclaim and the elastic shrink never take its tasks "
                    "(Volcano's volcano.sh/preemptable annotation). Default true.")
    freezing_window: Duration | None = Field(
        default=None, alias="freezingWindow",
        description="Seconds (or a duration such as 5m) after any change of the job's size "
                    "during which the fairshare action neither grows nor shrinks it (seed "
                    "002's FreezingWindow). Default: the profile's freezingWindow.")
    checkpoint_interval: Duration | None = Field(
        default=None, alias="checkpointInterval",
        description="Seconds (or a Go duration such as 10m0s) between the job's checkpoints, "
                    "> 0: an eviction loses the work since the last one, and victims are "
                    "chosen by least work lost. Default: none (an eviction loses the run).")
    service: StrictBool | ServiceSpec | None = Field(
        default=None,
        description="true, or a mapping with a time-of-day schedule: an online service "
                    "(seed 002) - long-running, priority class production unless it names "
                    "one, never preempted, reclaimed nor shrunk for others. kind: Service "
                    "says the same.")
    time_limit: Duration | None = Field(
        default=None, alias="timeLimit",
        description="Seconds (or a duration such as 2h) a run may last (Slurm's -t): a run "
                    "still going then is stopped and the job fails. Also the runtime "
                    "estimate of sjf and backfill. Default: no limit.")
    depends_on: list[Annotated[StrictStr, Field(pattern=JOB_NAME_PATTERN, max_length=253)]] = \
        Field(default_factory=list, alias="dependsOn", max_length=64,
              description="Jobs that must have succeeded before this one is considered "
                          "(Slurm's --dependency=afterok:); one that ends otherwise cancels "
                          "this one.")
    hold: StrictBool = Field(
        default=False,
        description="true: submitted held (Slurm's -H), not considered until released "
                    "(`shoal release NAME`).")
    array: Annotated[StrictStr, Field(max_length=256)] | None = Field(
        default=None,
        description="A job array (Slurm's --array): '0-9', '1,3,5' or '0-15:4' submits one "
                    "job <name>-<i> per index i, with SHOAL_ARRAY_INDEX=i in its tasks' "
                    "environment; at most 1000.")


class TaskStatus(_Model):
    group: StrictStr
    index: Int64 = Field(ge=0)
    node: StrictStr | None = None
    gpus: list[Annotated[Int64, Field(ge=0)]] | None = Field(
        default=None, description="GPU indices on the node.")
    state: TaskState = TaskState.RUNNING
    start_time: Number | None = Field(default=None, alias="startTime")


class JobStatus(_Model):
    tasks: list[TaskStatus] = Field(default_factory=list)


class JobDocument(_Model):
    api_version: Literal["shoal/v1"] = Field(alias="apiVersion")
    kind: Literal["Job"]
    metadata: JobMetadata
    spec: JobSpec
    status: JobStatus | None = None


class ServiceDocument(JobDocument):
    """`kind: Service`: a Job document that is an online service (`spec.service`)."""

    kind: Literal["Service"]  # type: ignore[assignment]


# ---- SchedulerProfile ---------------------------------------------------------------------

class SchedulerProfileMetadata(_Model):
    name: StrictStr | None = None


class SchedulerProfileDocument(_Model):
    """The scheduler reads and validates `spec` itself; the spec layer only carries it."""

    api_version: Literal["shoal/v1"] = Field(alias="apiVersion")
    kind: Literal["SchedulerProfile"]
    metadata: SchedulerProfileMetadata = Field(default_factory=SchedulerProfileMetadata)
    spec: dict[StrictStr, Any]


Document = (NodeDocument | VirtualClusterDocument | PriorityClassDocument | JobDocument
            | SchedulerProfileDocument | ResourceFlavorDocument | ServiceDocument)

#: The model of each kind, in the order the JSON Schema lists them.
DOCUMENT_MODELS: dict[str, type[Document]] = {
    "Node": NodeDocument,
    "VirtualCluster": VirtualClusterDocument,
    "PriorityClass": PriorityClassDocument,
    "Job": JobDocument,
    "SchedulerProfile": SchedulerProfileDocument,
    "ResourceFlavor": ResourceFlavorDocument,
    "Service": ServiceDocument,
}
