"""The schema of the native `shoal/v1` documents, as pydantic models: the Job (and Service)
documents here, the cluster's in `shoal.spec.cluster_documents`, their shared field types in
`shoal.spec.document_types`; `Document` and `DOCUMENT_MODELS` name them all.

These models own the *form* of a document: which fields exist, their types, their defaults
and the per-field bounds. They accept exactly what the YAML may say (unknown fields are
errors) and nothing is converted here: resource quantities stay as written, because their
meaning depends on the resource name and `shoal.spec.convert` reports them field by field.
The same models generate the published JSON Schema (`shoal.spec.schema`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictStr

from shoal.api.lifecycle import TaskState
from shoal.spec.cluster_documents import (
    ClusterResourcesSpec,
    NodeDocument,
    PriorityClassDocument,
    ResourceFlavorDocument,
    SchedulerProfileDocument,
    VirtualClusterDocument,
)
from shoal.spec.document_types import (
    GROUP_NAME_PATTERN,
    JOB_NAME_PATTERN,
    DocumentModel,
    Int64,
    Number,
    Quantities,
    StringMap,
)
from shoal.spec.generated_names import MAX_PREFIX

# ---- Job ----------------------------------------------------------------------------------

class JobMetadata(DocumentModel):
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


class GroupCompletionSpec(DocumentModel):
    min_succeeded: Int64 | None = Field(
        default=None, ge=1, alias="minSucceeded",
        description="The job succeeds as soon as this many tasks of this group have "
                    "succeeded (at most the group's replicas); absent: no rule of its own.")


class FailurePolicySpec(DocumentModel):
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


class TaskGroupSpec(DocumentModel):
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


class CompletionSpec(DocumentModel):
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


class ScaleFactorSpec(DocumentModel):
    factor: Int64 = Field(ge=1, description="Sizes are multiples of it.")


Duration = Number | StrictStr
"""Seconds, or a Go duration as Kubernetes annotations write them (`10m0s`)."""


class ElasticSpec(DocumentModel):
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


class QuietWindowSpec(DocumentModel):
    """Hours of the day (UTC, the scheduler's clock) in which a service needs fewer
    replicas."""

    from_: StrictStr = Field(alias="from", max_length=8,
                             description="Start, HH:MM or HH:MM:SS (UTC).")
    to: StrictStr = Field(max_length=8,
                          description="End (exclusive), HH:MM or HH:MM:SS (UTC); before "
                                      "`from`: the window wraps midnight.")
    replicas: Int64 = Field(ge=1, description="Replicas of its task group it needs then.")


class ServiceSpec(DocumentModel):
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


class SchedulingPolicySpec(DocumentModel):
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


class JobSpec(DocumentModel):
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


class TaskStatus(DocumentModel):
    group: StrictStr
    index: Int64 = Field(ge=0)
    node: StrictStr | None = None
    gpus: list[Annotated[Int64, Field(ge=0)]] | None = Field(
        default=None, description="GPU indices on the node.")
    state: TaskState = TaskState.RUNNING
    start_time: Number | None = Field(default=None, alias="startTime")


class JobStatus(DocumentModel):
    tasks: list[TaskStatus] = Field(default_factory=list)


class JobDocument(DocumentModel):
    api_version: Literal["shoal/v1"] = Field(alias="apiVersion")
    kind: Literal["Job"]
    metadata: JobMetadata
    spec: JobSpec
    status: JobStatus | None = None


class ServiceDocument(JobDocument):
    """`kind: Service`: a Job document that is an online service (`spec.service`)."""

    kind: Literal["Service"]  # type: ignore[assignment]


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
