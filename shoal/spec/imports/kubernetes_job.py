"""A Kubernetes `batch/v1` Job (with Kueue's labels, or without), lowered to one native Job.

- metadata.labels `kueue.x-k8s.io/queue-name`: the queue (a Kueue LocalQueue's name is read
  as a Shoal virtual cluster's); `kueue.x-k8s.io/priority-class`: priorityClassName. Both
  labels are kept with the others. A Job WITHOUT Kueue's queue label goes to the `default`
  queue: in Shoal every job is queued, and `default` is the queue of jobs that name none.
- spec.parallelism (default 1) and spec.completions: one task group of `parallelism`
  replicas when completions equals it (or is left out with parallelism 1); completions
  below parallelism: that many replicas (Kubernetes never runs more pods than completions
  remain). Completions above parallelism (pods run in waves) and a work queue (completions
  left out, parallelism above 1) are refused: Shoal runs a job's tasks at once.
- spec.backoffLimit (Kubernetes' default 6) and spec.backoffLimitPerIndex: taskRetryCount.
  Kubernetes counts backoffLimit over the whole job, Shoal per task; per index is exact.
- spec.suspend: spec.hold (submitted held; `shoal release`).
- spec.activeDeadlineSeconds: spec.timeLimit.
- spec.completionMode Indexed: each task gets JOB_COMPLETION_INDEX, its index (the command
  is run through `sh -c`, which sets it from SHOAL_TASK_INDEX).
- the pod template: the group's command, image, env, resources and node selector
  (`pod_template`); its schedulerName volcano makes the job a gang, any other places tasks
  one by one (Kubernetes' default scheduler); its priorityClassName is used when Kueue's
  label gives none. restartPolicy Never and OnFailure are accepted (what a failure does is
  taskRetryCount's).
- Refused with their paths and why: ttlSecondsAfterFinished, podFailurePolicy,
  successPolicy, selector, manualSelector, podReplacementPolicy, maxFailedIndexes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shoal.spec.errors import DocRef, IssueLog, quote
from shoal.spec.imports import Foreign, ImportFormat, Lowered, Original, lower_each
from shoal.spec.imports.kube_objects import (
    group_paths,
    object_meta,
    optional_int,
    refuse_unknown,
)
from shoal.spec.imports.pod_template import read_pod_template

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
DEFAULT_BACKOFF_LIMIT = 6
"""Kubernetes' default `backoffLimit`."""
INDEX_ENV = "JOB_COMPLETION_INDEX"
GROUP = "main"
"""The one task group's name."""

_SPEC_READ = frozenset({"parallelism", "completions", "backoffLimit", "backoffLimitPerIndex",
                        "suspend", "activeDeadlineSeconds", "completionMode", "template"})
_SPEC_REFUSED = {
    "ttlSecondsAfterFinished": "the server's --job-ttl decides when ended jobs are removed",
    "podFailurePolicy": "Shoal does not tell exit codes or pod conditions apart; "
                        "backoffLimit gives the retries",
    "successPolicy": "a Shoal job succeeds when its tasks do",
    "selector": "Shoal makes a job's tasks itself",
    "manualSelector": "Shoal makes a job's tasks itself",
    "podReplacementPolicy": "Shoal replaces a task once its process has ended",
    "maxFailedIndexes": "a Shoal job fails with its first task out of retries",
}


class KubernetesJobImporter:
    format = ImportFormat.KUBERNETES_JOB

    def claims(self, data: Any) -> bool:
        return (isinstance(data, Mapping) and data.get("apiVersion") == "batch/v1"
                and data.get("kind") == "Job")

    def lower(self, log: IssueLog, docs: Sequence[Foreign]) -> list[Lowered]:
        return lower_each(log, docs, _lower)


def _lower(log: IssueLog, doc: DocRef, data: Mapping[str, Any]) -> Lowered | None:
    start = len(log.issues)
    refuse_unknown(log, doc, "", data, frozenset({"apiVersion", "kind", "metadata", "spec"}),
                   {"status": "is set by Kubernetes, not by a submission"},
                   "a Kubernetes Job")
    meta = object_meta(log, doc, data)
    spec = data.get("spec")
    if not isinstance(spec, Mapping):
        log.add(doc, "spec", "a Kubernetes Job needs a spec with a pod template")
        return None
    refuse_unknown(log, doc, "spec", spec, _SPEC_READ, _SPEC_REFUSED,
                   "a Kubernetes Job's spec")
    replicas = _replicas(log, doc, spec)
    per_index = optional_int(log, doc, "spec.backoffLimitPerIndex",
                             spec.get("backoffLimitPerIndex"))
    backoff = optional_int(log, doc, "spec.backoffLimit", spec.get("backoffLimit"))
    deadline = optional_int(log, doc, "spec.activeDeadlineSeconds",
                            spec.get("activeDeadlineSeconds"), least=1)
    suspend = spec.get("suspend", False)
    if not isinstance(suspend, bool):
        log.add(doc, "spec.suspend", f"must be true or false, got {quote(suspend)}")
    mode = spec.get("completionMode", "NonIndexed")
    if mode not in ("NonIndexed", "Indexed"):
        log.add(doc, "spec.completionMode", f"must be NonIndexed or Indexed, got {quote(mode)}")
    pod = read_pod_template(log, doc, "spec.template", spec.get("template"))
    if pod is not None and pod.restart_policy == "Always":
        log.add(doc, "spec.template.spec.restartPolicy",
                "must be Never or OnFailure for a Job (as Kubernetes says too)")
    if meta is None or pod is None or replicas is None or len(log.issues) > start:
        return None
    group: dict[str, Any] = {"name": GROUP, "replicas": replicas, **pod.group}
    retries = per_index if per_index is not None else backoff
    group["taskRetryCount"] = DEFAULT_BACKOFF_LIMIT if retries is None else retries
    if mode == "Indexed":
        command = group.get("command")
        if not command:
            log.add(doc, "spec.template.spec.containers[0].command",
                    "an Indexed Job's command must be given: Shoal sets JOB_COMPLETION_INDEX "
                    "by running it through sh")
            return None
        group["command"] = ["sh", "-c", f'{INDEX_ENV}="$SHOAL_TASK_INDEX" exec "$@"', "sh",
                            *command]
    native_spec: dict[str, Any] = {
        "schedulerName": "volcano" if pod.scheduler_name == "volcano" else "default",
        "queue": meta.labels.get(QUEUE_LABEL, "default"), "taskGroups": [group]}
    priority = meta.labels.get(PRIORITY_LABEL, pod.priority_class)
    if priority is not None:
        native_spec["priorityClassName"] = priority
    if deadline is not None:
        native_spec["timeLimit"] = deadline
    if suspend is True:
        native_spec["hold"] = True
    native = {"apiVersion": "shoal/v1", "kind": "Job",
              "metadata": {"name": meta.name, "labels": meta.labels,
                           "annotations": meta.annotations},
              "spec": native_spec}
    paths = {"spec.queue": f"metadata.labels[{QUEUE_LABEL!r}]",
             "spec.priorityClassName": f"metadata.labels[{PRIORITY_LABEL!r}]",
             "spec.timeLimit": "spec.activeDeadlineSeconds", "spec.hold": "spec.suspend",
             "spec.taskGroups[0].replicas": "spec.parallelism",
             "spec.taskGroups[0].taskRetryCount": "spec.backoffLimit",
             **group_paths("spec.taskGroups[0]", "spec.template")}
    return Lowered(doc, Original(ImportFormat.KUBERNETES_JOB, data), (native,), paths)


def _replicas(log: IssueLog, doc: DocRef, spec: Mapping[str, Any]) -> int | None:
    parallelism = optional_int(log, doc, "spec.parallelism", spec.get("parallelism"), least=1)
    completions = optional_int(log, doc, "spec.completions", spec.get("completions"),
                               least=1)
    parallelism = 1 if parallelism is None else parallelism
    if completions is None:
        if parallelism > 1:
            log.add(doc, "spec.completions",
                    "must be given with a parallelism above 1: a work queue (pods that "
                    "decide among themselves when the job is done) is not supported by "
                    "Shoal, which ends a job when its tasks have; give completions = "
                    "parallelism")
            return None
        return 1
    if completions > parallelism:
        log.add(doc, "spec.completions",
                f"is {completions}, above parallelism {parallelism}: Shoal runs a job's tasks "
                "at once, not in waves; give completions = parallelism, or submit "
                "several jobs")
        return None
    return completions
