"""An OpenPAI protocol-v2 job (`protocolVersion: 2`) lowered to one native Job.

Each task role is a task group (its name made a DNS label: `train_worker` → `train-worker`):
`instances` → replicas, `resourcePerInstance {cpu, memoryMB, gpu}` → resources,
`taskRetryCount`, `completion.minSucceededInstances` → the group's `completion.minSucceeded`,
the `dockerimage` prerequisite its `dockerImage` names → the group's `image`, and `commands`
(with the default deployment's `preCommands`/`postCommands` around them, `<% $parameters.x
%>`, `$script`, `$output` and `$data` rendered) → `bash -c` of the lines joined, as OpenPAI's
runtime runs them. `jobRetryCount`, `defaults.virtualCluster` → queue, `description`,
`version`, `contributor` and `extras.submitFrom` → annotations; `extras.gangAllocation`
(default true) → a gang; `extras.hivedScheduler.jobPriorityClass` → a built-in priority
class, its per-role `skuType` → the node selector `gpu-type`. The `PAI_*` variables OpenPAI
gives a task that need only the document are in its environment, with the per-task index.

Refused, with why: `secrets` (Shoal keeps no secrets: they would be stored and shown in the
clear), registry `auth`, runtime plugins and storages (`com.microsoft.pai.runtimeplugin`,
`storages`: they run inside OpenPAI's containers), prerequisites that need a plugin,
`ports`, `extraContainerOptions`, `minFailedInstances` other than 1 where Shoal cannot
count it per role, and any other `extras` key. A `protocolVersion: super-2` document is a
multi-cluster job and is not claimed here (`shoal mc`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from shoal.api import GPU_TYPE_LABEL
from shoal.spec.errors import DocRef, IssueLog, join_path, quote
from shoal.spec.imports import Foreign, ImportFormat, Lowered, Original, lower_each
from shoal.spec.imports.openpai_fields import (
    PaiJobSpec,
    PaiPrerequisiteSpec,
    PaiRole,
    TemplateError,
    render,
)
from shoal.spec.messages import validated
from shoal.spec.multicluster import RUNTIME_PLUGINS

ANNOTATION_PREFIX = "openpai.microsoft.com/"
HIVED = "hivedScheduler"
#: HiveD's job priority classes and the built-in Shoal class each becomes.
PRIORITY_CLASSES = {"crit": "production", "prod": "production", "test": "normal",
                    "oppo": "experiment"}
_NOT_LABEL = re.compile(r"[^a-z0-9-]+")
Problems = list[tuple[str, str]]


class OpenPaiImporter:
    """`protocolVersion: 2` (or `'2'`); `super-2` stays a multi-cluster job."""

    format = ImportFormat.OPENPAI

    def claims(self, data: Any) -> bool:
        return isinstance(data, Mapping) and data.get("protocolVersion") in (2, "2") \
            and not isinstance(data.get("protocolVersion"), bool)

    def lower(self, log: IssueLog, docs: Sequence[Foreign]) -> list[Lowered]:
        return lower_each(log, docs, lower_openpai)


def lower_openpai(log: IssueLog, doc: DocRef, data: Mapping[str, Any]) -> Lowered | None:
    """The native Job of one protocol-v2 job; None (after logging why) if it has none."""
    job = validated(log, doc, PaiJobSpec, data)
    if job is None:
        return None
    problems: Problems = []
    paths: dict[str, str] = {"metadata.name": "name", "spec.queue": "defaults.virtualCluster",
                             "spec.jobRetryCount": "jobRetryCount"}
    if job.secrets:
        problems.append(("secrets", "Shoal keeps no secrets: a job's values are stored and "
                                    "shown in the clear; pass credentials to the task "
                                    "another way (a file on the node)"))
    spec: dict[str, Any] = {"jobRetryCount": job.job_retry_count}
    spec.update(_extras(job, problems, paths))
    if job.defaults.virtual_cluster is not None:
        spec["queue"] = job.defaults.virtual_cluster
    groups = _groups(job, problems, paths)
    if problems or groups is None:
        for path, message in problems:
            log.add(doc, path, message)
        return None
    spec["taskGroups"] = groups
    if sum(g["replicas"] for g in groups) > 1 and job.extras.get("gangAllocation", True):
        spec["schedulerName"] = "shoal"
    minimum_failed = _min_failed(job, problems)
    if minimum_failed is not None:
        spec["completion"] = {"minFailed": minimum_failed}
        (role,) = job.task_roles
        paths["spec.completion.minFailed"] = (f"{join_path('taskRoles', role)}.completion."
                                              f"minFailedInstances")
    for path, message in problems:
        log.add(doc, path, message)
    if problems:
        return None
    metadata: dict[str, Any] = {"name": job.name}
    annotations = _annotations(job)
    if annotations:
        metadata["annotations"] = annotations
    document = {"apiVersion": "shoal/v1", "kind": "Job", "metadata": metadata, "spec": spec}
    return Lowered(doc, Original(ImportFormat.OPENPAI, dict(data)), (document,), paths)


def _annotations(job: PaiJobSpec) -> dict[str, str]:
    out = {f"{ANNOTATION_PREFIX}{key}": str(value) for key, value in (
        ("description", job.description), ("version", job.version),
        ("contributor", job.contributor), ("submitFrom", job.extras.get("submitFrom")))
        if value is not None}
    return out


def _extras(job: PaiJobSpec, problems: Problems, paths: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for key, value in job.extras.items():
        path = join_path("extras", key)
        if key == "submitFrom" and isinstance(value, str):
            continue
        if key == "gangAllocation" and isinstance(value, bool):
            continue
        if key == HIVED and isinstance(value, Mapping):
            priority = value.get("jobPriorityClass")
            if priority is not None:
                if not isinstance(priority, str) or priority not in PRIORITY_CLASSES:
                    problems.append((join_path(path, "jobPriorityClass"), f"must be one of "
                                     f"{', '.join(PRIORITY_CLASSES)}, got {quote(priority)}"))
                else:
                    spec["priorityClassName"] = PRIORITY_CLASSES[priority]
                    paths["spec.priorityClassName"] = join_path(path, "jobPriorityClass")
            for other in value:
                if other not in ("jobPriorityClass", "taskRoles"):
                    problems.append((join_path(path, str(other)), "is not supported by "
                                     "Shoal; supported: jobPriorityClass, taskRoles.<role>."
                                     "skuType"))
            _hived_roles(job, value.get("taskRoles", {}), join_path(path, "taskRoles"),
                         problems)
            continue
        why = ("runtime plugins run inside OpenPAI's containers; Shoal runs none"
               if key == RUNTIME_PLUGINS else
               "storages are mounted by OpenPAI's runtime; Shoal mounts none"
               if key == "storages" else
               "is not supported by Shoal; supported: submitFrom, gangAllocation, "
               "hivedScheduler")
        problems.append((path, why))
    return spec


def _hived_roles(job: PaiJobSpec, roles: Any, path: str, problems: Problems) -> None:
    """HiveD's per-role settings: a `skuType` (a string) per declared role, nothing else."""
    if not isinstance(roles, Mapping):
        problems.append((path, f"must be a mapping of task roles, got {quote(roles)}"))
        return
    for role, settings in roles.items():
        where = join_path(path, str(role))
        if role not in job.task_roles:
            problems.append((where, f"names no task role; declared: "
                                    f"{', '.join(job.task_roles)}"))
        elif not isinstance(settings, Mapping):
            problems.append((where, f"must be a mapping, got {quote(settings)}"))
        else:
            for key, value in settings.items():
                if key != "skuType":
                    problems.append((join_path(where, str(key)), "is not supported by "
                                     "Shoal (no affinity groups); supported: skuType"))
                elif not isinstance(value, str):
                    problems.append((join_path(where, key), f"must be a string, got "
                                                            f"{quote(value)}"))


def _role_label(role: str) -> str:
    return _NOT_LABEL.sub("-", role.lower()).strip("-")


def _groups(job: PaiJobSpec, problems: Problems, paths: dict[str, str]
            ) -> list[dict[str, Any]] | None:
    prerequisites = {p.name: p for p in job.prerequisites}
    for i, p in enumerate(job.prerequisites):
        if p.auth is not None:
            problems.append((f"prerequisites[{i}].auth", "registry credentials are not "
                             "supported: Shoal keeps no secrets; make the image pullable "
                             "without them"))
        if p.plugin is not None or p.require:
            problems.append((f"prerequisites[{i}].plugin", "prerequisites handled by a "
                             "runtime plugin are not supported: Shoal runs none"))
    deployment = _deployment(job, problems)
    seen: dict[str, str] = {}
    groups: list[dict[str, Any]] = []
    hived = job.extras.get(HIVED)
    hived_roles = hived.get("taskRoles") if isinstance(hived, Mapping) else None
    for index, (role_name, role) in enumerate(job.task_roles.items()):
        base = join_path("taskRoles", role_name)
        label = _role_label(role_name)
        if not label or label in seen:
            problems.append((base, f"becomes the task group name {quote(label)}, "
                                   + (f"as {seen[label]!r} does" if label in seen else
                                      "which is no DNS label")))
            continue
        seen[label] = role_name
        group = _group(job, role_name, role, label, base, prerequisites,
                       deployment.get(role_name), problems)
        settings = hived_roles.get(role_name) if isinstance(hived_roles, Mapping) else None
        sku = settings.get("skuType") if isinstance(settings, Mapping) else None
        if isinstance(sku, str):  # anything else is refused by _hived_roles
            group["nodeSelector"] = {GPU_TYPE_LABEL: sku}
        native = f"spec.taskGroups[{index}]"
        paths.update({
            native: base, f"{native}.name": base,
            f"{native}.replicas": f"{base}.instances",
            f"{native}.resources.cpu": f"{base}.resourcePerInstance.cpu",
            f"{native}.resources.memory": f"{base}.resourcePerInstance.memoryMB",
            f"{native}.resources.gpu": f"{base}.resourcePerInstance.gpu",
            f"{native}.command": f"{base}.commands",
            f"{native}.taskRetryCount": f"{base}.taskRetryCount",
            f"{native}.completion": f"{base}.completion.minSucceededInstances",
            f"{native}.image": f"{base}.dockerImage",
            f"{native}.nodeSelector": join_path(join_path(join_path(
                "extras", HIVED), "taskRoles"), role_name) + ".skuType",
        })
        groups.append(group)
    return groups if len(groups) == len(job.task_roles) else None


def _deployment(job: PaiJobSpec, problems: Problems) -> dict[str, tuple[list[str], list[str]]]:
    """preCommands and postCommands per role of the default deployment."""
    wanted = job.defaults.deployment
    if wanted is None:
        return {}
    for deployment in job.deployments:
        if deployment.name == wanted:
            return {role: (c.pre_commands, c.post_commands)
                    for role, c in deployment.task_roles.items()}
    problems.append(("defaults.deployment", f"names no deployment: {quote(wanted)}; "
                     f"declared: {', '.join(d.name for d in job.deployments) or 'none'}"))
    return {}


def _group(job: PaiJobSpec, role_name: str, role: PaiRole, label: str, base: str,
           prerequisites: Mapping[str, PaiPrerequisiteSpec],
           around: tuple[list[str], list[str]] | None, problems: Problems
           ) -> dict[str, Any]:
    resources = role.resource_per_instance
    if resources.ports:
        problems.append((f"{base}.resourcePerInstance.ports", "named ports are not "
                         "supported: each task gets one port, SHOAL_TASK_PORT"))
    if role.extra_container_options is not None:
        problems.append((f"{base}.extraContainerOptions", "container options (shared "
                         "memory, InfiniBand) are not supported by Shoal"))
    for i, name in enumerate(role.prerequisites):
        if name not in prerequisites or prerequisites[name].type != "dockerimage":
            problems.append((f"{base}.prerequisites[{i}]", "only dockerimage prerequisites "
                             "are supported: the others are handled by OpenPAI's runtime"))
    context: dict[str, Any] = {"parameters": job.parameters}
    for field in ("script", "output", "data"):
        named = getattr(role, field)
        if named is None:
            continue
        found = prerequisites.get(named)
        if found is None or found.type != field:
            problems.append((f"{base}.{field}", f"must name a prerequisite of type {field}, "
                                                f"got {quote(named)}"))
        else:
            context[field] = found.model_dump(exclude_none=True)
    pre, post = around or ([], [])
    lines: list[str] = []
    for where, commands in (("preCommands", pre), ("commands", role.commands),
                            ("postCommands", post)):
        for i, line in enumerate(commands):
            path = f"{base}.commands[{i}]" if where == "commands" else (
                f"deployments.{join_path('taskRoles', role_name)}.{where}[{i}]")
            try:
                lines.append(render(line, context).strip())
            except TemplateError as exc:
                problems.append((path, str(exc)))
    group: dict[str, Any] = {
        "name": label, "replicas": role.instances,
        "resources": {"cpu": resources.cpu, "memory": f"{resources.memory_mb}Mi",
                      "gpu": resources.gpu},
        "command": ["/bin/sh", "-c", 'export PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX='
                    '"$SHOAL_TASK_INDEX" PAI_TASK_INDEX="$SHOAL_TASK_INDEX"; exec "$@"',
                    "openpai-task", "bash", "-c", "\n".join(lines).strip()],
        "env": _env(job, role_name),
        "taskRetryCount": role.task_retry_count,
    }
    if role.docker_image is not None:
        image = prerequisites.get(role.docker_image)
        if image is None or image.type != "dockerimage" or not isinstance(image.uri, str):
            problems.append((f"{base}.dockerImage", f"must name a prerequisite of type "
                             f"dockerimage with a uri; declared: "
                             f"{', '.join(sorted(prerequisites)) or 'none'}"))
        else:
            group["image"] = image.uri
    completion = role.completion
    if completion is not None and completion.min_succeeded_instances is not None:
        if completion.min_succeeded_instances < 1:
            problems.append((f"{base}.completion.minSucceededInstances", "must be at least "
                             f"1 (or null), got {completion.min_succeeded_instances}"))
        else:
            group["completion"] = {"minSucceeded": completion.min_succeeded_instances}
    return group


def _env(job: PaiJobSpec, role_name: str) -> dict[str, str]:
    env = {"PAI_JOB_NAME": job.name, "PAI_CURRENT_TASK_ROLE_NAME": role_name,
           "PAI_TASK_ROLE_COUNT": str(len(job.task_roles)),
           "PAI_TASK_ROLE_LIST": ",".join(job.task_roles)}
    env.update({f"PAI_TASK_ROLE_TASK_COUNT_{name}": str(role.instances)
                for name, role in job.task_roles.items()})
    return env


def _min_failed(job: PaiJobSpec, problems: Problems) -> int | None:
    """`minFailedInstances` as Shoal's job-wide `completion.minFailed`: exact for one role,
    and for several only at its default, 1 (Shoal counts failures over the whole job)."""
    given = {name: role.completion.min_failed_instances
             for name, role in job.task_roles.items()
             if role.completion is not None
             and role.completion.min_failed_instances not in (None, 1)}
    for name, value in given.items():
        path = f"{join_path('taskRoles', name)}.completion.minFailedInstances"
        if value is not None and value < 1:
            problems.append((path, f"{value} (never fail) is not supported: a Shoal job "
                                   f"fails once a task has failed past its retries, unless "
                                   f"completion.minFailed says more"))
        elif len(job.task_roles) > 1:
            problems.append((path, "a threshold other than 1 is supported for a job of one "
                                   "task role only: Shoal counts failed tasks over the "
                                   "whole job"))
    if len(job.task_roles) == 1 and given and not problems:
        return next(iter(given.values()))
    return None


OPENPAI = OpenPaiImporter()
