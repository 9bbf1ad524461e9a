"""The scheduling object model: nodes, jobs, task groups, tasks, virtual clusters, priorities.

These are plain immutable values. The spec layer builds them from YAML, the store will build
them from rows, and the core reads them in a `Snapshot`; none of them knows how it is stored
or scheduled. Mappings (labels, env, selectors) are stored as given and must not be mutated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from shoal.api.defaults import DEFAULT_QUEUE
from shoal.api.elastic import Elasticity
from shoal.api.flavors import FlavorFungibility, FlavorQuota, flavor_quotas_max, flavor_quotas_min
from shoal.api.lifecycle import JobState, TaskState
from shoal.api.queue_policy import PreemptionPolicy, QueuePreemption, QueueStatus
from shoal.api.resources import ZERO, ResourceLimit, Resources, total
from shoal.api.services import Service

#: The node label carrying the GPU model; jobs select it with `nodeSelector: {gpu-type: …}`.
GPU_TYPE_LABEL = "gpu-type"
VIRTUAL_CLUSTER_LABEL = "shoal.io/virtual-cluster"
"""Carried by every virtual node, naming the virtual cluster it belongs to (seed 003's
`ray.io/vcluster_id`)."""
HOSTNAME_LABEL = "kubernetes.io/hostname"
"""Every node carries it, valued its own name (a virtual node: its physical node's), so a
`nodeSelector` on it — a Kubernetes pod's `nodeName` — pins a task to one node."""
NODE_ROLE_LABEL = "node-role"
"""Seed 004's edge–cloud convention: `node-role: cloud` or `node-role: edge` (`NodeRole`);
the Sedna kinds place their cloud workers and edge workers by it where nodes declare it."""


class NodeRole(StrEnum):
    """The values of the `node-role` label."""

    CLOUD = "cloud"
    EDGE = "edge"


#: The root of the quota tree: the physical cluster itself.
ROOT_QUEUE = "root"
JOB_VIRTUAL_CLUSTER_PREFIX = "job:"
"""Job-scoped virtual clusters are named `job:<job>`: ':' is in no declared one's name."""


def job_virtual_cluster(job: str) -> str:
    """The name of the job-scoped virtual cluster of job `job`."""
    return JOB_VIRTUAL_CLUSTER_PREFIX + job


def sub_cluster_name(job: str, child: str) -> str:
    """The name of the sub-cluster `child` that job `job` created inside its own virtual
    cluster: `job:<job>/<child>` ('/' is in no job's nor declared cluster's name)."""
    return f"{job_virtual_cluster(job)}/{child}"


def job_of_virtual_cluster(name: str) -> str | None:
    """The job that owns virtual cluster `name` — its own (`job:<job>`) or one of its
    sub-clusters (`job:<job>/<child>`); None for a declared one."""
    if not name.startswith(JOB_VIRTUAL_CLUSTER_PREFIX):
        return None
    return name.removeprefix(JOB_VIRTUAL_CLUSTER_PREFIX).split("/", 1)[0]


def renamed(job: Job, name: str) -> Job:
    """A job not yet stored under another name (a generated one drawn again): its own
    virtual cluster, named after it, follows."""
    if job.tasks or job.sub_clusters:
        raise ValueError(f"job {job.name}: only a job that has not run can be renamed")
    own = job.virtual_cluster
    return replace(job, name=name, virtual_cluster=None if own is None
                   else replace(own, name=job_virtual_cluster(name)))


def job_cluster(job: Job) -> str:
    """The virtual cluster a job's tasks run in: its own, or its queue."""
    return job.queue if job.virtual_cluster is None else job_virtual_cluster(job.name)


def is_sub_cluster(name: str) -> bool:
    """Whether `name` is a sub-cluster a job created inside its own virtual cluster."""
    return name.startswith(JOB_VIRTUAL_CLUSTER_PREFIX) and "/" in name


class SchedulerName(StrEnum):
    """Which scheduler places a job's tasks (seed 004's `schedulerName`)."""

    DEFAULT = "default"
    """Tasks placed one by one, no gang: how a job that names no scheduler behaves."""
    SHOAL = "shoal"
    """Gang scheduling at `minAvailable`. `volcano` is accepted as an alias by the spec."""


class FailureEvent(StrEnum):
    """How a task ended badly, for its group's `policies` (Volcano's policy events)."""

    TASK_FAILED = "TaskFailed"
    """It exited non-zero, was killed by a signal, or could not be launched."""
    TASK_LOST = "TaskLost"
    """Its process (or its machine) vanished with no exit status recorded."""


class FailureAction(StrEnum):
    """What a task's bad end does while its group's `taskRetryCount` allows a retry."""

    RESTART_TASK = "RestartTask"
    """Retry it in place; its peers go on."""
    RESTART_GANG = "RestartGang"
    """Stop its peers and place the whole gang again (a rigid gang only): the retry is
    charged to this task."""


#: What each event does when a group's `policies` do not say (`TaskGroup.action_on`).
DEFAULT_ACTIONS = {FailureEvent.TASK_FAILED: FailureAction.RESTART_TASK,
                   FailureEvent.TASK_LOST: FailureAction.RESTART_GANG}

#: Volcano's task policy (event, action) that ends the job when its group has completed
#: (`TaskGroup.completes_job`), as the spec and the API write it.
COMPLETE_JOB_POLICY = ("TaskCompleted", "CompleteJob")


class QueueingPolicy(StrEnum):
    """How a virtual cluster orders its waiting jobs."""

    FIFO = "fifo"
    """Submission order only."""
    PRIORITY = "priority"
    """Priority class value, highest first; submission order among equals."""


class PlacementPolicy(StrEnum):
    """Where a group of fixed-size virtual nodes may be carved, relative to the parent's
    nodes (Ray's placement-group strategies)."""

    PACK = "PACK"
    """As few parent nodes as possible."""
    SPREAD = "SPREAD"
    """As many parent nodes as possible, sharing one when there are more virtual nodes."""
    STRICT_SPREAD = "STRICT_SPREAD"
    """Every virtual node on a parent node of its own; infeasible with too few nodes."""


@dataclass(frozen=True, slots=True)
class Node:
    """A physical machine. `allocatable` is what the scheduler may hand out (capacity less
    what the system keeps); it defaults to the capacity."""

    name: str
    capacity: Resources
    labels: Mapping[str, str] = field(default_factory=dict)
    allocatable: Resources | None = None
    schedulable: bool = True
    reserved: Resources = ZERO
    """Used outside Shoal on this node (`status.reserved`: an online service or a daemon
    it does not run); within what is allocatable."""

    def __post_init__(self) -> None:
        if HOSTNAME_LABEL not in self.labels:
            object.__setattr__(self, "labels", {**self.labels, HOSTNAME_LABEL: self.name})

    @property
    def allocatable_resources(self) -> Resources:
        """What the scheduler may hand out: allocatable (or capacity) less `reserved`, in
        every decision: the node index and the quota tree's root both count from it."""
        offered = self.capacity if self.allocatable is None else self.allocatable
        return offered if self.reserved.is_zero() else offered.saturating_sub(self.reserved)

    @property
    def gpu_type(self) -> str | None:
        return self.labels.get(GPU_TYPE_LABEL)


@dataclass(frozen=True, slots=True)
class TaskGroup:
    """A role of a job (master, pserver, trainer, worker …): `replicas` identical tasks."""

    name: str
    replicas: int
    resources: Resources
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    working_dir: str | None = None
    task_retry_count: int = 0
    """How many times a failed task of this group is restarted in place (OpenPAI's
    `taskRetryCount`) before it counts as failed."""
    min_succeeded: int | None = None
    """The job succeeds once this many tasks *of this group* have succeeded (OpenPAI's
    per-role `minSucceededInstances`); None: this group sets no success rule of its own."""
    policies: Mapping[FailureEvent, FailureAction] = field(default_factory=dict)
    """What a bad end of one of its tasks does, per event, where it differs from
    `DEFAULT_ACTIONS` (Volcano's task `policies`)."""
    min_available: int | None = None
    """Tasks of this group that must run for the job to run (Volcano's `minTaskMember`):
    a master/worker gang needs its master. None: no minimum of its own."""
    min_count: int | None = None
    """Partial admission (Kueue's PodSet `minCount`): the group may be admitted with as few
    as this many replicas when that is all that fits; None: all of them."""
    completes_job: bool = False
    """Volcano's task policy `TaskCompleted → CompleteJob`: once every task of this group
    that the job waits for has ended, at least one of them succeeded, the job succeeds and
    its other tasks are stopped: a TrainingJob's trainers end it, its master and parameter
    servers are stopped then (seed 002, step 4). An elastic group's surplus tasks that are
    not placed are not waited for."""
    image: str | None = None
    """A container image its tasks run in (imported from Volcano, Kueue, OpenPAI, Sedna or
    `spec.taskGroups[].image`); None: the command runs on the host. Scheduling never reads
    it; an engine runs it with the container runtime it was given, or refuses it."""

    def action_on(self, event: FailureEvent) -> FailureAction:
        return self.policies.get(event, DEFAULT_ACTIONS[event])


@dataclass(frozen=True, slots=True)
class TaskRef:
    """Names one task: `job/group/index`."""

    job: str
    group: str
    index: int

    def __str__(self) -> str:
        return f"{self.job}/{self.group}/{self.index}"

    @staticmethod
    def parse(text: str) -> TaskRef:
        job, group, index = text.rsplit("/", 2)
        return TaskRef(job, group, int(index))


@dataclass(frozen=True, slots=True)
class Task:
    """A task's record. A task with no record, or a record in PENDING, wants a node."""

    job: str
    group: str
    index: int
    state: TaskState = TaskState.PENDING
    node: str | None = None
    gpus: tuple[int, ...] = ()
    """The GPU indices on `node` assigned to this task (becomes CUDA_VISIBLE_DEVICES)."""
    started: float | None = None
    """When the task was bound, on the snapshot's clock."""
    retries: int = 0
    """How many times the task was restarted in place since its job (re)started."""
    exit_code: int | None = None
    """How its latest process ended: the exit code, or minus the signal that killed it."""

    @property
    def ref(self) -> TaskRef:
        return TaskRef(self.job, self.group, self.index)


@dataclass(frozen=True, slots=True)
class Job:
    """A job: task groups plus the scheduling fields of seed 004."""

    name: str
    groups: tuple[TaskGroup, ...]
    queue: str = DEFAULT_QUEUE
    scheduler_name: SchedulerName = SchedulerName.DEFAULT
    min_available: int | None = None
    """Gang minimum; None means every replica (ignored by the default scheduler)."""
    min_resources: Resources | None = None
    """Resources the job needs to start (PodGroup `minResources`); gates the enqueue action."""
    priority_class: str | None = None
    user: str | None = None
    submitted: float = 0.0
    """Submission time on the snapshot's clock: the FIFO order."""
    runtime_estimate: float | None = None
    """Expected run time in seconds (Slurm's time limit); the simulator knows it exactly.
    Used by shortest-job-first ordering and by reservation-based backfill."""
    attained_gpu_seconds: float = 0.0
    """GPU-seconds the job received in earlier runs (before evictions): least-attained-
    service ordering counts them."""
    min_succeeded: int | None = None
    """The job succeeds as soon as this many tasks have succeeded; None: every task."""
    min_failed: int | None = None
    """The job fails as soon as this many tasks have failed (after their retries); None: 1."""
    job_retry_count: int = 0
    """How many times the whole job is restarted from scratch when it would fail."""
    retries: int = 0
    """How many times the whole job was restarted so far (at most `job_retry_count`)."""
    state: JobState = JobState.PENDING
    tasks: tuple[Task, ...] = ()
    virtual_cluster: VirtualCluster | None = None
    """Its own virtual cluster (`spec.virtualCluster`, seed 003), created inside `queue`
    when the job is admitted and removed when it ends; named `job_virtual_cluster(name)`."""
    elastic: Elasticity | None = None
    """Seed 001: the job's elastic task group and how it may be scaled; None: rigid."""
    protect_for: float = 0.0
    """Seconds after a task starts during which it is neither preempted nor reclaimed
    (Volcano's `volcano.sh/cooldown-time`); 0: no protection."""
    sub_clusters: tuple[VirtualCluster, ...] = ()
    """Virtual clusters its running tasks created inside its own (seed 003's nested
    clusters), in creation order, named `sub_cluster_name(name, child)`; removed with it."""
    preemptable: bool = True
    """False: preempt, reclaim and the elastic shrink never take its tasks (`spec.preemptable`,
    Volcano's `volcano.sh/preemptable` annotation)."""
    freezing_window: float | None = None
    """Seconds after any change of its size (a start, a growth, a shrink) during which the
    fairshare action neither grows nor shrinks it (seed 002's `FreezingWindow`,
    `spec.freezingWindow`); None: the profile's default (`shoal.scheduler.actions.fairshare`)."""
    checkpoint_interval: float | None = None
    """Seconds between the job's checkpoints (`spec.checkpointInterval`, > 0); None: it keeps
    nothing when evicted. Victims are ranked by the work an eviction would lose
    (`shoal.scheduler.work_lost`), and the simulator keeps the checkpointed work."""
    service: Service | None = None
    """An online service (`kind: Service`, `spec.service`; `shoal.api.services`): never
    interrupted for other jobs, sized by its time-of-day schedule; None: a training job."""
    annotations: Mapping[str, str] = field(default_factory=dict)
    """`metadata.annotations` as the user wrote them (imported documents' too): kept and
    shown, read by nothing that schedules except seed 001's elastic annotations."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """`metadata.labels` as the user wrote them: kept and shown."""
    time_limit: float | None = None
    """Seconds a run may last (`spec.timeLimit`, Slurm's `-t`): a run still going then is
    stopped and the job fails with a time-limit cause; None: no limit."""
    depends_on: tuple[str, ...] = ()
    """Jobs that must have succeeded before this one is considered at all (`spec.dependsOn`,
    Slurm's `--dependency=afterok:`); one that ends otherwise cancels this one."""
    held: bool = False
    """Held (`spec.hold`, `shoal hold`, Slurm's `-H`): not considered until released."""

    @property
    def evictable(self) -> bool:
        """Whether preempt, reclaim and the elastic shrink may take its tasks: not if it is
        non-preemptable, nor if it is a service."""
        return self.preemptable and self.service is None

    @property
    def success_threshold(self) -> int:
        """Succeeded tasks that end the job SUCCEEDED (OpenPAI's `minSucceeded`)."""
        return self.replicas if self.min_succeeded is None else self.min_succeeded

    @property
    def failure_threshold(self) -> int:
        """Failed tasks (retries exhausted) that end the job FAILED (`minFailed`)."""
        return 1 if self.min_failed is None else self.min_failed

    @property
    def gang(self) -> bool:
        return self.scheduler_name is SchedulerName.SHOAL

    @property
    def replicas(self) -> int:
        return sum(g.replicas for g in self.groups)

    @property
    def gang_minimum(self) -> int:
        """How many tasks must run together for the job to run at all: `minAvailable`, or
        every task but the elastic surplus."""
        if not self.gang:
            return 1
        if self.min_available is not None:
            # Within its replicas: a partially admitted job (`TaskGroup.min_count`) keeps its
            # `minAvailable` but has fewer replicas, all of which start together.
            return min(self.min_available, self.replicas)
        return self.replicas - self.elastic_surplus

    @property
    def group_minimums(self) -> tuple[tuple[str, int], ...]:
        """(group, minimum) for each task group with a minimum of its own (`minAvailable`,
        Volcano's `minTaskMember`), within its replicas; none off a gang."""
        if not self.gang:
            return ()
        return tuple((g.name, min(g.min_available, g.replicas)) for g in self.groups
                     if g.min_available is not None and g.min_available > 0)

    def gang_met(self, counted: Iterable[Task]) -> bool:
        """Whether `counted` — its tasks that count toward the gang (running, or ended for
        good) — make the job run: some, at least `gang_minimum` of them, and each group's
        own minimum (`group_minimums`). A master/worker gang without its master does not."""
        per_group: dict[str, int] = {}
        for task in counted:
            per_group[task.group] = per_group.get(task.group, 0) + 1
        held = sum(per_group.values())
        return held > 0 and held >= self.gang_minimum and all(
            per_group.get(name, 0) >= floor for name, floor in self.group_minimums)

    @property
    def elastic_surplus(self) -> int:
        """How many of its tasks are elastic surplus: above its elastic group's minimum."""
        return 0 if self.elastic is None else \
            self.elastic.max_replicas - self.elastic.min_replicas

    def group(self, name: str) -> TaskGroup:
        for g in self.groups:
            if g.name == name:
                return g
        raise KeyError(f"job {self.name} has no task group {name!r}")


@dataclass(frozen=True, slots=True)
class FixedSizeNode:
    """One fixed-size virtual node: a slice of one parent node, with labels of its own in
    addition to those it inherits from that node."""

    resources: Resources
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FixedSizeNodes:
    """A group of fixed-size virtual nodes placed together under one policy."""

    nodes: tuple[FixedSizeNode, ...]
    policy: PlacementPolicy = PlacementPolicy.PACK

    @property
    def resources(self) -> Resources:
        return total(n.resources for n in self.nodes)


@dataclass(frozen=True, slots=True)
class VirtualNodePlacement:
    """Where one fixed-size virtual node was carved: its physical node and the GPU indices
    it holds there (recorded, so that a restart carves it exactly where it was)."""

    node: str
    gpus: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class VirtualCluster:
    """A node of the quota tree (Volcano/Kueue queues are virtual clusters too), as seed 003
    defines it: flexible resources and fixed-size virtual nodes.

    `min` is the flexible minimum (`flexibleResourceMin`) and `max` the flexible ceiling
    (`flexibleResourceMax`); `fixed_size_nodes` are reserved in full on top of the minimum.
    What the quota tree guarantees is therefore `guaranteed` = min + every fixed-size node,
    and its ceiling on the whole subtree's usage is `ceiling` = max + the same. Above its
    guarantee a virtual cluster borrows what its ancestors have idle. `weight` is its
    fair-share weight among siblings."""

    name: str
    parent: str = ROOT_QUEUE
    min: Resources = field(default_factory=Resources)
    max: ResourceLimit = field(default_factory=ResourceLimit)
    weight: int = 1
    queueing: QueueingPolicy = QueueingPolicy.PRIORITY
    fixed_size_nodes: tuple[FixedSizeNodes, ...] = ()
    idle_timeout: float = 0.0
    """Seconds its flexible part on a node stays its own after its last task there ends
    (`flexibleIdleTimeout`, seed 003's return on idle); 0: given back at once."""
    reservation: tuple[VirtualNodePlacement, ...] | None = None
    """Where its fixed-size nodes are carved, in group then node order; None while they are
    not (status, written by the scheduler, never by a user)."""
    state: QueueStatus = QueueStatus.OPEN
    """Closed: it admits nothing new; what runs in it runs on (Volcano's queue state)."""
    priority: int = 0
    """Orders sibling virtual clusters before their share does: higher first (Volcano's
    queue `priority`)."""
    preemption: QueuePreemption = field(default_factory=QueuePreemption)
    """Whom its jobs may preempt and reclaim from (Kueue's ClusterQueue `preemption`)."""
    borrowing_limit: ResourceLimit = field(default_factory=ResourceLimit)
    """At most this much above its guarantee, per resource (Kueue's `borrowingLimit`);
    dimensions not named are unlimited."""
    lending_limit: ResourceLimit = field(default_factory=ResourceLimit)
    """At most this much of its unused guarantee lent to others, per resource (Kueue's
    `lendingLimit`); dimensions not named may all be lent."""
    flavors: tuple[FlavorQuota, ...] = ()
    """Its quota per resource flavor, in its order of preference (Kueue's ClusterQueue
    `resourceGroups[].flavors`): a job in it is admitted on one of them
    (`shoal.scheduler.flavors`). Counted in the flavors' own dimensions, on top of
    `min` and `max`."""
    flavor_fungibility: FlavorFungibility = field(default_factory=FlavorFungibility)
    """Whether a job tries its next flavor rather than borrow or wait for evictions on the
    one before (Kueue's `flavorFungibility`)."""
    max_per_user: ResourceLimit = field(default_factory=ResourceLimit)
    """At most this much held by one user's running tasks in its subtree, per resource
    (`maxPerUser`, issue 17: Slurm's MaxTRESPerUser); dimensions not named are
    unlimited (`shoal.core.user_quota`)."""

    @property
    def virtual_node_specs(self) -> tuple[FixedSizeNode, ...]:
        """Every fixed-size virtual node, in group then node order."""
        return tuple(n for g in self.fixed_size_nodes for n in g.nodes)

    @property
    def fixed_resources(self) -> Resources:
        return total(g.resources for g in self.fixed_size_nodes)

    @property
    def guaranteed(self) -> Resources:
        """The flexible minimum plus the fixed-size nodes: reserved all at once; and every
        flavor's minimum in its own dimensions."""
        out = self.min + self.fixed_resources
        return out + flavor_quotas_min(self.flavors) if self.flavors else out

    @property
    def ceiling(self) -> ResourceLimit:
        """The flexible maximum plus the fixed-size nodes; unlimited where max is; and every
        flavor's maximum in its own dimensions."""
        out = self.max.raised_by(self.fixed_resources)
        return flavor_quotas_max(out, self.flavors) if self.flavors else out


@dataclass(frozen=True, slots=True)
class PriorityClass:
    """A named priority level; higher values are served first."""

    name: str
    value: int
    description: str = ""
    global_default: bool = False
    preemption_policy: PreemptionPolicy = PreemptionPolicy.PREEMPT_LOWER_PRIORITY
    """Never: its jobs never evict others to start (Kubernetes' `preemptionPolicy`)."""


#: Seed 002's levels, always defined. A cluster may add more or redefine their values.
BUILTIN_PRIORITY_CLASSES: tuple[PriorityClass, ...] = (
    PriorityClass("experiment", 10, "experiments and one-shot jobs: first to be scaled down"),
    PriorityClass("offline", 100, "offline batch jobs"),
    PriorityClass("normal", 1000, "the default for a job that names no class",
                  global_default=True),
    PriorityClass("production", 10000, "production training that must finish on time"),
)
