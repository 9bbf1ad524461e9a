"""Names starting with `flavor.` are the core's own (a flavor's amounts, `flavor.a100/gpu`):
a document that declares one anywhere a resource is named is refused at that field."""

from __future__ import annotations

import pytest
from spec_helpers import JOB, JOB_1, NODE, SOURCE, docs, issues, one_issue, vc, yaml

from shoal.api.flavors import flavor_dimension
from shoal.spec import load_text

RESERVED = flavor_dimension("a100", "gpu")
QUOTED = f"['{RESERVED}']"
"""How a field path shows the name (it has a '.' and a '/', so it is quoted)."""

NODE_1 = f"{SOURCE}: document 1 (Node 'n1'): "
TEAM = f"{SOURCE}: document 1 (VirtualCluster 'team'): "


def _refused(line: str, prefix: str) -> None:
    assert line.startswith(prefix), line
    assert "'flavor.'" in line and "ResourceFlavor" in line, line


def test_a_plain_name_like_flavor_is_still_a_resource() -> None:
    # Only the reserved prefix is refused, not every name that mentions a flavor.
    text = NODE.replace("gpu: 8}", "gpu: 8, example.com/flavor: 2}")
    (node,) = load_text(text, SOURCE).nodes
    assert node.capacity.get("example.com/flavor") == 2


@pytest.mark.parametrize("field", ["capacity", "allocatable"])
def test_a_node_cannot_declare_a_flavor_dimension(field: str) -> None:
    text = NODE.replace("gpu: 8}", f"gpu: 8}}\n  allocatable: {{cpu: 1, '{RESERVED}': 1}}"
                        if field == "allocatable" else f"gpu: 8, '{RESERVED}': 8}}")
    _refused(one_issue(text), f"{NODE_1}spec.{field}{QUOTED}: ")


def test_a_task_cannot_request_a_flavor_dimension() -> None:
    text = JOB.replace("gpu: 2}", f"gpu: 2, '{RESERVED}': 2}}")
    _refused(one_issue(text), f"{JOB_1}spec.taskGroups[0].resources{QUOTED}: ")


def test_min_resources_cannot_name_a_flavor_dimension() -> None:
    text = JOB.replace("spec:\n", f"spec:\n  minResources: {{'{RESERVED}': 2}}\n")
    _refused(one_issue(text), f"{JOB_1}spec.minResources{QUOTED}: ")


@pytest.mark.parametrize("field", ["flexibleResourceMin", "flexibleResourceMax", "min", "max",
                                   "borrowingLimit", "lendingLimit"])
def test_a_quota_cannot_name_a_flavor_dimension(field: str) -> None:
    found = [str(i) for i in issues(vc("team", f"{{{field}: {{'{RESERVED}': 4}}}}"))]
    assert len(found) == 1, found
    _refused(found[0], f"{TEAM}spec.{field}{QUOTED}: ")


@pytest.mark.parametrize("field", ["min", "max"])
def test_a_flavor_quota_names_plain_resources_only(field: str) -> None:
    flavor = yaml("""
        apiVersion: shoal/v1
        kind: ResourceFlavor
        metadata: {name: a100}
        spec: {}
        """)
    team = vc("team", f"{{flavors: [{{name: a100, {field}: {{'{RESERVED}': 4}}}}]}}")
    found = [str(i) for i in issues(docs(team, flavor))]
    assert len(found) == 1, found
    _refused(found[0], f"{TEAM}spec.flavors[0].{field}{QUOTED}: ")


def test_a_fixed_size_node_cannot_name_a_flavor_dimension() -> None:
    team = vc("team", f"{{fixedSizeNodes: [{{nodes: [{{resources: {{'{RESERVED}': 1}}}}]}}]}}")
    found = [str(i) for i in issues(docs(team, NODE))]
    assert len(found) == 1, found
    _refused(found[0], f"{TEAM}spec.fixedSizeNodes[0].nodes[0].resources{QUOTED}: ")
