"""Cluster descriptions: native YAML, the Alibaba node list, synthetic clusters and the
`125x8` shorthand."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from shoal.api import Node, Resources
from shoal.sim.loaders import (
    ClusterDescription,
    load_cluster,
    parse_cluster_arg,
    synthetic_cluster,
)
from shoal.sim.loaders.cluster import most_common_gpus
from shoal.sim.trace import TraceError

REPO = Path(__file__).resolve().parents[3]


def test_small_cluster(examples: Path) -> None:
    cluster = load_cluster(examples / "cluster-small.yaml")
    assert [n.name for n in cluster.nodes] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert cluster.nodes[0].capacity == Resources(cpu=32000, memory=262144, gpu=4)
    assert cluster.gpu_types() == {"V100"}
    assert cluster.gpus_per_node == 4
    assert cluster.gpus == 16
    assert [vc.name for vc in cluster.virtual_clusters] == ["vision", "nlp"]
    assert cluster.virtual_clusters[0].min == Resources(gpu=8)
    assert cluster.source == str(examples / "cluster-small.yaml")
    assert load_cluster(examples / "cluster-small.yaml", gpus_per_node=2).gpus_per_node == 2


def test_philly_cluster(examples: Path) -> None:
    cluster = load_cluster(examples / "cluster-philly.yaml")
    assert len(cluster.nodes) == 125
    assert cluster.gpus == 1000
    assert cluster.gpus_per_node == 8
    assert cluster.virtual_clusters == ()


def test_quickstart_also_works_as_a_cluster() -> None:
    cluster = load_cluster(REPO / "examples" / "quickstart.yaml")
    assert len(cluster.nodes) == 6
    assert cluster.gpus_per_node == 8  # four nodes of 8 A100s, two of 4 V100s


def test_most_common_gpus_prefers_the_larger_on_a_tie() -> None:
    def node(name: str, gpus: int) -> Node:
        return Node(name, Resources(cpu=1000, gpu=gpus))

    assert most_common_gpus([node("a", 4), node("b", 8)]) == 8
    assert most_common_gpus([node("a", 4), node("b", 4), node("c", 8), node("d", 0),
                             node("e", 0), node("f", 0)]) == 4
    assert most_common_gpus([node("a", 0)]) == 0
    assert ClusterDescription.of([node("a", 2)]).gpus_per_node == 2
    with pytest.raises(ValueError):
        ClusterDescription.of([node("a", 2)], gpus_per_node=0)


def test_yaml_errors_name_file_line_and_field(write: Callable[[str, str], Path],
                                              tmp_path: Path) -> None:
    text = textwrap.dedent("""\
        apiVersion: shoal/v1
        kind: Node
        metadata: {name: n}
        spec:
          count: 2
          capacity: {cpu: 8, memory: 64Gi, gpu: many}
        ---
        apiVersion: shoal/v1
        kind: VirtualCluster
        metadata: {name: team}
        spec: {weight: 0}
        """)
    path = write("cluster.yaml", text)
    with pytest.raises(TraceError) as caught:
        load_cluster(path)
    error = caught.value
    assert (error.source, error.line, error.column) == (str(path), 6, "spec.capacity.gpu")
    assert str(error).startswith(f"{path}:6: field 'spec.capacity.gpu': ")
    assert "\nand 1 more:\n" in str(error)
    assert f"{path}:11: field 'spec.weight'" in str(error)
    with pytest.raises(TraceError, match="declares no Node"):
        load_cluster(write("vcs.yaml", "apiVersion: shoal/v1\nkind: VirtualCluster\n"
                                       "metadata: {name: a}\n"))
    with pytest.raises(TraceError, match="no such file"):
        load_cluster(tmp_path / "absent.yaml")
    with pytest.raises(TraceError, match="invalid YAML"):
        load_cluster(write("bad.yaml", "kind: [\n"))


def test_synthetic_cluster() -> None:
    cluster = synthetic_cluster(3, 4, gpu_type="A100")
    assert [n.name for n in cluster.nodes] == ["node-0", "node-1", "node-2"]
    assert cluster.nodes[0].capacity == Resources(cpu=64000, memory=524288, gpu=4)
    assert cluster.nodes[0].gpu_type == "A100"
    assert (cluster.gpus_per_node, cluster.gpus, cluster.source) == (4, 12, "3x4:A100")
    assert synthetic_cluster(1, gpu_type=None).nodes[0].labels == {  # a node's own name only
        "kubernetes.io/hostname": "node-0"}
    with pytest.raises(ValueError):
        synthetic_cluster(0)
    with pytest.raises(ValueError):
        synthetic_cluster(2, 0)


@pytest.mark.parametrize(("text", "nodes", "gpus", "gpu_type"), [
    ("125x8", 125, 8, "V100"),
    ("16 x 4", 16, 4, "V100"),
    ("2X8:A100", 2, 8, "A100"),
    ("4×2:T4", 4, 2, "T4"),
])
def test_shorthand(text: str, nodes: int, gpus: int, gpu_type: str) -> None:
    cluster = parse_cluster_arg(text)
    assert (len(cluster.nodes), cluster.gpus_per_node) == (nodes, gpus)
    assert cluster.gpu_types() == {gpu_type}


@pytest.mark.parametrize("text", ["125", "x8", "0x8", "4x0", "4x8:", "cluster.yaml"])
def test_bad_shorthand(text: str) -> None:
    with pytest.raises(TraceError) as caught:
        parse_cluster_arg(text)
    assert caught.value.source == text


def test_parse_cluster_arg_reads_files(examples: Path) -> None:
    assert len(parse_cluster_arg(examples / "cluster-small.yaml").nodes) == 4
    alibaba = parse_cluster_arg(str(examples / "alibaba-openb-nodes-sample.csv"))
    assert len(alibaba.nodes) == 40
    assert alibaba.gpus_per_node == 2  # 22 of the 40 nodes have 2 P100s
    milli = parse_cluster_arg(examples / "alibaba-openb-nodes-sample.csv",
                              gpu_sharing="milli")
    assert milli.nodes[0].capacity.get("gpu-milli") == 2000


def test_a_simulated_cluster_may_be_larger_than_a_server_would_take(
        write: Callable[[str, str], Path]) -> None:
    # `shoal up` takes at most 10,000 nodes by default; the simulator's files are sized
    # for whole simulated clusters (shoal.spec.limits.FILE_LIMITS).
    path = write("big.yaml", "apiVersion: shoal/v1\nkind: Node\nmetadata: {name: n}\n"
                             "spec: {capacity: {cpu: 8, gpu: 8}, count: 20000}\n")
    cluster = load_cluster(path)
    assert len(cluster.nodes) == 20_000 and cluster.gpus_per_node == 8
