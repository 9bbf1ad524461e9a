"""Conversion tables of the Kubernetes-shaped importers (Volcano Job, Volcano PodGroup + Pods,
`batch/v1` Job with Kueue's labels): files written as their users write them → the Shoal Job
they become; and the refused fields with their paths and messages. The examples under
examples/imports/ load too."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from shoal.api import FailureAction, FailureEvent, SchedulerName
from shoal.spec import SpecError, load_text
from shoal.spec.imports import ImportFormat

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "imports"


def _load(text: str):  # type: ignore[no-untyped-def]
    return load_text(textwrap.dedent(text), "f.yaml", launchable=True)


def _issues(text: str) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as info:
        _load(text)
    return [(i.path, i.message) for i in info.value.issues]


VOLCANO = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: tf-dist
  namespace: research
  labels: {team: nlp}
  annotations:
    volcano.sh/elastic-train-min-replicas: "2"
    volcano.sh/elastic-train-max-replicas: "4"
spec:
  minAvailable: 3
  schedulerName: volcano
  queue: default
  priorityClassName: high-priority
  maxRetry: 5
  minSuccess: 2
  plugins: {ssh: [], svc: ["--publish-not-ready-addresses"], env: []}
  policies:
    - {event: PodFailed, action: RestartJob}
    - {events: [PodEvicted], action: RestartJob}
  tasks:
    - name: ps
      replicas: 1
      template:
        metadata: {labels: {role: ps}}
        spec:
          restartPolicy: Never
          containers:
            - name: tensorflow
              image: tensorflow/tensorflow:2.15.0
              command: [python, ps.py]
              ports: [{containerPort: 2222, name: tfjob-port}]
              resources:
                limits: {cpu: "2", memory: 4Gi}
    - name: worker
      replicas: 3
      minAvailable: 2
      maxRetry: 2
      policies:
        - {event: PodFailed, action: RestartTask}
        - {event: TaskCompleted, action: CompleteJob}
      template:
        spec:
          nodeSelector: {gpu-type: a100}
          containers:
            - name: tensorflow
              image: tensorflow/tensorflow:2.15.0-gpu
              command: [python]
              args: [worker.py, --epochs, "3"]
              env: [{name: TF_CPP_MIN_LOG_LEVEL, value: "2"}]
              workingDir: /work
              resources:
                requests: {cpu: "4", memory: 16Gi, nvidia.com/gpu: 1}
                limits: {nvidia.com/gpu: 1}
"""


def test_a_volcano_job() -> None:
    bundle = _load(VOLCANO + """\
---
apiVersion: shoal/v1
kind: PriorityClass
metadata: {name: high-priority}
value: 1000
""")
    (job,) = bundle.jobs
    assert bundle.originals["tf-dist"].format is ImportFormat.VOLCANO_JOB
    assert bundle.originals["tf-dist"].document["spec"]["maxRetry"] == 5
    assert (job.name, job.queue, job.scheduler_name, job.min_available, job.priority_class,
            job.job_retry_count, job.min_succeeded) == (
        "tf-dist", "default", SchedulerName.SHOAL, 3, "high-priority", 5, 2)
    assert job.labels == {"team": "nlp"}
    assert job.annotations["volcano.sh/elastic-train-max-replicas"] == "4"
    ps, worker = job.groups
    assert (ps.name, ps.replicas, ps.image, ps.command, ps.task_retry_count) == (
        "ps", 1, "tensorflow/tensorflow:2.15.0", ("python", "ps.py"), 0)
    assert ps.resources.to_quantities() == {"cpu": "2", "memory": "4Gi"}
    assert (worker.replicas, worker.min_available, worker.task_retry_count) == (3, 2, 2)
    assert worker.command == ("python", "worker.py", "--epochs", "3")
    assert worker.env == {"TF_CPP_MIN_LOG_LEVEL": "2"}
    assert (worker.working_dir, worker.node_selector) == ("/work", {"gpu-type": "a100"})
    assert worker.resources.to_quantities()["gpu"] == 1
    assert dict(worker.policies) == {FailureEvent.TASK_FAILED: FailureAction.RESTART_TASK}
    assert worker.completes_job


def test_volcano_defaults_a_gang_and_no_retries_without_restart_policies() -> None:
    (job,) = _load("""\
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {name: plain}
        spec:
          tasks:
            - replicas: 2
              name: main
              template:
                spec:
                  containers: [{name: c, command: ["true"], resources: {requests: {cpu: 1}}}]
        """).jobs
    assert (job.scheduler_name, job.job_retry_count, job.queue) == (
        SchedulerName.SHOAL, 0, "default")
    assert job.groups[0].task_retry_count == 0


def test_default_scheduler_places_task_by_task() -> None:
    (job,) = _load("""\
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {name: plain}
        spec:
          schedulerName: default-scheduler
          tasks:
            - name: main
              template:
                spec:
                  containers: [{name: c, command: ["true"], resources: {requests: {cpu: 1}}}]
        """).jobs
    assert job.scheduler_name is SchedulerName.DEFAULT


def _volcano(spec_extra: str = "", task_extra: str = "", container_extra: str = "") -> str:
    return f"""\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: bad}}
spec:
{spec_extra}  tasks:
    - name: main
      replicas: 1
{task_extra}      template:
        spec:
          containers:
            - name: c
              command: ["true"]
              resources: {{requests: {{cpu: 1}}}}
{container_extra}"""


@pytest.mark.parametrize(("text", "path", "message"), [
    (_volcano("  ttlSecondsAfterFinished: 60\n"), "spec.ttlSecondsAfterFinished",
     "is not supported: the server's --job-ttl decides when ended jobs are removed"),
    (_volcano("  volumes: []\n"), "spec.volumes", "is not supported: Shoal runs tasks"),
    (_volcano("  policies: [{event: PodFailed, action: AbortJob}]\n"),
     "spec.policies[0].action", "AbortJob on PodFailed is not supported by Shoal: it has "
                                "no aborted state to resume from"),
    (_volcano("  policies: [{event: PodEvicted, action: TerminateJob}]\n"),
     "spec.policies[0].action", "TerminateJob on PodEvicted is not supported by Shoal; "
                                "supported: PodFailed"),
    (_volcano("  policies: [{event: TaskCompleted, action: CompleteJob}]\n"),
     "spec.policies[0].action", "CompleteJob on TaskCompleted is not supported by Shoal"),
    (_volcano("  policies: [{exitCode: 3, action: RestartJob}]\n"),
     "spec.policies[0].exitCode", "is not supported: Shoal does not tell exit codes apart"),
    (_volcano("  plugins: {pytorch: []}\n"), "spec.plugins.pytorch",
     "is not supported: Shoal accepts ssh, svc and env"),
    (_volcano(task_extra="      dependsOn: {name: [ps]}\n"), "spec.tasks[0].dependsOn",
     "is not supported: tasks of one Shoal job start together"),
    (_volcano(container_extra="              volumeMounts: []\n"),
     "spec.tasks[0].template.spec.containers[0].volumeMounts", "is not supported"),
    (_volcano(container_extra="              env: [{name: A, valueFrom: {}}]\n"),
     "spec.tasks[0].template.spec.containers[0].env[0].valueFrom", "is not supported"),
    (_volcano("  queue: 7\n"), "spec.queue", ""),  # a native check, at the original path
    (_volcano("  minAvailable: 0\n"), "spec.minAvailable", ""),
    (_volcano("  maxRetry: -1\n"), "spec.maxRetry", "must be an integer >= 0"),
    (_volcano(task_extra="      replicas: 0\n").replace("      replicas: 1\n", "", 1),
     "spec.tasks[0].replicas", ""),
])
def test_volcano_refusals(text: str, path: str, message: str) -> None:
    found = _issues(text)
    assert any(p == path and m.startswith(message) for p, m in found), found


PODGROUP = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, labels: {team: cv}}
spec: {minMember: 3, queue: default, minResources: {cpu: "3"}}
"""


def _pod(name: str, group: str | None = "pg", image: str = "busybox") -> str:
    annotations = "" if group is None else \
        f"  annotations: {{scheduling.k8s.io/group-name: {group}}}\n"
    return f"""\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
{annotations}spec:
  containers:
    - {{name: c, image: {image}, command: ["true"], resources: {{requests: {{cpu: 1}}}}}}
"""


def test_a_pod_group_and_its_pods() -> None:
    bundle = _load("---\n".join([
        PODGROUP, _pod("worker-0"), _pod("worker-1"), _pod("chief-0", image="other")]))
    (job,) = bundle.jobs
    assert (job.name, job.scheduler_name, job.min_available, job.labels) == (
        "pg", SchedulerName.SHOAL, 3, {"team": "cv"})
    assert job.min_resources is not None
    assert [(g.name, g.replicas, g.image) for g in job.groups] == [
        ("worker", 2, "busybox"), ("chief", 1, "other")]
    original = bundle.originals["pg"]
    assert original.format is ImportFormat.VOLCANO_POD_GROUP
    assert [p["metadata"]["name"] for p in original.document["pods"]] == [
        "worker-0", "worker-1", "chief-0"]


@pytest.mark.parametrize(("parts", "document", "path", "message"), [
    ([PODGROUP], 1, "metadata.name", "a PodGroup is submitted with its Pods"),
    ([PODGROUP, _pod("w-0", group=None)], 2,
     "metadata.annotations['scheduling.k8s.io/group-name']",
     "a Pod is submitted with its PodGroup"),
    ([PODGROUP, _pod("w-0"), _pod("x-0", group="other")], 3,
     "metadata.annotations['scheduling.k8s.io/group-name']",
     "names PodGroup 'other', which this file does not hold"),
    ([PODGROUP.replace("minMember: 3", "minTaskMember: {a: 1}"), _pod("w-0")], 1,
     "spec.minTaskMember", "is not supported"),
])
def test_pod_group_refusals(parts: list[str], document: int, path: str, message: str
                            ) -> None:
    with pytest.raises(SpecError) as info:
        _load("---\n".join(parts))
    found = [(i.document, i.path, i.message) for i in info.value.issues]
    assert any(d == document and p == path and m.startswith(message)
               for d, p, m in found), found


KUEUE = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: sample-job
  labels:
    kueue.x-k8s.io/queue-name: default
    kueue.x-k8s.io/priority-class: production
spec:
  parallelism: 3
  completions: 3
  suspend: true
  backoffLimit: 2
  activeDeadlineSeconds: 3600
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists}]
      containers:
        - name: dummy-job
          image: registry.k8s.io/e2e-test-images/agnhost:2.53
          command: [/agnhost, pause]
          resources:
            requests: {cpu: "1", memory: 200Mi}
"""


def test_a_kueue_job() -> None:
    bundle = _load(KUEUE)
    (job,) = bundle.jobs
    assert bundle.originals["sample-job"].format is ImportFormat.KUBERNETES_JOB
    assert (job.queue, job.priority_class, job.time_limit, job.held, job.scheduler_name) == (
        "default", "production", 3600, True, SchedulerName.DEFAULT)
    assert job.labels["kueue.x-k8s.io/queue-name"] == "default"
    (group,) = job.groups
    assert (group.replicas, group.task_retry_count, group.image) == (
        3, 2, "registry.k8s.io/e2e-test-images/agnhost:2.53")
    assert group.command == ("sh", "-c", 'JOB_COMPLETION_INDEX="$SHOAL_TASK_INDEX" exec "$@"',
                             "sh", "/agnhost", "pause")


def test_a_plain_kubernetes_job_goes_to_the_default_queue() -> None:
    (job,) = _load("""\
        apiVersion: batch/v1
        kind: Job
        metadata: {name: pi}
        spec:
          template:
            spec:
              restartPolicy: Never
              containers:
                - {name: pi, image: perl:5.34, command: [perl, -e, "print 1"]}
        """).jobs
    assert (job.queue, job.held, job.time_limit, job.groups[0].replicas) == (
        "default", False, None, 1)
    assert job.groups[0].task_retry_count == 6  # Kubernetes' default backoffLimit
    assert job.groups[0].command == ("perl", "-e", "print 1")


@pytest.mark.parametrize(("change", "path", "message"), [
    (("completions: 3", "completions: 6"), "spec.completions",
     "is 6, above parallelism 3: Shoal runs a job's tasks at once"),
    (("  completions: 3\n", ""), "spec.completions", "must be given with a parallelism"),
    (("suspend: true", "ttlSecondsAfterFinished: 100"), "spec.ttlSecondsAfterFinished",
     "is not supported"),
    (("suspend: true", "podFailurePolicy: {rules: []}"), "spec.podFailurePolicy",
     "is not supported: Shoal does not tell exit codes"),
    (("restartPolicy: Never", "restartPolicy: Always"), "spec.template.spec.restartPolicy",
     "must be Never or OnFailure"),
    (("tolerations: [{key: nvidia.com/gpu, operator: Exists}]", "volumes: []"),
     "spec.template.spec.volumes", "is not supported"),
    # A check across documents, at the original path too.
    (("kueue.x-k8s.io/queue-name: default", "kueue.x-k8s.io/queue-name: nowhere"),
     "metadata.labels['kueue.x-k8s.io/queue-name']", "unknown queue 'nowhere'"),
])
def test_kubernetes_job_refusals(change: tuple[str, str], path: str, message: str) -> None:
    text = KUEUE.replace(*change)
    with pytest.raises(SpecError) as info:
        load_text(text, "f.yaml", launchable=True, known_queues=["default"])
    found = [(i.path, i.message) for i in info.value.issues]
    assert any(p == path and m.startswith(message) for p, m in found), found


@pytest.mark.parametrize("name", ["volcano-job.yaml", "kueue-job.yaml",
                                  "volcano-podgroup.yaml"])
def test_the_examples_load(name: str) -> None:
    bundle = load_text((EXAMPLES / name).read_text(), name, launchable=True)
    assert len(bundle.jobs) == 1 and set(bundle.originals) == {bundle.jobs[0].name}
