"""`shoal.spec.imports.pod_template`: a Kubernetes pod template read as one native task
group — what it reads, what it accepts with no effect, and what it refuses at its path."""

from __future__ import annotations

from typing import Any

import pytest

from shoal.spec.errors import DocRef, IssueLog
from shoal.spec.imports.pod_template import PodTask, read_pod_template

DOC = DocRef("f.yaml", 1)


def _read(template: Any) -> tuple[PodTask | None, list[tuple[str, str]]]:
    log = IssueLog()
    task = read_pod_template(log, DOC, "spec.template", template)
    return task, [(i.path, i.message) for i in log.issues]


def _pod(container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "x"}, "annotations": {"a": "b"}},
            "spec": {"containers": [{"name": "c", **container}], **spec}}


@pytest.mark.parametrize(("template", "group"), [
    (_pod({"image": "img", "command": ["python"], "args": ["t.py"]}),
     {"image": "img", "command": ["python", "t.py"], "resources": {}}),
    (_pod({"resources": {"limits": {"cpu": "2", "memory": "1Gi"},
                         "requests": {"cpu": "1"}}}),
     {"resources": {"cpu": "1", "memory": "1Gi"}}),
    (_pod({"env": [{"name": "A", "value": "1"}, {"name": "B", "value": 2}],
           "workingDir": "/w"}),
     {"env": {"A": "1", "B": "2"}, "workingDir": "/w", "resources": {}}),
    (_pod({}, nodeSelector={"zone": "a"}, nodeName="n1"),
     {"nodeSelector": {"zone": "a", "kubernetes.io/hostname": "n1"}, "resources": {}}),
    # Accepted with no effect.
    (_pod({"ports": [{"containerPort": 80}], "imagePullPolicy": "Always"},
          tolerations=[{"key": "k"}], hostNetwork=True, restartPolicy="Never"),
     {"resources": {}}),
])
def test_read(template: dict[str, Any], group: dict[str, Any]) -> None:
    task, issues = _read(template)
    assert issues == []
    assert task is not None and task.group == group
    assert (task.labels, task.annotations) == ({"app": "x"}, {"a": "b"})


@pytest.mark.parametrize(("template", "path", "message"), [
    ("nope", "spec.template", "must be a pod template"),
    ({"metadata": {}}, "spec.template.spec", "a pod template needs a spec"),
    ({"spec": {"containers": []}}, "spec.template.spec.containers",
     "must hold exactly one container"),
    (_pod({}, volumes=[]), "spec.template.spec.volumes", "is not supported"),
    (_pod({}, affinity={}), "spec.template.spec.affinity", "is not supported"),
    (_pod({"volumeMounts": []}), "spec.template.spec.containers[0].volumeMounts",
     "is not supported"),
    (_pod({"env": [{"name": "A", "valueFrom": {"secretKeyRef": {}}}]}),
     "spec.template.spec.containers[0].env[0].valueFrom", "is not supported"),
    (_pod({"resources": {"claims": []}}),
     "spec.template.spec.containers[0].resources.claims", "unknown field"),
    (_pod({"command": "python"}), "spec.template.spec.containers[0].command",
     "must be a list of strings"),
])
def test_refused(template: Any, path: str, message: str) -> None:
    task, issues = _read(template)
    assert task is None
    assert any(p == path and m.startswith(message) for p, m in issues), issues
