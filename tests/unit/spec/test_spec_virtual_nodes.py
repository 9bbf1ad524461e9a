"""Seed 003's virtual-cluster spec: flexibleResourceMin / Max, fixedSizeNodes groups with a
scheduling policy, and the checks that refuse what no cluster of the declared nodes could
honour."""

from __future__ import annotations

import pytest
from spec_helpers import NODE, yaml

from shoal.api import FixedSizeNode, FixedSizeNodes, PlacementPolicy, ResourceLimit, Resources
from shoal.spec import SpecError, load_text

TWO_NODES = NODE.replace("metadata: {name: n1}", "metadata: {name: n}").replace(
    "spec:\n", "spec:\n  count: 2\n")
"""Two nodes of 64 CPUs, 512Gi and 8 GPUs."""


def vc(name: str, spec: str) -> str:
    return yaml(f"""
        apiVersion: shoal/v1
        kind: VirtualCluster
        metadata: {{name: {name}}}
        spec:
        """) + "".join(f"  {line}\n" for line in yaml(spec).splitlines())


def issues(*docs: str) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as caught:
        load_text("---\n".join(docs), "spec.yaml")
    return [(i.path, i.message) for i in caught.value.issues]


def test_the_seed_fields_load_into_flexible_and_fixed_parts() -> None:
    bundle = load_text("---\n".join([TWO_NODES, vc("tune", """
        flexibleResourceMin: {cpu: 2}
        flexibleResourceMax: {cpu: 8, gpu: 2}
        fixedSizeNodes:
          - schedulingPolicy: STRICT_SPREAD
            nodes:
              - {resources: {gpu: 1}, labels: {bundle_index: "0"}}
              - {resources: {gpu: 1}, labels: {bundle_index: "1"}}
          - nodes: [{resources: {gpu: 4}}]
        """)]))
    [tune] = bundle.virtual_clusters
    assert tune.min == Resources.of(cpu=2000)
    assert tune.max == ResourceLimit.of({"cpu": 8000, "gpu": 2})
    assert tune.fixed_size_nodes == (
        FixedSizeNodes((FixedSizeNode(Resources.of(gpu=1), {"bundle_index": "0"}),
                        FixedSizeNode(Resources.of(gpu=1), {"bundle_index": "1"})),
                       PlacementPolicy.STRICT_SPREAD),
        FixedSizeNodes((FixedSizeNode(Resources.of(gpu=4)),), PlacementPolicy.PACK))
    assert tune.guaranteed == Resources.of(cpu=2000, gpu=6)
    assert tune.ceiling == ResourceLimit.of({"cpu": 8000, "gpu": 8})


def test_the_older_names_still_load_but_not_beside_the_new_ones() -> None:
    [old] = load_text(vc("old", "min: {gpu: 2}\nmax: {gpu: 4}")).virtual_clusters
    assert old.min == Resources.of(gpu=2) and old.max == ResourceLimit.of({"gpu": 4})
    assert issues(vc("both", "min: {gpu: 2}\nflexibleResourceMin: {gpu: 2}")) == [
        ("spec.min", "is the older name of flexibleResourceMin: give one of them")]


def test_min_above_max_is_reported_under_the_name_used() -> None:
    [(path, message)] = issues(vc("v", "flexibleResourceMin: {gpu: 4}\n"
                                       "flexibleResourceMax: {gpu: 2}"))
    assert path == "spec.flexibleResourceMin"
    assert "must fit in this virtual cluster's flexibleResourceMax" in message


@pytest.mark.parametrize(("spec", "path", "fragment"), [
    ("fixedSizeNodes: [{nodes: []}]", "spec.fixedSizeNodes[0].nodes", "at least 1"),
    ("fixedSizeNodes: [{nodes: [{resources: {}}]}]",
     "spec.fixedSizeNodes[0].nodes[0].resources", "a virtual node of size zero"),
    ("fixedSizeNodes: [{schedulingPolicy: SCATTER, nodes: [{resources: {gpu: 1}}]}]",
     "spec.fixedSizeNodes[0].schedulingPolicy", "PACK"),
    ("fixedSizeNodes: [{nodes: [{resources: {gpu: 1}, colour: red}]}]",
     "spec.fixedSizeNodes[0].nodes[0].colour", ""),
])
def test_malformed_fixed_size_nodes_name_the_field(spec: str, path: str, fragment: str) -> None:
    [(got_path, message)] = issues(vc("v", spec))
    assert got_path == path
    assert fragment in message


def test_strict_spread_over_more_nodes_than_exist_is_infeasible() -> None:
    three = vc("spread", """
        fixedSizeNodes:
          - schedulingPolicy: STRICT_SPREAD
            nodes: [{resources: {gpu: 1}}, {resources: {gpu: 1}}, {resources: {gpu: 1}}]
        """)
    [(path, message)] = issues(TWO_NODES, three)
    assert path == "spec.fixedSizeNodes[0]"
    assert "STRICT_SPREAD needs 3 distinct nodes" in message
    # Without nodes in the load there is nothing to check against; PACK may share a node.
    assert load_text(three).virtual_clusters
    assert load_text("---\n".join([TWO_NODES, three.replace("STRICT_SPREAD", "PACK")]))


def test_a_virtual_node_larger_than_every_node_is_infeasible() -> None:
    [(path, message)] = issues(TWO_NODES, vc("big", "fixedSizeNodes: [{nodes: [{resources: "
                                                     "{gpu: 9}}]}]"))
    assert path == "spec.fixedSizeNodes[0].nodes[0].resources"
    assert "fits on none of the 2 schedulable nodes" in message


def test_fixed_size_nodes_count_towards_the_guarantees_a_parent_must_hold() -> None:
    parent = vc("org", "flexibleResourceMin: {gpu: 4}")
    child = vc("team", "parent: org\nfixedSizeNodes: [{nodes: [{resources: {gpu: 3}}]}]")
    other = vc("lab", "parent: org\nmin: {gpu: 2}")
    assert load_text("---\n".join([parent, child])).virtual_clusters
    [(path, message)] = issues(parent, child, other)
    assert path == "spec.flexibleResourceMin"
    assert "children ('team', 'lab') add up to {gpu=5}" in message


def test_fixed_size_nodes_that_fit_alone_but_not_together_are_refused() -> None:
    # 6 + 6 + 3 GPUs is within the nodes' 16, but 6 and 6 leave 2 GPUs on each node.
    a = vc("a", "fixedSizeNodes: [{nodes: [{resources: {gpu: 6}}]}]")
    b = vc("b", "fixedSizeNodes: [{nodes: [{resources: {gpu: 6}}]}]")
    c = vc("c", "fixedSizeNodes: [{nodes: [{resources: {gpu: 3}}]}]")
    assert load_text("---\n".join([TWO_NODES, a, b])).virtual_clusters
    [(path, message)] = issues(TWO_NODES, a, b, c)
    assert path == "spec.fixedSizeNodes"
    assert "cannot all be carved out of the nodes, even idle" in message
    assert "no node has {gpu=3} free" in message
