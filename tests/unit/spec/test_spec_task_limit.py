"""`pods`: a node's task limit (`capacity.pods`), and nowhere else."""

from __future__ import annotations

from spec_helpers import JOB, JOB_1, NODE, SOURCE, docs, expect, issues, one_issue, vc

from shoal.api.resources import PODS
from shoal.core.nodes import ClusterState
from shoal.spec import load_text


def test_a_nodes_capacity_may_declare_pods() -> None:
    text = NODE.replace("gpu: 8}", "gpu: 8, pods: 110}")
    (node,) = load_text(text, SOURCE).nodes
    assert node.capacity.get(PODS) == 110
    state = ClusterState([node]).by_name["n1"]
    assert state.pod_limited and state.task_slots() == 110


def test_a_node_without_pods_is_unlimited() -> None:
    (node,) = load_text(NODE, SOURCE).nodes
    state = ClusterState([node]).by_name["n1"]
    assert not state.pod_limited and state.task_slots() is None


def test_a_task_cannot_request_pods() -> None:
    line = one_issue(JOB.replace("gpu: 2}", "gpu: 2, pods: 1}"))
    expect(line, f"{JOB_1}spec.taskGroups[0].resources.pods: ", "task limit",
           "cannot request it")


def test_a_quota_cannot_name_pods() -> None:
    found = [str(i) for i in issues(vc("team", "{max: {pods: 10}, min: {pods: 1}}"))]
    where = f"{SOURCE}: document 1 (VirtualCluster 'team'): "
    assert any(line.startswith(f"{where}spec.max.pods: ") and "quota" in line
               for line in found), found
    assert any(line.startswith(f"{where}spec.min.pods: ") for line in found), found


def test_min_resources_cannot_name_pods() -> None:
    text = JOB.replace("spec:\n", "spec:\n  minResources: {pods: 2}\n")
    line = one_issue(docs(text))
    expect(line, f"{JOB_1}spec.minResources.pods: ", "task limit")
