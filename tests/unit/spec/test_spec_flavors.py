"""Resource flavors as documents write them (issue 16), and the errors that name them."""

from __future__ import annotations

from spec_helpers import SOURCE, docs, expect, issues, one_issue, vc, yaml

from shoal.api import ResourceLimit, Resources
from shoal.api.flavors import (
    FlavorQuota,
    ResourceFlavor,
    WhenCanBorrow,
    WhenCanPreempt,
    flavor_dimension,
)
from shoal.spec import load_text


def flavor(name: str, labels: str = "{}") -> str:
    return yaml(f"""
        apiVersion: shoal/v1
        kind: ResourceFlavor
        metadata: {{name: {name}}}
        spec: {{nodeLabels: {labels}}}
        """)


TEAM = vc("team", """
        flavors:
          - {name: a100, min: {gpu: 8}, max: {gpu: 16}}
          - {name: h100, min: {gpu: 4}}
        flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: Preempt}""".replace(
    "\n", "\n  "))


def test_flavors_and_fungibility_are_read() -> None:
    bundle = load_text(docs(flavor("a100", "{gpu-type: a100}"), flavor("h100"), TEAM), SOURCE)
    assert bundle.resource_flavors == (ResourceFlavor("a100", {"gpu-type": "a100"}),
                                       ResourceFlavor("h100", {}))
    team = next(v for v in bundle.virtual_clusters if v.name == "team")
    assert team.flavors == (
        FlavorQuota("a100", Resources.of(gpu=8), ResourceLimit.of({"gpu": 16})),
        FlavorQuota("h100", Resources.of(gpu=4)))
    assert team.flavor_fungibility.when_can_borrow is WhenCanBorrow.TRY_NEXT_FLAVOR
    assert team.flavor_fungibility.when_can_preempt is WhenCanPreempt.PREEMPT
    # The quota tree counts them in the flavors' own dimensions.
    assert team.guaranteed.get(flavor_dimension("a100", "gpu")) == 8
    assert team.guaranteed.get(flavor_dimension("h100", "gpu")) == 4
    assert team.ceiling.get(flavor_dimension("a100", "gpu")) == 16
    assert team.ceiling.get(flavor_dimension("h100", "gpu")) is None
    assert team.ceiling.get("gpu") is None


def test_fungibility_defaults_are_kueues() -> None:
    team = load_text(docs(flavor("a100"), vc("team", "{flavors: [{name: a100}]}")),
                     SOURCE).virtual_clusters[0]
    assert team.flavor_fungibility.when_can_borrow is WhenCanBorrow.BORROW
    assert team.flavor_fungibility.when_can_preempt is WhenCanPreempt.TRY_NEXT_FLAVOR


def test_an_unknown_flavor_is_named_at_its_entry() -> None:
    line = one_issue(docs(flavor("a100"), TEAM))
    expect(line, f"{SOURCE}: document 2 (VirtualCluster 'team'): spec.flavors[1].name: ",
           "unknown resource flavor 'h100'", "'a100'")


def test_a_flavor_known_outside_the_load_is_no_error() -> None:
    bundle = load_text(TEAM, SOURCE, known_resource_flavors=("a100", "h100"))
    assert [q.name for q in bundle.virtual_clusters[0].flavors] == ["a100", "h100"]


def test_bad_flavor_entries_are_named() -> None:
    entries = """
        flavors:
          - {name: a100, min: {gpu: 8}, max: {gpu: 4}}
          - {name: a100, min: {gpu: many}}"""
    text = docs(flavor("a100"), vc("team", (entries + """
        flavorFungibility: {whenCanBorrow: Sometimes}""").replace("\n", "\n  ")))
    lines = [str(i) for i in issues(text)]
    where = f"{SOURCE}: document 2 (VirtualCluster 'team'): "
    assert any(line.startswith(f"{where}spec.flavorFungibility.whenCanBorrow: ")
               and "'Borrow' or 'TryNextFlavor'" in line for line in lines), lines
    text = docs(flavor("a100"), vc("team", entries.replace("\n", "\n  ")))
    lines = [str(i) for i in issues(text)]
    assert len(lines) == 3, lines
    expect(lines[0], f"{where}spec.flavors[0].min: ", "at most max", "gpu 8 > 4")
    expect(lines[1], f"{where}spec.flavors[1].name: ", "'a100' is listed twice")
    expect(lines[2], f"{where}spec.flavors[1].min.gpu: ")


def test_a_flavor_named_twice_and_bad_labels() -> None:
    lines = [str(i) for i in issues(docs(flavor("a100"), flavor("a100")))]
    assert len(lines) == 1 and "ResourceFlavor" in lines[0] and "a100" in lines[0], lines
    line = one_issue(flavor("a100", "{gpu-type: 3}"))
    expect(line, f"{SOURCE}: document 1 (ResourceFlavor 'a100'): spec.nodeLabels.gpu-type: ")


def test_flavor_guarantees_count_the_flavors_nodes() -> None:
    node = yaml("""
        apiVersion: shoal/v1
        kind: Node
        metadata: {name: n, labels: {gpu-type: a100}}
        spec: {capacity: {cpu: 8, memory: 64Gi, gpu: 8}}
        """)
    fits = vc("team", "{flavors: [{name: a100, min: {gpu: 8}}]}")
    load_text(docs(flavor("a100", "{gpu-type: a100}"), node, fits), SOURCE)
    over = vc("team", "{flavors: [{name: a100, min: {gpu: 9}}]}")
    line = one_issue(docs(flavor("a100", "{gpu-type: a100}"), node, over))
    assert "flavor.a100/gpu" in line, line
