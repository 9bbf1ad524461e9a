"""A Volcano `scheduling.volcano.sh/v1beta1` PodGroup and its Pods, in one file, lowered to
one native gang Job.

Each Pod (`apiVersion: v1`, `kind: Pod`) names its group by the annotation
`scheduling.k8s.io/group-name`. The job is named after the PodGroup; Pods with the same spec
become one task group (as many replicas as there are such Pods), named after the first of
them with a trailing `-<number>` left off. PodGroup fields:

- spec.minMember: minAvailable (the gang minimum); spec.queue, priorityClassName and
  minResources: the same; the PodGroup's labels and annotations are the job's.
- spec.minTaskMember: refused (Shoal's gang minimum is per job or per task group: give
  the group's pods one spec and minMember).

A Pod that names no PodGroup (or one the file does not hold), and a PodGroup without Pods,
are refused with a clear error. Each Pod's spec is read as a pod template (`pod_template`),
and its issues are reported in its own document.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shoal.spec.errors import IssueLog, quote
from shoal.spec.imports import Foreign, ImportFormat, Lowered, Original
from shoal.spec.imports.kube_objects import object_meta, refuse_unknown
from shoal.spec.imports.pod_template import read_pod_template

API_VERSIONS = frozenset({"scheduling.volcano.sh/v1beta1"})
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
_SPEC_READ = frozenset({"minMember", "queue", "priorityClassName", "minResources"})
_SPEC_REFUSED = {"minTaskMember": "Shoal's gang minimum is per job or per task group: give "
                                  "the pods of a group one spec, and minMember"}
_INDEX = re.compile(r"-\d+$")
_GROUP_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(slots=True)
class _Group:
    name: str
    spec: Mapping[str, Any]
    group: dict[str, Any]
    pods: list[str] = field(default_factory=list)


def _is_pod(data: Any) -> bool:
    return isinstance(data, Mapping) and data.get("apiVersion") == "v1" \
        and data.get("kind") == "Pod"


class VolcanoPodGroupImporter:
    format = ImportFormat.VOLCANO_POD_GROUP

    def claims(self, data: Any) -> bool:
        return _is_pod(data) or (isinstance(data, Mapping) and data.get("kind") == "PodGroup"
                                 and any(data.get("apiVersion") == v for v in API_VERSIONS))

    def lower(self, log: IssueLog, docs: Sequence[Foreign]) -> list[Lowered]:
        groups = [f for f in docs if not _is_pod(f.data)]
        names: dict[str, Foreign] = {}
        for foreign in groups:
            meta = foreign.data.get("metadata")
            name = meta.get("name") if isinstance(meta, Mapping) else None
            if isinstance(name, str):
                names[name] = foreign
        members: dict[str, list[Foreign]] = {name: [] for name in names}
        for pod in (f for f in docs if _is_pod(f.data)):
            meta = pod.data.get("metadata")
            annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
            wanted = annotations.get(GROUP_ANNOTATION) if isinstance(annotations, Mapping) \
                else None
            if not isinstance(wanted, str):
                log.add(pod.doc, f"metadata.annotations[{GROUP_ANNOTATION!r}]",
                        "a Pod is submitted with its PodGroup: name the group in this "
                        "annotation, and put the PodGroup in the same file")
            elif wanted not in members:
                log.add(pod.doc, f"metadata.annotations[{GROUP_ANNOTATION!r}]",
                        f"names PodGroup {quote(wanted)}, which this file does not hold")
            else:
                members[wanted].append(pod)
        out = []
        for name, foreign in names.items():
            lowered = _lower(log, foreign, members[name])
            if lowered is not None:
                out.append(lowered)
        for foreign in groups:
            if foreign not in names.values():
                object_meta(log, foreign.doc, foreign.data)  # reports the missing name
        return out


def _lower(log: IssueLog, foreign: Foreign, pods: list[Foreign]) -> Lowered | None:
    doc, data = foreign.doc, foreign.data
    start = len(log.issues)
    refuse_unknown(log, doc, "", data, frozenset({"apiVersion", "kind", "metadata", "spec"}),
                   {"status": "is set by Volcano, not by a submission"}, "a PodGroup")
    meta = object_meta(log, doc, data)
    spec = data.get("spec", {})
    if not isinstance(spec, Mapping):
        log.add(doc, "spec", f"must be a mapping, got {quote(spec)}")
        return None
    refuse_unknown(log, doc, "spec", spec, _SPEC_READ, _SPEC_REFUSED, "a PodGroup's spec")
    if not pods:
        log.add(doc, "metadata.name", "a PodGroup is submitted with its Pods: no Pod in this "
                                      f"file names it (annotation {GROUP_ANNOTATION})")
        return None
    groups: list[_Group] = []
    for pod in pods:
        pod_meta = object_meta(log, pod.doc, pod.data)
        refuse_unknown(log, pod.doc, "", pod.data,
                       frozenset({"apiVersion", "kind", "metadata", "spec"}),
                       {"status": "is set by Kubernetes, not by a submission"}, "a Pod")
        task = read_pod_template(log, pod.doc, "", {"spec": pod.data.get("spec")})
        if pod_meta is None or task is None:
            continue
        pod_spec = pod.data.get("spec")
        same = next((g for g in groups if g.spec == pod_spec), None)
        if same is None:
            same = _Group(_group_name(pod_meta.name, {g.name for g in groups}), pod_spec,
                          task.group)
            groups.append(same)
        same.pods.append(pod_meta.name)
    if meta is None or len(log.issues) > start:
        return None
    native_spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "taskGroups": [{"name": g.name, "replicas": len(g.pods), **g.group} for g in groups]}
    if "minMember" in spec:
        native_spec["minAvailable"] = spec["minMember"]
    for key in ("queue", "priorityClassName", "minResources"):
        if key in spec:
            native_spec[key] = spec[key]
    native = {"apiVersion": "shoal/v1", "kind": "Job",
              "metadata": {"name": meta.name, "labels": meta.labels,
                           "annotations": meta.annotations},
              "spec": native_spec}
    paths = {"spec.minAvailable": "spec.minMember"}
    for i, g in enumerate(groups):
        paths[f"spec.taskGroups[{i}]"] = f"pods[{g.pods[0]}].spec"
    document = {"podGroup": data, "pods": [p.data for p in pods]}
    return Lowered(doc, Original(ImportFormat.VOLCANO_POD_GROUP, document), (native,), paths)


def _group_name(pod: str, taken: set[str]) -> str:
    """The pod's name without a trailing index, made a valid and unused group name."""
    base = _INDEX.sub("", pod)[:50]
    if not _GROUP_NAME.match(base):
        base = "pods"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    return name
