"""Conversions between the store's rows and shoal.api values.

This module owns the JSON forms the store keeps (resources in canonical units, task groups as
canonical dicts) and the rebuilding of `Job`, `Task`, `Node`, `VirtualCluster` and
`PriorityClass` from rows. It does no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from shoal.api import (
    FailureAction,
    FailureEvent,
    FixedSizeNode,
    FixedSizeNodes,
    Job,
    JobState,
    Node,
    PlacementPolicy,
    PriorityClass,
    QueueingPolicy,
    ResourceLimit,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskState,
    VirtualCluster,
    VirtualNodePlacement,
)
from shoal.api.elastic import Elasticity, ScaleStep
from shoal.api.flavors import (
    FlavorFungibility,
    FlavorQuota,
    ResourceFlavor,
    WhenCanBorrow,
    WhenCanPreempt,
)
from shoal.api.objects import job_virtual_cluster
from shoal.api.queue_policy import (
    BorrowPolicy,
    BorrowWithinParent,
    PreemptionPolicy,
    QueuePreemption,
    QueueStatus,
    ReclaimWithinParent,
    WithinQueue,
)
from shoal.api.resources import CPU, GPU, MEMORY, ZERO
from shoal.api.services import DEFAULT_HAND_BACK, QuietWindow, Service
from shoal.store.models import (
    JobRow,
    NodeRow,
    PriorityClassRow,
    ResourceFlavorRow,
    TaskRow,
    VirtualClusterRow,
)


def resources_to_json(resources: Resources) -> dict[str, int]:
    return resources.to_dict()


def resources_from_json(data: Mapping[str, int]) -> Resources:
    rest = {k: int(v) for k, v in data.items() if k not in (CPU, MEMORY, GPU)}
    return Resources.of(cpu=int(data.get(CPU, 0)), memory=int(data.get(MEMORY, 0)),
                        gpu=int(data.get(GPU, 0)), extras=rest)


def group_to_dict(group: TaskGroup) -> dict[str, Any]:
    return {
        "name": group.name,
        "replicas": group.replicas,
        "resources": resources_to_json(group.resources),
        "command": list(group.command),
        "env": dict(group.env),
        "node_selector": dict(group.node_selector),
        "working_dir": group.working_dir,
        "task_retry_count": group.task_retry_count,
        "min_succeeded": group.min_succeeded,
        "policies": {event.value: action.value for event, action in group.policies.items()},
        "min_available": group.min_available,
        "min_count": group.min_count,
        "completes_job": group.completes_job,
        "image": group.image,
    }


def group_from_dict(data: Mapping[str, Any]) -> TaskGroup:
    return TaskGroup(
        name=data["name"], replicas=int(data["replicas"]),
        resources=resources_from_json(data["resources"]),
        command=tuple(data.get("command", ())), env=dict(data.get("env", {})),
        node_selector=dict(data.get("node_selector", {})), working_dir=data.get("working_dir"),
        # Absent in groups stored before the completion policy existed: the defaults.
        task_retry_count=int(data.get("task_retry_count") or 0),
        min_succeeded=data.get("min_succeeded"),
        policies={FailureEvent(e): FailureAction(a)
                  for e, a in (data.get("policies") or {}).items()},
        min_available=data.get("min_available"), min_count=data.get("min_count"),
        completes_job=bool(data.get("completes_job", False)), image=data.get("image"))


def job_spec(job: Job) -> dict[str, Any]:
    """What a submission asks for: compared to tell an idempotent retry from a conflicting
    request. The submission time, state, tasks and attained service are not part of it."""
    return {
        "name": job.name,
        "groups": [group_to_dict(g) for g in job.groups],
        "queue": job.queue,
        "scheduler_name": job.scheduler_name.value,
        "min_available": job.min_available,
        "min_resources": (None if job.min_resources is None
                          else resources_to_json(job.min_resources)),
        "priority_class": job.priority_class,
        "user": job.user,
        "runtime_estimate": job.runtime_estimate,
        "min_succeeded": job.min_succeeded,
        "min_failed": job.min_failed,
        "job_retry_count": job.job_retry_count,
        "elastic": elastic_to_json(job.elastic),
        "protect_for": job.protect_for,
        "preemptable": job.preemptable,
        "freezing_window": job.freezing_window,
        "checkpoint_interval": job.checkpoint_interval,
        "service": service_to_json(job.service),
        "annotations": dict(job.annotations),
        "labels": dict(job.labels),
        "time_limit": job.time_limit,
        "depends_on": list(job.depends_on),
    }


def elastic_to_json(elastic: Elasticity | None) -> dict[str, Any] | None:
    if elastic is None:
        return None
    return {"group": elastic.group, "minReplicas": elastic.min_replicas,
            "maxReplicas": elastic.max_replicas, "step": elastic.step.value,
            "factor": elastic.factor, "scaleCooldown": elastic.scale_cooldown}


def elastic_from_json(data: Mapping[str, Any] | None) -> Elasticity | None:
    if data is None:
        return None
    return Elasticity(str(data["group"]), int(data["minReplicas"]), int(data["maxReplicas"]),
                      ScaleStep(data["step"]), int(data["factor"]),
                      float(data["scaleCooldown"]))


def row_spec(row: JobRow) -> dict[str, Any]:
    return {
        "name": row.name,
        # Read back and written again, so that groups stored before a field existed compare
        # equal to the same groups submitted now.
        "groups": [group_to_dict(group_from_dict(g)) for g in row.spec],
        "queue": row.queue,
        "scheduler_name": row.scheduler_name,
        "min_available": row.min_available,
        "min_resources": row.min_resources,
        "priority_class": row.priority_class,
        "user": row.user,
        "runtime_estimate": row.runtime_estimate,
        "min_succeeded": row.min_succeeded,
        "min_failed": row.min_failed,
        "job_retry_count": row.job_retry_count,
        "elastic": row.elastic,
        "protect_for": row.protect_for or 0.0,
        "preemptable": row.preemptable is not False,
        "freezing_window": row.freezing_window,
        "checkpoint_interval": row.checkpoint_interval,
        "service": row.service,
        "annotations": row.annotations or {},
        "labels": row.labels or {},
        "time_limit": row.time_limit,
        "depends_on": row.depends_on or [],
    }


def job_columns(job: Job, *, idempotency_key: str | None, now: float) -> dict[str, Any]:
    """The `jobs` row of a new job, by column name (for a Core insert)."""
    return {
        "name": job.name, "user": job.user, "queue": job.queue,
        "priority_class": job.priority_class, "scheduler_name": job.scheduler_name.value,
        "min_available": job.min_available,
        "min_resources": (None if job.min_resources is None
                          else resources_to_json(job.min_resources)),
        "spec": [group_to_dict(g) for g in job.groups], "state": job.state.value,
        "submitted": job.submitted, "runtime_estimate": job.runtime_estimate,
        "attained_gpu_seconds": job.attained_gpu_seconds,
        "min_succeeded": job.min_succeeded, "min_failed": job.min_failed,
        "job_retry_count": job.job_retry_count, "retries": job.retries,
        "virtual_cluster": job_vc_to_json(job.virtual_cluster, job.sub_clusters),
        "elastic": elastic_to_json(job.elastic), "protect_for": job.protect_for,
        "preemptable": job.preemptable, "freezing_window": job.freezing_window,
        "checkpoint_interval": job.checkpoint_interval,
        "service": service_to_json(job.service),
        "annotations": dict(job.annotations) or None, "labels": dict(job.labels) or None,
        "time_limit": job.time_limit, "depends_on": list(job.depends_on) or None,
        "held": job.held,
        "idempotency_key": idempotency_key, "created": now, "updated": now}


def job_vc_to_json(vc: VirtualCluster | None, sub_clusters: Sequence[VirtualCluster] = ()
                   ) -> dict[str, Any] | None:
    """A job's own virtual cluster, with the sub-clusters its tasks created inside it; its
    name and parent follow from the job's."""
    if vc is None:
        return None
    return {"min": resources_to_json(vc.min), "max": vc.max.to_dict(),
            "fixedSizeNodes": fixed_groups_to_json(vc.fixed_size_nodes),
            "idleTimeout": vc.idle_timeout,
            "reservation": reservation_to_json(vc.reservation),
            "subClusters": [sub_cluster_to_json(sub) for sub in sub_clusters]}


def sub_cluster_to_json(vc: VirtualCluster) -> dict[str, Any]:
    """A sub-cluster: flexible resources only (see `shoal.server.sub_clusters`)."""
    return {"name": vc.name, "parent": vc.parent, "min": resources_to_json(vc.min),
            "max": vc.max.to_dict(), "weight": vc.weight, "queueing": vc.queueing.value,
            "idleTimeout": vc.idle_timeout}


def sub_clusters_from_json(data: dict[str, Any] | None) -> tuple[VirtualCluster, ...]:
    return tuple(
        VirtualCluster(name=str(sub["name"]), parent=str(sub["parent"]),
                       min=resources_from_json(sub["min"]), max=_limit(sub["max"]),
                       weight=int(sub["weight"]), queueing=QueueingPolicy(sub["queueing"]),
                       idle_timeout=float(sub["idleTimeout"]))
        for sub in (data or {}).get("subClusters", ()))


def _limit(data: dict[str, Any]) -> ResourceLimit:
    return ResourceLimit.of({k: int(v) for k, v in data.items()})


def job_vc_from_json(job: str, queue: str, data: dict[str, Any] | None
                     ) -> VirtualCluster | None:
    if data is None:
        return None
    return VirtualCluster(
        name=job_virtual_cluster(job), parent=queue, min=resources_from_json(data["min"]),
        max=_limit(data["max"]),
        fixed_size_nodes=fixed_groups_from_json(data["fixedSizeNodes"]),
        idle_timeout=float(data.get("idleTimeout", 0.0)),
        reservation=reservation_from_json(data.get("reservation")))


def task_from_row(job: str, row: TaskRow, *, ended: TaskState | None = None,
                  exit_code: int | None = None) -> Task:
    """The task a row holds; `ended`: as a move to that state with `exit_code` leaves it,
    a move not written yet (`TaskBatches.record_exits` judges its jobs before it writes)."""
    return Task(job=job, group=row.group_name, index=row.task_index,
                state=TaskState(row.state) if ended is None else ended, node=row.node,
                gpus=tuple(int(g) for g in row.gpus), started=row.started,
                retries=row.retries or 0, exit_code=row.exit_code if ended is None
                else exit_code)


def job_from_row(row: JobRow, *, with_tasks: bool = True,
                 tasks: Iterable[TaskRow] | None = None,
                 groups: tuple[TaskGroup, ...] | None = None,
                 task_values: tuple[Task, ...] | None = None) -> Job:
    """The job a row holds; without `with_tasks`, its tasks are not read (nor listed).
    `tasks`, where given, are its task rows read apart from it (`row.tasks` is not asked);
    `task_values`, its tasks made already; `groups`, its task groups read from its spec
    already (`row.spec` is not asked)."""
    if task_values is None:
        task_values = tuple(task_from_row(row.name, t) for t in (
            row.tasks if tasks is None else tasks)) if with_tasks else ()
    return Job(
        name=row.name, queue=row.queue,
        groups=tuple(group_from_dict(g) for g in row.spec) if groups is None else groups,
        scheduler_name=SchedulerName(row.scheduler_name), min_available=row.min_available,
        min_resources=(None if row.min_resources is None
                       else resources_from_json(row.min_resources)),
        priority_class=row.priority_class, user=row.user, submitted=row.submitted,
        runtime_estimate=row.runtime_estimate, attained_gpu_seconds=row.attained_gpu_seconds,
        min_succeeded=row.min_succeeded, min_failed=row.min_failed,
        job_retry_count=row.job_retry_count or 0, retries=row.retries or 0,
        state=JobState(row.state),
        tasks=task_values,
        virtual_cluster=job_vc_from_json(row.name, row.queue, row.virtual_cluster),
        sub_clusters=sub_clusters_from_json(row.virtual_cluster),
        elastic=elastic_from_json(row.elastic), protect_for=row.protect_for or 0.0,
        preemptable=row.preemptable is not False,
        freezing_window=row.freezing_window,
        checkpoint_interval=row.checkpoint_interval,
        service=service_from_json(row.service),
        annotations=dict(row.annotations or {}), labels=dict(row.labels or {}),
        time_limit=row.time_limit, depends_on=tuple(row.depends_on or ()),
        held=bool(row.held))


def service_to_json(service: Service | None) -> dict[str, Any] | None:
    if service is None:
        return None
    return {"group": service.group, "handBack": service.hand_back,
            "schedule": [{"start": w.start, "end": w.end, "replicas": w.replicas}
                         for w in service.schedule]}


def service_from_json(data: Mapping[str, Any] | None) -> Service | None:
    if data is None:
        return None
    group = data.get("group")
    return Service(None if group is None else str(group), tuple(
        QuietWindow(float(w["start"]), float(w["end"]), int(w["replicas"]))
        for w in data.get("schedule", ())), float(data.get("handBack", DEFAULT_HAND_BACK)))


def node_to_row(node: Node, row: NodeRow | None = None) -> NodeRow:
    row = row or NodeRow(name=node.name)
    row.capacity = resources_to_json(node.capacity)
    row.allocatable = None if node.allocatable is None else resources_to_json(node.allocatable)
    row.labels = dict(node.labels)
    row.schedulable = node.schedulable
    row.reserved = None if node.reserved.is_zero() else resources_to_json(node.reserved)
    return row


def node_from_row(row: NodeRow) -> Node:
    return Node(name=row.name, capacity=resources_from_json(row.capacity),
                labels=dict(row.labels),
                allocatable=(None if row.allocatable is None
                             else resources_from_json(row.allocatable)),
                schedulable=row.schedulable,
                reserved=ZERO if row.reserved is None else resources_from_json(row.reserved))


def vc_to_row(vc: VirtualCluster, row: VirtualClusterRow | None = None) -> VirtualClusterRow:
    row = row or VirtualClusterRow(name=vc.name)
    row.parent = vc.parent
    row.min = resources_to_json(vc.min)
    row.max = vc.max.to_dict()
    row.weight = vc.weight
    row.queueing = vc.queueing.value
    row.idle_timeout = vc.idle_timeout
    row.state = vc.state.value
    row.priority = vc.priority
    row.queue_policy = queue_policy_to_json(vc)
    row.max_per_user = vc.max_per_user.to_dict()
    groups = fixed_groups_to_json(vc.fixed_size_nodes)
    if groups != row.fixed_size_nodes or vc.reservation is not None:
        # New fixed-size nodes are carved anew; the same ones keep their carving.
        row.reservation = reservation_to_json(vc.reservation)
    row.fixed_size_nodes = groups
    return row


def reservation_to_json(placements: tuple[VirtualNodePlacement, ...] | None
                        ) -> list[dict[str, Any]] | None:
    if placements is None:
        return None
    return [{"node": p.node, "gpus": list(p.gpus)} for p in placements]


def reservation_from_json(data: list[dict[str, Any]] | None
                          ) -> tuple[VirtualNodePlacement, ...] | None:
    if data is None:
        return None
    return tuple(VirtualNodePlacement(str(p["node"]), tuple(int(g) for g in p["gpus"]))
                 for p in data)


def fixed_groups_to_json(groups: tuple[FixedSizeNodes, ...]) -> list[dict[str, Any]]:
    return [{"policy": g.policy.value,
             "nodes": [{"resources": resources_to_json(n.resources), "labels": dict(n.labels)}
                       for n in g.nodes]} for g in groups]


def fixed_groups_from_json(data: list[dict[str, Any]] | None) -> tuple[FixedSizeNodes, ...]:
    return tuple(FixedSizeNodes(
        tuple(FixedSizeNode(resources_from_json(n["resources"]), dict(n.get("labels", {})))
              for n in g["nodes"]), PlacementPolicy(g["policy"])) for g in data or ())


def vc_from_row(row: VirtualClusterRow) -> VirtualCluster:
    return VirtualCluster(name=row.name, parent=row.parent, min=resources_from_json(row.min),
                          max=_limit(row.max),
                          weight=row.weight, queueing=QueueingPolicy(row.queueing),
                          fixed_size_nodes=fixed_groups_from_json(row.fixed_size_nodes),
                          idle_timeout=row.idle_timeout or 0.0,
                          reservation=reservation_from_json(row.reservation),
                          state=QueueStatus(row.state or QueueStatus.OPEN.value),
                          priority=row.priority or 0,
                          **queue_policy_from_json(row.queue_policy),
                          max_per_user=_limit(row.max_per_user or {}))


def queue_policy_to_json(vc: VirtualCluster) -> dict[str, Any] | None:
    """A virtual cluster's preemption policies and limits, and its resource flavors' quotas
    and fungibility (keys `flavors`, `flavorFungibility`: only when it has flavors, so rows
    written before them read the same); None when all are defaults."""
    defaults = VirtualCluster(vc.name)
    if (vc.preemption, vc.borrowing_limit, vc.lending_limit, vc.flavors,
            vc.flavor_fungibility) == (
            defaults.preemption, defaults.borrowing_limit, defaults.lending_limit,
            defaults.flavors, defaults.flavor_fungibility):
        return None
    borrow = vc.preemption.borrow_within_parent
    out: dict[str, Any] = {
        "withinQueue": vc.preemption.within_queue.value,
        "reclaimWithinParent": vc.preemption.reclaim_within_parent.value,
        "borrowWithinParent": {"policy": borrow.policy.value,
                               "maxPriorityThreshold": borrow.max_priority_threshold},
        "borrowingLimit": vc.borrowing_limit.to_dict(),
        "lendingLimit": vc.lending_limit.to_dict()}
    if vc.flavors or vc.flavor_fungibility != defaults.flavor_fungibility:
        out["flavors"] = [{"name": q.name, "min": resources_to_json(q.min),
                           "max": q.max.to_dict()} for q in vc.flavors]
        out["flavorFungibility"] = {
            "whenCanBorrow": vc.flavor_fungibility.when_can_borrow.value,
            "whenCanPreempt": vc.flavor_fungibility.when_can_preempt.value}
    return out


def queue_policy_from_json(data: Mapping[str, Any] | None) -> dict[str, Any]:
    """`VirtualCluster` keyword arguments from `queue_policy_to_json`'s output."""
    if data is None:
        return {}
    borrow = data["borrowWithinParent"]
    threshold = borrow.get("maxPriorityThreshold")
    return {"preemption": QueuePreemption(
                WithinQueue(data["withinQueue"]),
                ReclaimWithinParent(data["reclaimWithinParent"]),
                BorrowWithinParent(BorrowPolicy(borrow["policy"]),
                                   None if threshold is None else int(threshold))),
            "borrowing_limit": _limit(data["borrowingLimit"]),
            "lending_limit": _limit(data["lendingLimit"]),
            **_flavors_from_json(data)}


def _flavors_from_json(data: Mapping[str, Any]) -> dict[str, Any]:
    """`flavors` and `flavor_fungibility` keyword arguments; none from a row without them."""
    if "flavors" not in data:
        return {}
    fungibility = data.get("flavorFungibility") or {}
    return {"flavors": tuple(FlavorQuota(str(q["name"]), resources_from_json(q["min"]),
                                         _limit(q["max"])) for q in data["flavors"]),
            "flavor_fungibility": FlavorFungibility(
                WhenCanBorrow(fungibility.get("whenCanBorrow", WhenCanBorrow.BORROW.value)),
                WhenCanPreempt(fungibility.get("whenCanPreempt",
                                               WhenCanPreempt.TRY_NEXT_FLAVOR.value)))}


def resource_flavor_to_row(flavor: ResourceFlavor, row: ResourceFlavorRow | None = None
                           ) -> ResourceFlavorRow:
    row = row or ResourceFlavorRow(name=flavor.name)
    row.node_labels = dict(flavor.node_labels)
    return row


def resource_flavor_from_row(row: ResourceFlavorRow) -> ResourceFlavor:
    return ResourceFlavor(row.name, dict(row.node_labels or {}))


def priority_class_to_row(pc: PriorityClass, row: PriorityClassRow | None = None
                          ) -> PriorityClassRow:
    row = row or PriorityClassRow(name=pc.name)
    row.value = pc.value
    row.description = pc.description
    row.global_default = pc.global_default
    row.preemption_policy = pc.preemption_policy.value
    return row


def priority_class_from_row(row: PriorityClassRow) -> PriorityClass:
    return PriorityClass(name=row.name, value=row.value, description=row.description,
                         global_default=row.global_default,
                         preemption_policy=PreemptionPolicy(
                             row.preemption_policy or PreemptionPolicy.PREEMPT_LOWER_PRIORITY))
