"""What seed 004's four Sedna kinds share, for `shoal.spec.imports.sedna_kinds`: the names
of the kinds, each document's header (name, labels, annotations, `schedulerName`,
`schedulingPolicy`), a worker read from its pod template and placed by its pin or its
role, Sedna's references to models and datasets, and the lowered job with its paths
mapped back to the original's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shoal.api.objects import NODE_ROLE_LABEL, NodeRole
from shoal.spec.errors import DocRef, IssueLog, join_path, quote
from shoal.spec.imports import ImportFormat, Lowered, Original
from shoal.spec.imports.pod_template import read_pod_template

SEDNA_API_VERSION = "sedna.io/v1alpha1"
#: Sedna's kinds, as Sedna spells them, and seed 004's spelling of the lifelong one.
FEDERATED = "FederatedLearningJob"
INCREMENTAL = "IncrementalLearningJob"
LIFELONG = "LifelongLearningJob"
JOINT_INFERENCE = "JointInferenceService"
KINDS = frozenset({FEDERATED, INCREMENTAL, LIFELONG, "LifeLongLearningJob", JOINT_INFERENCE})
#: The annotation every lowered job carries: the Sedna kind it came from.
KIND_ANNOTATION = "sedna.io/kind"

#: schedulerName → the native one. Kubernetes' own default scheduler is `default-scheduler`.
_SCHEDULERS = {"default": "default", "default-scheduler": "default", "volcano": "volcano",
               "shoal": "shoal"}
#: How many times a worker whose template says `restartPolicy: OnFailure` is retried (a
#: kubelet retries without end, backing off; a batch job here must end).
ON_FAILURE_RETRIES = 3
_METADATA = frozenset({"name", "namespace", "labels", "annotations"})
_METADATA_INERT = frozenset({"uid", "resourceVersion", "generation", "creationTimestamp",
                             "managedFields", "selfLink"})


@dataclass(frozen=True, slots=True)
class Header:
    """What every Sedna kind says the same way: its name, labels and annotations, and how
    it is scheduled."""

    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    scheduler: str | None
    policy: Mapping[str, Any] | None

    def job(self, name: str, groups: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
        """A native Job document of these groups, scheduled as the header says."""
        body: dict[str, Any] = {}
        if self.scheduler is not None:
            body["schedulerName"] = self.scheduler
        if self.policy is not None:
            body["schedulingPolicy"] = dict(self.policy)
        body.update(spec)
        body["taskGroups"] = groups
        metadata: dict[str, Any] = {"name": name, "annotations": dict(self.annotations)}
        if self.labels:
            metadata["labels"] = dict(self.labels)
        return {"apiVersion": "shoal/v1", "kind": "Job", "metadata": metadata, "spec": body}


@dataclass(slots=True)
class Worker:
    """One Sedna worker read from its pod template, as a native task group being built."""

    group: dict[str, Any]
    path: str
    """The template's path in the original (`spec.trainingWorkers[0].template`)."""
    paths: dict[str, str] = field(default_factory=dict)



def read_header(log: IssueLog, doc: DocRef, data: Mapping[str, Any]) -> Header | None:
    meta = data.get("metadata")
    if not isinstance(meta, Mapping):
        log.add(doc, "metadata", f"must be a mapping with a name, got {quote(meta)}")
        return None
    for key in meta:
        if key not in _METADATA and key not in _METADATA_INERT:
            log.add(doc, join_path("metadata", str(key)),
                    "is not supported: Shoal reads name, namespace, labels and annotations")
    for key in data:
        if key == "status":
            log.add(doc, "status", "is written by Sedna's controllers, not by users: remove it")
        elif key not in ("apiVersion", "kind", "metadata", "spec"):
            log.add(doc, str(key), "unknown field; allowed here: apiVersion, kind, metadata, spec")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        log.add(doc, "metadata.name", f"must be the job's name, got {quote(name)}")
        return None
    labels = _strings(log, doc, "metadata.labels", meta.get("labels"))
    annotations = _strings(log, doc, "metadata.annotations", meta.get("annotations"))
    annotations[KIND_ANNOTATION] = str(data["kind"])
    namespace = meta.get("namespace")
    if namespace is not None:
        if not isinstance(namespace, str):
            log.add(doc, "metadata.namespace", f"must be a string, got {quote(namespace)}")
        else:  # Shoal has no namespaces; the workers are told it, as Sedna tells them
            annotations["sedna.io/namespace"] = namespace
    spec = data.get("spec")
    if not isinstance(spec, Mapping):
        return Header(name, labels, annotations, None, None)
    scheduler = spec.get("schedulerName")
    if scheduler is not None and scheduler not in _SCHEDULERS:
        log.add(doc, "spec.schedulerName",
                f"must be volcano or shoal (gang scheduling) or default, got {quote(scheduler)}")
    policy = spec.get("schedulingPolicy")
    if policy is not None and not isinstance(policy, Mapping):
        log.add(doc, "spec.schedulingPolicy", f"must be a mapping, got {quote(policy)}")
        policy = None
    return Header(name, labels, annotations,
                  None if scheduler is None else _SCHEDULERS.get(str(scheduler)), policy)


def worker(log: IssueLog, doc: DocRef, path: str, owner: Mapping[str, Any], role: NodeRole,
           *, group: str, native: str, service: bool = False,
           restart: str = "Never") -> Worker | None:
    """The worker whose pod template is `owner["template"]` (at `path`), as task group
    `group` of one replica, lowered at native path `native` (`spec.taskGroups[1]`). A
    template's `restartPolicy` (`restart` where it gives none, as Sedna's controller
    decides for the kind) `OnFailure` retries a failed worker `ON_FAILURE_RETRIES` times
    (a service's are restarted however often anyway)."""
    if "workerSpec" in owner:
        log.add(doc, join_path(path, "workerSpec"),
                "is Sedna's pre-v0.3 form (scriptDir, scriptBootFile), which Shoal does not "
                "read: give the worker's pod template as `template`")
        return None
    template_path = join_path(path, "template")
    if "template" not in owner:
        log.add(doc, template_path, "required field is missing: the worker's pod template")
        return None
    task = read_pod_template(log, doc, template_path, owner["template"])
    if task is None:
        return None
    allowed = ("Never", "OnFailure", "Always") if service else ("Never", "OnFailure")
    if task.restart_policy is not None and task.restart_policy not in allowed:
        log.add(doc, f"{template_path}.spec.restartPolicy",
                f"must be {' or '.join(allowed)}, got {quote(task.restart_policy)}"
                + ("" if service else ": a training worker ends, Always would never let it"))
    if task.scheduler_name is not None:
        log.add(doc, f"{template_path}.spec.schedulerName",
                "is the job's to say: give spec.schedulerName")
    if task.priority_class is not None:
        log.add(doc, f"{template_path}.spec.priorityClassName",
                "is the job's to say: give spec.schedulingPolicy.priorityClass")
    built = {"name": group, "replicas": 1, **task.group}
    if (task.restart_policy or restart) == "OnFailure" and not service:
        built["taskRetryCount"] = ON_FAILURE_RETRIES
    if "nodeSelector" not in built:  # not pinned by the file: a node of its role
        built["nodeSelector"] = {NODE_ROLE_LABEL: role.value}
    container = f"{template_path}.spec.containers[0]"
    paths = {native: template_path,
             join_path(native, "resources"): join_path(container, "resources"),
             join_path(native, "command"): join_path(container, "command"),
             join_path(native, "env"): join_path(container, "env"),
             join_path(native, "image"): join_path(container, "image"),
             join_path(native, "nodeSelector"): f"{template_path}.spec.nodeSelector"}
    return Worker(built, path, paths)


def refuse_unknown(log: IssueLog, doc: DocRef, path: str, data: Mapping[str, Any],
                   allowed: Sequence[str]) -> None:
    for key in data:
        if key not in allowed:
            log.add(doc, join_path(path, str(key)),
                    f"unknown field; allowed here: {', '.join(sorted(allowed))}")


def mapping(log: IssueLog, doc: DocRef, path: str, data: Mapping[str, Any], key: str,
            *, required: bool = False) -> Mapping[str, Any] | None:
    value = data.get(key)
    if value is None:
        if required:
            log.add(doc, join_path(path, key), "required field is missing")
        return None
    if not isinstance(value, Mapping):
        log.add(doc, join_path(path, key), f"must be a mapping, got {quote(value)}")
        return None
    return value


def ref_name(log: IssueLog, doc: DocRef, path: str, data: Mapping[str, Any], key: str
             ) -> str | None:
    """A Sedna reference to a Model or Dataset (`{name: ...}`): its name."""
    ref = mapping(log, doc, path, data, key)
    if ref is None:
        return None
    where = join_path(path, key)
    refuse_unknown(log, doc, where, ref, ("name", "trainProb", "hotUpdateEnabled",
                                          "pollPeriodSeconds"))
    name = ref.get("name")
    if not isinstance(name, str) or not name:
        log.add(doc, join_path(where, "name"), f"must be a name, got {quote(name)}")
        return None
    return name


def _strings(log: IssueLog, doc: DocRef, path: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        log.add(doc, path, f"must map strings to strings, got {quote(value)}")
        return {}
    return dict(value)


def lowered(doc: DocRef, data: Mapping[str, Any], job: dict[str, Any],
            workers: Sequence[Worker]) -> Lowered:
    """One native job lowered from `data`, its workers' paths mapped back."""
    paths: dict[str, str] = {"metadata": "metadata", "spec.schedulerName": "spec.schedulerName",
                             "spec.schedulingPolicy": "spec.schedulingPolicy"}
    for w in workers:
        paths.update(w.paths)
    return Lowered(doc, Original(ImportFormat.SEDNA, dict(data)), (job,), paths)
