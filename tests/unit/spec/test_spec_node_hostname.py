"""Every node carries `kubernetes.io/hostname: <its name>` (so a Kubernetes pod's nodeName
pins anywhere), which a Node document cannot set to anything else; `node-role` is a plain
label with a name in `shoal.api`."""

from __future__ import annotations

from spec_helpers import NODE, SOURCE, expect, one_issue

from shoal.api import Node, Resources
from shoal.api.objects import HOSTNAME_LABEL, NODE_ROLE_LABEL, NodeRole
from shoal.spec import load_text


def test_every_node_carries_its_own_name() -> None:
    (node,) = load_text(NODE, SOURCE).nodes
    assert node.labels[HOSTNAME_LABEL] == "n1"
    assert Node("live-1", Resources.of(cpu=1)).labels == {HOSTNAME_LABEL: "live-1"}
    counted = load_text(NODE.replace("spec:\n", "spec:\n  count: 2\n"), SOURCE).nodes
    assert [n.labels[HOSTNAME_LABEL] for n in counted] == ["n1-0", "n1-1"]


def test_the_label_cannot_name_another_node() -> None:
    same = NODE.replace("{name: n1}", "{name: n1, labels: {kubernetes.io/hostname: n1}}")
    assert load_text(same, SOURCE).nodes[0].labels[HOSTNAME_LABEL] == "n1"
    other = NODE.replace("{name: n1}", "{name: n1, labels: {kubernetes.io/hostname: n2}}")
    expect(one_issue(other), f"{SOURCE}: document 1 (Node 'n1'): "
                             f"metadata.labels.{HOSTNAME_LABEL}: ", "set by Shoal", "'n2'")


def test_node_role_is_a_label_like_any_other() -> None:
    edge = NODE.replace("{name: n1}", "{name: n1, labels: {node-role: edge}}")
    (node,) = load_text(edge, SOURCE).nodes
    assert NodeRole(node.labels[NODE_ROLE_LABEL]) is NodeRole.EDGE
