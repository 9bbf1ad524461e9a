"""Volcano's `batch.volcano.sh/v1alpha1` Job, lowered to one native Job.

- metadata.name, labels, annotations: the same (seed 001's `volcano.sh/elastic-*`
  annotations are read as the native ones).
- spec.schedulerName (default volcano): volcano is Shoal's gang; any other, task by task.
- spec.minAvailable, queue, priorityClassName, minResources: the same.
- spec.minSuccess: spec.completion.minSucceeded.
- spec.maxRetry (default 3): the retries of the policies below.
- spec.tasks[i] name, replicas, minAvailable: spec.taskGroups[i]; its template gives the
  group's command, image, env, resources and node selector (`pod_template`); its maxRetry,
  that group's taskRetryCount (with RestartTask).
- plugins ssh, svc and env: accepted, no effect — Shoal gives every task its peers itself
  (`SHOAL_*` environment, the membership file).

Policies (the job's, or a task's), `event` or `events` → `action`:
- PodFailed, Unknown or * → RestartJob: jobRetryCount = maxRetry.
- PodFailed (Unknown) → RestartTask or RestartPod: TaskFailed (TaskLost) → RestartTask,
  taskRetryCount = maxRetry.
- PodFailed, Unknown or * → TerminateJob: Shoal's default, the job fails.
- PodEvicted → RestartJob, RestartTask or RestartPod: accepted; Shoal places evicted tasks
  again itself, with no retry charged.
- a task's TaskCompleted → CompleteJob: the same.

Everything else is refused with its path and why (AbortJob: Shoal has no aborted state to
resume from; exitCode: Shoal does not tell exit codes apart; volumes,
ttlSecondsAfterFinished, a task's dependsOn, topology policies ...). A pod template's own
priorityClassName or schedulerName must agree with the job's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shoal.spec.errors import DocRef, IssueLog, join_path, quote
from shoal.spec.imports import Foreign, ImportFormat, Lowered, Original, lower_each
from shoal.spec.imports.kube_objects import (
    group_paths,
    object_meta,
    optional_int,
    refuse_unknown,
)
from shoal.spec.imports.pod_template import read_pod_template

API_VERSION = "batch.volcano.sh/v1alpha1"
DEFAULT_MAX_RETRY = 3
"""Volcano's default `maxRetry`."""

_SPEC_READ = frozenset({"schedulerName", "minAvailable", "queue", "priorityClassName",
                        "maxRetry", "minSuccess", "policies", "plugins", "tasks",
                        "minResources"})
_SPEC_REFUSED = {
    "volumes": "Shoal runs tasks on the host's file system (or in their image); it mounts "
               "no volumes",
    "ttlSecondsAfterFinished": "the server's --job-ttl decides when ended jobs are removed",
    "networkTopology": "Shoal places by nodes and labels, not network topology",
    "runningEstimate": "give spec.timeLimit in a native job instead",
}
_TASK_READ = frozenset({"name", "replicas", "minAvailable", "maxRetry", "policies",
                        "template"})
_TASK_REFUSED = {
    "dependsOn": "tasks of one Shoal job start together; split it into jobs with "
                 "spec.dependsOn",
    "topologyPolicy": "Shoal has no NUMA topology policies",
    "partitionPolicy": "Shoal places by nodes and labels, not network topology",
}
_PLUGINS = frozenset({"ssh", "svc", "env"})
_POD_FAILED, _UNKNOWN, _EVICTED, _COMPLETED, _ANY = (
    "PodFailed", "Unknown", "PodEvicted", "TaskCompleted", "*")
_NATIVE_EVENT = {_POD_FAILED: "TaskFailed", _UNKNOWN: "TaskLost"}


@dataclass(slots=True)
class _Policies:
    """What a list of Volcano policies says, in native terms."""

    job_retry: bool = False
    task_retry: list[str] = field(default_factory=list)
    """Native events whose action is RestartTask."""
    completes_job: bool = False


class VolcanoJobImporter:
    format = ImportFormat.VOLCANO_JOB

    def claims(self, data: Any) -> bool:
        return (isinstance(data, Mapping) and data.get("apiVersion") == API_VERSION
                and data.get("kind") == "Job")

    def lower(self, log: IssueLog, docs: Sequence[Foreign]) -> list[Lowered]:
        return lower_each(log, docs, _lower)


def _lower(log: IssueLog, doc: DocRef, data: Mapping[str, Any]) -> Lowered | None:
    start = len(log.issues)
    refuse_unknown(log, doc, "", data, frozenset({"apiVersion", "kind", "metadata", "spec"}),
                   {"status": "is set by Volcano, not by a submission"}, "a Volcano Job")
    meta = object_meta(log, doc, data)
    spec = data.get("spec")
    if not isinstance(spec, Mapping):
        log.add(doc, "spec", "a Volcano Job needs a spec with tasks")
        return None
    refuse_unknown(log, doc, "spec", spec, _SPEC_READ, _SPEC_REFUSED, "a Volcano Job's spec")
    _plugins(log, doc, spec.get("plugins"))
    job_policies = _policies(log, doc, "spec.policies", spec.get("policies"), job_level=True)
    max_retry = optional_int(log, doc, "spec.maxRetry", spec.get("maxRetry"))
    max_retry = DEFAULT_MAX_RETRY if max_retry is None else max_retry
    tasks = spec.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        log.add(doc, "spec.tasks", "must list the job's tasks (at least one)")
        return None
    groups: list[dict[str, Any]] = []
    paths = {"spec.jobRetryCount": "spec.maxRetry", "spec.completion.minSucceeded":
             "spec.minSuccess"}
    job_retry = job_policies.job_retry
    for i, task in enumerate(tasks):
        where = f"spec.tasks[{i}]"
        group = _task(log, doc, where, task, job_policies, max_retry, spec)
        if group is None:
            continue
        task_job_retry = group.pop("_jobRetry")
        job_retry = job_retry or task_job_retry
        groups.append(group)
        paths[f"spec.taskGroups[{i}]"] = where
        paths.update(group_paths(f"spec.taskGroups[{i}]", f"{where}.template"))
        paths[f"spec.taskGroups[{i}].taskRetryCount"] = f"{where}.maxRetry"
    if meta is None or len(log.issues) > start:
        return None
    scheduler = spec.get("schedulerName", "volcano")
    native_spec: dict[str, Any] = {
        "schedulerName": "volcano" if scheduler == "volcano" else "default",
        "taskGroups": groups}
    for key in ("minAvailable", "queue", "priorityClassName", "minResources"):
        if key in spec:
            native_spec[key] = spec[key]
    if "minSuccess" in spec:
        native_spec["completion"] = {"minSucceeded": spec["minSuccess"]}
    if job_retry:
        native_spec["jobRetryCount"] = max_retry
    native = {"apiVersion": "shoal/v1", "kind": "Job",
              "metadata": {"name": meta.name, "labels": meta.labels,
                           "annotations": meta.annotations},
              "spec": native_spec}
    return Lowered(doc, Original(ImportFormat.VOLCANO_JOB, data), (native,), paths)


def _task(log: IssueLog, doc: DocRef, where: str, task: Any, job_policies: _Policies,
          max_retry: int, job_spec: Mapping[str, Any]) -> dict[str, Any] | None:
    if not isinstance(task, Mapping):
        log.add(doc, where, f"must be a task (a mapping), got {quote(task)}")
        return None
    refuse_unknown(log, doc, where, task, _TASK_READ, _TASK_REFUSED, "a Volcano task")
    pod = read_pod_template(log, doc, join_path(where, "template"), task.get("template"))
    policies = _policies(log, doc, join_path(where, "policies"), task.get("policies"),
                         job_level=False)
    own_retry = optional_int(log, doc, join_path(where, "maxRetry"), task.get("maxRetry"))
    if pod is None:
        return None
    for value, key in ((pod.priority_class, "priorityClassName"),
                       (pod.scheduler_name, "schedulerName")):
        job_value = job_spec.get(key, "volcano" if key == "schedulerName" else None)
        if value is not None and value != job_value:
            log.add(doc, join_path(where, f"template.spec.{key}"),
                    f"is {value!r}, the job's spec.{key} is {job_value!r}: Shoal schedules "
                    "a job's tasks alike; give it on the job")
            return None
    group: dict[str, Any] = {"name": task.get("name"), "replicas": task.get("replicas", 1),
                             **pod.group}
    if "minAvailable" in task:
        group["minAvailable"] = task["minAvailable"]
    # A task's own policies replace the job's for its events (Volcano's precedence).
    events = [*policies.task_retry, *(e for e in job_policies.task_retry
                                      if e not in policies.task_retry)]
    if events:
        group["taskRetryCount"] = max_retry if own_retry is None else own_retry
        group["policies"] = [{"event": e, "action": "RestartTask"} for e in events]
    if policies.completes_job:
        group.setdefault("policies", []).append(
            {"event": "TaskCompleted", "action": "CompleteJob"})
    group["_jobRetry"] = policies.job_retry
    return group


def _plugins(log: IssueLog, doc: DocRef, plugins: Any) -> None:
    if plugins is None:
        return
    if not isinstance(plugins, Mapping):
        log.add(doc, "spec.plugins", f"must be a mapping of plugin names, got {quote(plugins)}")
        return
    for name in plugins:
        if name not in _PLUGINS:
            log.add(doc, join_path("spec.plugins", str(name)),
                    "is not supported: Shoal accepts ssh, svc and env, which it makes "
                    "unnecessary (every task gets its peers' addresses from Shoal)")


def _policies(log: IssueLog, doc: DocRef, path: str, policies: Any, *, job_level: bool
              ) -> _Policies:
    out = _Policies()
    if policies is None:
        return out
    if not isinstance(policies, list):
        log.add(doc, path, f"must be a list of {{event, action}}, got {quote(policies)}")
        return out
    for i, policy in enumerate(policies):
        where = join_path(path, i)
        if not isinstance(policy, Mapping):
            log.add(doc, where, f"must be an {{event, action}} mapping, got {quote(policy)}")
            continue
        for key in policy:
            if key == "exitCode":
                log.add(doc, join_path(where, "exitCode"),
                        "is not supported: Shoal does not tell exit codes apart; a non-zero "
                        "exit is PodFailed")
            elif key == "timeout":
                log.add(doc, join_path(where, "timeout"),
                        "is not supported: Shoal acts on an event at once")
            elif key not in ("event", "events", "action"):
                log.add(doc, join_path(where, str(key)), "unknown field of a policy")
        events = policy.get("events", [policy["event"]] if "event" in policy else [])
        if not isinstance(events, list) or not events:
            log.add(doc, join_path(where, "event"), "must name an event")
            continue
        for event in events:
            _policy(log, doc, where, event, policy.get("action"), job_level, out)
    return out


_SUPPORTED = ("PodFailed, Unknown or * with RestartJob, RestartTask, RestartPod or "
              "TerminateJob; PodEvicted with a restart; a task's TaskCompleted with CompleteJob")


def _policy(log: IssueLog, doc: DocRef, where: str, event: Any, action: Any, job_level: bool,
            out: _Policies) -> None:
    path = join_path(where, "action")
    if not isinstance(event, str) or not isinstance(action, str):
        log.add(doc, where, f"must name an event and an action (strings), got "
                            f"{quote(event)} and {quote(action)}")
        return
    if action == "RestartJob" and event in (_POD_FAILED, _UNKNOWN, _ANY):
        out.job_retry = True
    elif action in ("RestartTask", "RestartPod") and event in _NATIVE_EVENT:
        out.task_retry.append(_NATIVE_EVENT[event])
    elif action in ("RestartTask", "RestartPod") and event == _ANY:
        out.task_retry += [e for e in _NATIVE_EVENT.values() if e not in out.task_retry]
    elif action == "TerminateJob" and event in (_POD_FAILED, _UNKNOWN, _ANY):
        pass  # what Shoal does anyway: a task failed with no retries left fails the job
    elif event == _EVICTED and action in ("RestartJob", "RestartTask", "RestartPod"):
        pass  # Shoal places an evicted task again itself and charges no retry
    elif event == _COMPLETED and action == "CompleteJob" and not job_level:
        out.completes_job = True
    elif action == "AbortJob":
        log.add(doc, path, f"AbortJob on {event} is not supported by Shoal: it has no "
                           f"aborted state to resume from; supported: {_SUPPORTED}")
    else:
        log.add(doc, path, f"{action} on {event} is not supported by Shoal; "
                           f"supported: {_SUPPORTED}")
