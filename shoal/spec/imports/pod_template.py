"""Kubernetes pod templates (`core/v1` PodTemplateSpec) read as one native task group.

Volcano's tasks, a `batch/v1` Job, a PodGroup's pods and seed 004's Sedna workers all say
what a task runs as a pod template. Shoal runs one command per task, on the host or in the
task group's image, so a template is read as its single container: image, command + args,
env, working directory, requests (limits where no request is given), and the pod's node
selector and node name (pinned through the `kubernetes.io/hostname` label every node
carries).

What a template may say that Shoal cannot honour is refused at its path with the reason:
volumes, several containers, init containers, env from secrets or fields, security
contexts, affinity. What only widens or informs is accepted (and has no effect): tolerations
(Shoal nodes have no taints), container ports (informational in Kubernetes too), host
networking (tasks use the host's network), pull policies, a container's name, termination
message settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shoal.api.objects import HOSTNAME_LABEL
from shoal.spec.errors import DocRef, IssueLog, join_path, quote
from shoal.spec.imports.kube_objects import strings

__all__ = ["HOSTNAME_LABEL", "PodTask", "read_pod_template"]

#: Pod fields read here.
_POD_READ = frozenset({"containers", "nodeSelector", "nodeName", "restartPolicy",
                       "priorityClassName", "schedulerName"})
#: Pod fields accepted with no effect, and why.
_POD_INERT = {
    "tolerations": "Shoal nodes have no taints",
    "hostNetwork": "tasks use the host's network",
    "terminationGracePeriodSeconds": "a stop's grace period is the server's",
    "dnsPolicy": "tasks use the host's resolver",
    "serviceAccountName": "tasks call Shoal with their job's token",
    "imagePullSecrets": "the container runtime's own credentials are used",
}
#: Container fields read here.
_CONTAINER_READ = frozenset({"image", "command", "args", "env", "resources", "workingDir"})
_CONTAINER_INERT = {
    "name": "a task is named by its group and index",
    "ports": "informational, as in Kubernetes",
    "imagePullPolicy": "the container runtime's",
    "terminationMessagePath": "logs are kept whole",
    "terminationMessagePolicy": "logs are kept whole",
}
_RESOURCE_KEYS = frozenset({"requests", "limits"})


@dataclass(frozen=True, slots=True)
class PodTask:
    """What a pod template says about its tasks, as native document fields."""

    group: dict[str, Any]
    """A native task group (`spec.taskGroups[]`) without `name` and `replicas`."""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    restart_policy: str | None = None
    priority_class: str | None = None
    scheduler_name: str | None = None


def read_pod_template(log: IssueLog, doc: DocRef, path: str, template: Any) -> PodTask | None:
    """The task a pod template describes; None when it cannot be read (logged at `path`)."""
    if not isinstance(template, Mapping):
        log.add(doc, path, f"must be a pod template (a mapping with spec), got {quote(template)}")
        return None
    problems = len(log.issues)
    meta = template.get("metadata") or {}
    labels = strings(log, doc, join_path(path, "metadata"), meta, "labels")
    annotations = strings(log, doc, join_path(path, "metadata"), meta, "annotations")
    spec = template.get("spec")
    spec_path = join_path(path, "spec")
    if not isinstance(spec, Mapping):
        log.add(doc, spec_path, "a pod template needs a spec with one container")
        return None
    _refuse_unknown(log, doc, spec_path, spec, _POD_READ, _POD_INERT,
                    "Shoal runs each task as one process (see `shoal.spec.imports.pod_template`)")
    containers = spec.get("containers")
    containers_path = join_path(spec_path, "containers")
    if not isinstance(containers, list) or len(containers) != 1:
        count = len(containers) if isinstance(containers, list) else 0
        log.add(doc, containers_path,
                f"must hold exactly one container: Shoal runs one command per task, got {count}")
        return None
    group = _container(log, doc, join_path(containers_path, 0), containers[0])
    selector = strings(log, doc, spec_path, spec, "nodeSelector")
    node_name = spec.get("nodeName")
    if node_name is not None:
        if not isinstance(node_name, str) or not node_name:
            log.add(doc, join_path(spec_path, "nodeName"),
                    f"must be a node's name, got {quote(node_name)}")
        else:
            selector[HOSTNAME_LABEL] = node_name
    if selector:
        group["nodeSelector"] = selector
    if len(log.issues) > problems:
        return None
    return PodTask(group, labels, annotations,
                   restart_policy=_optional_str(spec.get("restartPolicy")),
                   priority_class=_optional_str(spec.get("priorityClassName")),
                   scheduler_name=_optional_str(spec.get("schedulerName")))


def _container(log: IssueLog, doc: DocRef, path: str, container: Any) -> dict[str, Any]:
    group: dict[str, Any] = {}
    if not isinstance(container, Mapping):
        log.add(doc, path, f"must be a container (a mapping), got {quote(container)}")
        return group
    _refuse_unknown(log, doc, path, container, _CONTAINER_READ, _CONTAINER_INERT,
                    "Shoal cannot honour it for a task")
    image = container.get("image")
    if image is not None:
        group["image"] = image
    command = [*_string_list(log, doc, path, container, "command"),
               *_string_list(log, doc, path, container, "args")]
    if command:
        group["command"] = command
    env = _env(log, doc, join_path(path, "env"), container.get("env"))
    if env:
        group["env"] = env
    if container.get("workingDir") is not None:
        group["workingDir"] = container["workingDir"]
    group["resources"] = _resources(log, doc, join_path(path, "resources"),
                                    container.get("resources"))
    return group


def _resources(log: IssueLog, doc: DocRef, path: str, resources: Any) -> dict[str, Any]:
    """Requests, with limits standing in for a request not given (Kubernetes' own default)."""
    if resources is None:
        return {}
    if not isinstance(resources, Mapping):
        log.add(doc, path, f"must be a mapping of requests and limits, got {quote(resources)}")
        return {}
    for key in resources:
        if key not in _RESOURCE_KEYS:
            log.add(doc, join_path(path, str(key)),
                    "unknown field; Shoal reads requests and limits")
    out: dict[str, Any] = {}
    for key in ("limits", "requests"):  # requests win
        given = resources.get(key) or {}
        if not isinstance(given, Mapping):
            log.add(doc, join_path(path, key), f"must be a mapping, got {quote(given)}")
            continue
        out.update(given)
    return out


def _env(log: IssueLog, doc: DocRef, path: str, env: Any) -> dict[str, str]:
    if env is None:
        return {}
    if not isinstance(env, list):
        log.add(doc, path, f"must be a list of {{name, value}}, got {quote(env)}")
        return {}
    out: dict[str, str] = {}
    for i, item in enumerate(env):
        where = join_path(path, i)
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            log.add(doc, where, f"must be a {{name, value}} mapping, got {quote(item)}")
            continue
        if "valueFrom" in item:
            log.add(doc, join_path(where, "valueFrom"),
                    "is not supported: Shoal has no secrets, config maps or pod fields to read; "
                    "give the value itself")
            continue
        extra = set(item) - {"name", "value"}
        if extra:
            log.add(doc, join_path(where, sorted(map(str, extra))[0]), "unknown field")
            continue
        value = item.get("value", "")
        out[item["name"]] = value if isinstance(value, str) else str(value)
    return out


def _refuse_unknown(log: IssueLog, doc: DocRef, path: str, data: Mapping[Any, Any],
                    read: frozenset[str], inert: Mapping[str, str], why: str) -> None:
    for key in data:
        if key in read or key in inert:
            continue
        log.add(doc, join_path(path, str(key)), f"is not supported: {why}")


def _string_list(log: IssueLog, doc: DocRef, path: str, data: Mapping[Any, Any], key: str
                 ) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        log.add(doc, join_path(path, key), f"must be a list of strings, got {quote(value)}")
        return []
    return list(value)


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
