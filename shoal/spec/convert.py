"""One validated document → the `shoal.api` value objects it declares, with the checks that
need only that document: resource quantities (per resource name; no `pods` but in a node's
capacity, no name with the reserved `flavor.` prefix), allocatable within
capacity, a virtual cluster's min within its max, the gang minimum against the replicas, and
a job's status tasks against its own task groups.

Checks that need other documents (names, references, the quota tree, nodes of status tasks)
live in `shoal.spec.checks`. A conversion logs what it finds and goes on, so that a load
reports everything at once. It returns None only when a quantity the cross-document checks
would read (a node's resources, a virtual cluster's min and max) is unreadable; otherwise it
returns its best reading even after an issue, so that the document's names and references
are still checked. Any issue fails the load, so such an object never leaves it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from shoal.api import (
    FailureAction,
    FailureEvent,
    FixedSizeNode,
    FixedSizeNodes,
    Job,
    JobState,
    Node,
    PriorityClass,
    QuantityError,
    ResourceLimit,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskState,
    VirtualCluster,
    parse_resources,
)
from shoal.api.flavors import FLAVOR_PREFIX, is_flavor_dimension
from shoal.api.objects import COMPLETE_JOB_POLICY, HOSTNAME_LABEL
from shoal.api.objects import job_virtual_cluster as job_virtual_cluster_name
from shoal.api.resources import PODS, ZERO, canonical_name, of_amounts, parse_quantity
from shoal.api.resources import total as total_of
from shoal.spec.checkpoint_fields import checkpoint_interval, time_limit
from shoal.spec.cluster_documents import (
    FixedSizeNodesSpec,
    NodeDocument,
    PriorityClassDocument,
    VirtualClusterDocument,
)
from shoal.spec.document_types import INT64_MAX
from shoal.spec.documents import JobDocument, TaskGroupSpec
from shoal.spec.elastic import elasticity
from shoal.spec.errors import DocRef, IssueLog, join_path, quote
from shoal.spec.fairshare_fields import freezing_window
from shoal.spec.flavors import flavor_quotas
from shoal.spec.queue_fields import group_minimums, preemptable, queue_settings
from shoal.spec.scheduling_policy import flattened
from shoal.spec.services import SERVICE_PRIORITY_CLASS, reserved_within, service
from shoal.spec.user_fields import max_per_user

_SCHEDULERS = {
    None: SchedulerName.DEFAULT,
    "default": SchedulerName.DEFAULT,
    "shoal": SchedulerName.SHOAL,
    # Seed 004 names Volcano; Shoal is its own gang scheduler, so the two mean the same.
    "volcano": SchedulerName.SHOAL,
}


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Declared(Generic[T]):
    """A converted object with the document it came from, for cross-document messages."""

    doc: DocRef
    value: T


def _parse_each(log: IssueLog, doc: DocRef, path: str,
                mapping: Mapping[str, int | float | str]) -> dict[str, int] | None:
    """Each quantity in its canonical unit, keyed by canonical name; None after an issue."""
    parsed: dict[str, int] = {}
    first_key: dict[str, str] = {}
    ok = True
    for key, value in mapping.items():
        where = join_path(path, key)
        try:
            name = canonical_name(key)
            amount = parse_quantity(name, value)
        except QuantityError as exc:
            log.add(doc, where, _without_subject(str(exc), key))
            ok = False
            continue
        if is_flavor_dimension(name):
            log.add(doc, where, _FLAVOR_RESERVED)
            ok = False
            continue
        if amount > INT64_MAX:
            log.add(doc, where, f"is too large: {amount.bit_length()} bits in its unit, more "
                                f"than the 63 any quantity may have")
            ok = False
            continue
        if name in parsed:
            log.add(doc, where, f"resource {name!r} is already given as {first_key[name]!r}")
            ok = False
            continue
        parsed[name] = amount
        first_key[name] = key
    return parsed if ok else None


_FLAVOR_RESERVED = (
    f"is not a resource name Shoal accepts: names starting with {FLAVOR_PREFIX!r} are kept "
    f"for the amounts it counts per resource flavor (give a flavor's quota in "
    f"spec.flavors[].min/max with plain names, and declare its nodes with a ResourceFlavor)")
"""Why a declared `flavor.…` name is refused: the core counts a flavor's amounts in dimensions
of that name (`shoal.api.flavors`), so a declared one would be taken for a flavor's."""


def _without_subject(message: str, key: str) -> str:
    # parse_quantity starts its messages with the resource name, which the path already shows.
    subjects = [key]
    with contextlib.suppress(QuantityError):
        subjects.append(canonical_name(key))
    for subject in subjects:
        if message.startswith(subject + " "):
            return message[len(subject) + 1:]
    return message


def resources(log: IssueLog, doc: DocRef, path: str,
              mapping: Mapping[str, int | float | str], task_limit: bool = False
              ) -> Resources | None:
    """A quantity mapping → `Resources`, or None after logging what is wrong with it.
    `task_limit`: a node's capacity, the one place `pods` may be named."""
    parsed = _parse_each(log, doc, path, mapping)
    if parsed is None:
        return None
    if not task_limit and not _no_pods(log, doc, path, mapping):
        return None
    try:  # what `parse_resources(mapping)` makes, from the amounts already parsed
        return of_amounts(parsed)
    except QuantityError as exc:  # pragma: no cover - every case is caught key by key above
        log.add(doc, path, str(exc))
        return None


def limit(log: IssueLog, doc: DocRef, path: str,
          mapping: Mapping[str, int | float | str] | None) -> ResourceLimit | None:
    if mapping is None:
        return ResourceLimit.unlimited()
    parsed = _parse_each(log, doc, path, mapping)
    if parsed is None or not _no_pods(log, doc, path, mapping):
        return None
    return ResourceLimit.of(parsed)


def _no_pods(log: IssueLog, doc: DocRef, path: str,
             mapping: Mapping[str, int | float | str]) -> bool:
    """`pods` is a node's task limit, counted one per task, not something a task asks for or
    a quota divides (Kubernetes' ResourceQuota and Kueue can count pods; Shoal does not)."""
    if PODS not in mapping:
        return True
    log.add(doc, join_path(path, PODS),
            "is a node's task limit (a node's capacity.pods), not a resource: every task "
            "counts one against its node's, so a task cannot request it nor a quota limit it")
    return False


# ---- Node ---------------------------------------------------------------------------------

def nodes(log: IssueLog, doc: DocRef, model: NodeDocument) -> tuple[Node, ...] | None:
    spec = model.spec
    capacity = resources(log, doc, "spec.capacity", spec.capacity, task_limit=True)
    allocatable = (None if spec.allocatable is None
                   else resources(log, doc, "spec.allocatable", spec.allocatable,
                                  task_limit=True))
    if capacity is None or (spec.allocatable is not None and allocatable is None):
        return None
    if allocatable is not None and not allocatable.fits(capacity):
        over = ", ".join(
            f"{dim} {allocatable.get(dim)} > {capacity.get(dim)}"
            for dim in allocatable.shortfall(capacity))
        log.add(doc, "spec.allocatable", f"must fit in capacity; over in {over}")
    reserved = ZERO
    if model.status is not None and model.status.reserved:
        found = resources(log, doc, "status.reserved", model.status.reserved)
        if found is None:
            return None
        reserved = found
        reserved_within(log, doc, reserved, allocatable or capacity)
    name = model.metadata.name
    names = [name] if spec.count == 1 else [f"{name}-{i}" for i in range(spec.count)]
    pinned = model.metadata.labels.get(HOSTNAME_LABEL)
    if pinned is not None and (spec.count > 1 or pinned != name):
        log.add(doc, f"metadata.labels.{HOSTNAME_LABEL}",
                f"is every node's own name, set by Shoal: remove it (got {quote(pinned)} on "
                f"node {', '.join(names[:2])}{', ...' if len(names) > 2 else ''})")
    return tuple(
        Node(name=n, capacity=capacity, labels=dict(model.metadata.labels),
             allocatable=allocatable, schedulable=not spec.unschedulable, reserved=reserved)
        for n in names)


# ---- VirtualCluster -----------------------------------------------------------------------

def virtual_cluster(log: IssueLog, doc: DocRef,
                    model: VirtualClusterDocument) -> VirtualCluster | None:
    spec = model.spec
    min_path, min_given = _either(log, doc, "flexibleResourceMin", spec.flexible_resource_min,
                                  "min", spec.min)
    max_path, max_given = _either(log, doc, "flexibleResourceMax", spec.flexible_resource_max,
                                  "max", spec.max)
    found = _flexible_and_fixed(log, doc, (min_path, min_given), (max_path, max_given),
                                "spec.fixedSizeNodes", spec.fixed_size_nodes)
    settings = queue_settings(log, doc, spec, None if found is None else found[0],
                              lambda path, value: limit(log, doc, path, value))
    flavors, fungibility = flavor_quotas(
        log, doc, spec, lambda path, value: resources(log, doc, path, value),
        lambda path, value: limit(log, doc, path, value))
    per_user = max_per_user(
        log, doc, spec, None if found is None else found[1].raised_by(
            total_of(g.resources for g in found[2])),
        lambda path, value: limit(log, doc, path, value))
    if found is None:
        return None
    minimum, maximum, groups = found
    return VirtualCluster(name=model.metadata.name, parent=spec.parent, min=minimum,
                          max=maximum, weight=spec.weight, queueing=spec.queueing_policy,
                          fixed_size_nodes=groups,
                          idle_timeout=float(spec.flexible_idle_timeout),
                          state=settings.state, priority=settings.priority,
                          preemption=settings.preemption,
                          borrowing_limit=settings.borrowing_limit,
                          lending_limit=settings.lending_limit,
                          flavors=flavors, flavor_fungibility=fungibility,
                          max_per_user=per_user)


def job_virtual_cluster(log: IssueLog, doc: DocRef, model: JobDocument
                        ) -> VirtualCluster | None:
    """The job's own virtual cluster, named for the job and placed in its queue."""
    spec = model.spec.virtual_cluster
    if spec is None:
        return None
    path = "spec.virtualCluster"
    found = _flexible_and_fixed(
        log, doc, (f"{path}.flexibleResourceMin", spec.flexible_resource_min),
        (f"{path}.flexibleResourceMax", spec.flexible_resource_max),
        f"{path}.fixedSizeNodes", spec.fixed_size_nodes)
    if found is None:
        return None
    minimum, maximum, groups = found
    return VirtualCluster(name=job_virtual_cluster_name(model.metadata.name),
                          parent=model.spec.queue, min=minimum, max=maximum,
                          fixed_size_nodes=groups,
                          idle_timeout=float(spec.flexible_idle_timeout))


Given = tuple[str, Mapping[str, int | float | str] | None]
"""A field's path and its value as written (None: not given)."""


def _flexible_and_fixed(log: IssueLog, doc: DocRef, min_given: Given, max_given: Given,
                        fixed_path: str, fixed: list[FixedSizeNodesSpec]
                        ) -> tuple[Resources, ResourceLimit, tuple[FixedSizeNodes, ...]] | None:
    """A virtual cluster's flexible minimum and maximum and its fixed-size nodes, checked
    (the minimum within the maximum); None, with the problems logged, if any is wrong."""
    min_path, max_path = min_given[0], max_given[0]
    minimum = resources(log, doc, min_path, min_given[1] or {})
    maximum = limit(log, doc, max_path, max_given[1])
    groups = fixed_size_nodes(log, doc, fixed_path, fixed)
    if minimum is None or maximum is None or groups is None:
        return None
    if not maximum.admits(minimum):
        over = ", ".join(f"{dim} {minimum.get(dim)} > {maximum.get(dim)}"
                         for dim in maximum.exceeded(minimum))
        log.add(doc, min_path, f"must fit in this virtual cluster's {max_path.split('.')[-1]}; "
                f"over in {over}")
    return minimum, maximum, groups


def _either(log: IssueLog, doc: DocRef, name: str, value: Mapping[str, int | float | str] | None,
            old_name: str, old_value: Mapping[str, int | float | str] | None
            ) -> tuple[str, Mapping[str, int | float | str] | None]:
    """Seed 003's field or its older Shoal name: the path to report under, and the value."""
    if value is not None and old_value is not None:
        log.add(doc, f"spec.{old_name}", f"is the older name of {name}: give one of them")
    if old_value is not None and value is None:
        return f"spec.{old_name}", old_value
    return f"spec.{name}", value


def fixed_size_nodes(log: IssueLog, doc: DocRef, at: str, specs: list[FixedSizeNodesSpec]
                     ) -> tuple[FixedSizeNodes, ...] | None:
    groups: list[FixedSizeNodes] = []
    ok = True
    for g, group in enumerate(specs):
        nodes: list[FixedSizeNode] = []
        for n, node in enumerate(group.nodes):
            path = f"{at}[{g}].nodes[{n}].resources"
            size = resources(log, doc, path, node.resources)
            if size is None:
                ok = False
            elif size.is_zero():
                log.add(doc, path, "must ask for some resource; a virtual node of size zero "
                                   "holds nothing")
                ok = False
            else:
                nodes.append(FixedSizeNode(size, dict(node.labels)))
        groups.append(FixedSizeNodes(tuple(nodes), group.scheduling_policy))
    return tuple(groups) if ok else None


# ---- PriorityClass ------------------------------------------------------------------------

def priority_class(model: PriorityClassDocument) -> PriorityClass:
    return PriorityClass(name=model.metadata.name, value=model.value,
                         description=model.description, global_default=model.global_default,
                         preemption_policy=model.preemption_policy)


# ---- Job ----------------------------------------------------------------------------------

def job(log: IssueLog, doc: DocRef, model: JobDocument, position: int) -> Job:
    """`position` is the job's place among the load's Job documents: its default submit time.
    A group whose resources are unreadable is given none, for the cross-document checks.
    `spec.schedulingPolicy` is read as the flat fields it gathers."""
    start = len(log.issues)
    flat = flattened(log, doc, model)
    converted = _job(log, doc, flat.model, position)
    flat.relocate(log, start)
    return converted


def _job(log: IssueLog, doc: DocRef, model: JobDocument, position: int) -> Job:
    spec = model.spec
    groups: list[TaskGroup] = []
    seen: set[str] = set()
    for i, g in enumerate(spec.task_groups):
        path = f"spec.taskGroups[{i}]"
        if g.name in seen:
            log.add(doc, f"{path}.name", f"task group {g.name!r} is declared twice in this job")
        seen.add(g.name)
        request = resources(log, doc, f"{path}.resources", g.resources)
        group_min = None if g.completion is None else g.completion.min_succeeded
        if group_min is not None and group_min > g.replicas:
            log.add(doc, f"{path}.completion.minSucceeded",
                    f"must be at most the group's replicas ({g.replicas}), got {group_min}")
        groups.append(TaskGroup(
            name=g.name, replicas=g.replicas, resources=ZERO if request is None else request,
            command=tuple(g.command),
            env=dict(g.env), node_selector=dict(g.node_selector), working_dir=g.working_dir,
            task_retry_count=g.task_retry_count, min_succeeded=group_min,
            policies=_policies(log, doc, f"{path}.policies", g),
            min_available=g.min_available, min_count=g.min_count,
            completes_job=_completes_job(log, doc, f"{path}.policies", g), image=g.image))
    min_resources = (None if spec.min_resources is None
                     else resources(log, doc, "spec.minResources", spec.min_resources))
    scheduler = _SCHEDULERS[spec.scheduler_name]
    if spec.min_available is not None:
        replicas = sum(g.replicas for g in spec.task_groups)
        if scheduler is not SchedulerName.SHOAL:
            log.add(doc, "spec.minAvailable",
                    "is only allowed with schedulerName shoal or volcano (gang scheduling); "
                    f"schedulerName is {spec.scheduler_name or 'not set (default)'}")
        elif spec.min_available > replicas:
            log.add(doc, "spec.minAvailable",
                    f"must be at most the job's total replicas ({replicas}), "
                    f"got {spec.min_available}")
    completion = spec.completion
    total = sum(g.replicas for g in spec.task_groups)
    for key, value in (("minSucceeded", None if completion is None else completion.min_succeeded),
                       ("minFailed", None if completion is None else completion.min_failed)):
        if value is not None and value > total:
            log.add(doc, f"spec.completion.{key}",
                    f"must be at most the job's total replicas ({total}), got {value}")
    tasks = _tasks(log, doc, model)
    elastic, protect_for = elasticity(log, doc, model, groups)
    served, sized = service(log, doc, model, groups)
    elastic = elastic if sized is None else sized
    _check_gang_restarts(log, doc, model, scheduler, elastic is not None)
    group_minimums(log, doc, model, scheduler is SchedulerName.SHOAL, elastic)
    meta = model.metadata
    priority_class = spec.priority_class_name
    if served is not None and priority_class is None:
        priority_class = SERVICE_PRIORITY_CLASS
    job = Job(
        name=meta.name, groups=tuple(groups), queue=spec.queue, scheduler_name=scheduler,
        min_available=spec.min_available, min_resources=min_resources,
        priority_class=priority_class, user=meta.user,
        submitted=float(position) if meta.creation_timestamp is None else meta.creation_timestamp,
        min_succeeded=None if completion is None else completion.min_succeeded,
        min_failed=None if completion is None else completion.min_failed,
        job_retry_count=spec.job_retry_count, tasks=tasks,
        virtual_cluster=job_virtual_cluster(log, doc, model), elastic=elastic,
        protect_for=protect_for,
        preemptable=preemptable(log, doc, model) and served is None, service=served,
        freezing_window=freezing_window(log, doc, model),
        checkpoint_interval=checkpoint_interval(log, doc, model),
        annotations=dict(meta.annotations), labels=dict(meta.labels),
        time_limit=time_limit(log, doc, model), depends_on=tuple(spec.depends_on),
        held=spec.hold)
    # Running means the gang minimum, each group's own included, is bound or running
    # (JobState.RUNNING); a task that is releasing is on its way out and does not count.
    running = (t for t in tasks if t.state in (TaskState.BOUND, TaskState.RUNNING))
    return dataclasses.replace(job, state=JobState.RUNNING) if job.gang_met(running) else job


def _policies(log: IssueLog, doc: DocRef, path: str, group: TaskGroupSpec
              ) -> dict[FailureEvent, FailureAction]:
    """A task group's `policies`, one action per event (a second one for an event is an
    error naming it)."""
    out: dict[FailureEvent, FailureAction] = {}
    for i, policy in enumerate(group.policies):
        if policy.event == COMPLETE_JOB_POLICY[0] or policy.action == COMPLETE_JOB_POLICY[1]:
            continue  # `_completes_job`'s
        event = FailureEvent(policy.event)
        if event in out:
            log.add(doc, f"{path}[{i}].event", f"{event} is given twice in this group")
        out[event] = FailureAction(policy.action)
    return out


def _completes_job(log: IssueLog, doc: DocRef, path: str, group: TaskGroupSpec) -> bool:
    """Whether the group has Volcano's `TaskCompleted → CompleteJob` policy. Each of the two
    goes with the other only: a bad end never completes a job, nor does a completion restart
    anything."""
    found = False
    for i, policy in enumerate(group.policies):
        event_completes = policy.event == COMPLETE_JOB_POLICY[0]
        if event_completes != (policy.action == COMPLETE_JOB_POLICY[1]):
            log.add(doc, f"{path}[{i}].action",
                    f"{policy.event} takes CompleteJob only" if event_completes
                    else f"CompleteJob answers TaskCompleted only, not {policy.event}")
        elif event_completes:
            if found:
                log.add(doc, f"{path}[{i}].event", "TaskCompleted is given twice in this group")
            found = True
    return found


def _check_gang_restarts(log: IssueLog, doc: DocRef, model: JobDocument,
                         scheduler: SchedulerName, elastic: bool) -> None:
    """A policy that asks for RestartGang needs a rigid gang (`completion.restarts_whole`'s
    rule): only such a job is placed, and restarted, as one."""
    spec = model.spec
    restarts = [(i, j) for i, group in enumerate(spec.task_groups)
                for j, policy in enumerate(group.policies)
                if policy.action == FailureAction.RESTART_GANG.value]
    if not restarts:  # the common case: no reason to spell out
        return
    why = ("the job is elastic (it goes on at a smaller size)" if elastic
           else f"schedulerName is {spec.scheduler_name or 'default'} (no gang)"
           if scheduler is not SchedulerName.SHOAL
           else "minAvailable is 1 (no gang)" if spec.min_available == 1
           else "the job has one task" if sum(g.replicas for g in spec.task_groups) == 1
           else None)
    if why is None:
        return
    for i, j in restarts:
        log.add(doc, f"spec.taskGroups[{i}].policies[{j}].action",
                f"RestartGang needs a rigid gang, but {why}")


def _tasks(log: IssueLog, doc: DocRef, model: JobDocument) -> tuple[Task, ...]:
    if model.status is None:
        return ()
    groups = {g.name: g for g in model.spec.task_groups}
    seen: dict[tuple[str, int], int] = {}
    out: list[Task] = []
    for i, t in enumerate(model.status.tasks):
        path = f"status.tasks[{i}]"
        group = groups.get(t.group)
        problems: list[tuple[str, str]] = []
        if group is None:
            problems.append((f"{path}.group", f"task group {t.group!r} is not declared in "
                             f"spec.taskGroups (declared: {', '.join(groups)})"))
        elif t.index >= group.replicas:
            problems.append((f"{path}.index", f"must be below the replicas of group "
                             f"{t.group!r} ({group.replicas}), got {t.index}"))
        elif (t.group, t.index) in seen:
            problems.append((path, f"task {t.group}/{t.index} is already given as "
                             f"status.tasks[{seen[(t.group, t.index)]}]"))
        seen.setdefault((t.group, t.index), i)
        if t.node is None and t.state.holds_resources:
            problems.append((f"{path}.node", f"a {t.state.value} task must name its node"))
        if t.gpus is not None:
            request = None if group is None else group.resources
            problems.extend(_gpu_problems(path, t.gpus, t.node, request))
        for where, message in problems:
            log.add(doc, where, message)
        out.append(Task(job=model.metadata.name, group=t.group, index=t.index, state=t.state,
                        node=t.node, gpus=tuple(t.gpus or ()), started=t.start_time))
    return tuple(out)


def _gpu_problems(path: str, gpus: list[int], node: str | None,
                  request: Mapping[str, int | float | str] | None) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if node is None:
        problems.append((f"{path}.gpus", "GPU indices need a node"))
    if len(set(gpus)) != len(gpus):
        problems.append((f"{path}.gpus", f"must not repeat a GPU index, got {gpus}"))
    if request is not None:
        try:
            wanted = parse_resources(request).gpu
        except QuantityError:
            return problems  # the group's own resources already carry that issue
        if len(gpus) != wanted:
            problems.append((f"{path}.gpus", f"must list as many GPUs as the group requests "
                             f"({wanted}), got {len(gpus)}"))
    return problems
