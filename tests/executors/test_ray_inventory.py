"""The Ray engine's node inventory (`shoal.executors.ray_nodes`): what `RayExecutor.nodes()`
says of Ray's nodes — their capacity, labels, `gpu-type` and address, and which are ready —
read from Ray's own records, first as recorded dicts, then from one real multi-node Ray
cluster for the whole module (a head, a node with fake A100s and custom labels, and a node
that is drained and then dies)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from executor_support import wait_until
from ray_support import RayNodes

from shoal.api import GPU_TYPE_LABEL, Resources
from shoal.api.objects import HOSTNAME_LABEL
from shoal.executors.contract import NodeHealth
from shoal.executors.ray_nodes import UNPLACEABLE, inventory, node_of

#: A safety net only: on a loaded machine a node takes seconds to join, die or drain.
DEADLINE = 120.0


def _record(node_id: str, *, alive: bool = True, labels: dict[str, str] | None = None,
            resources: dict[str, float] | None = None, death: str = "") -> dict[str, Any]:
    """A node as `ray.nodes()` reports it (the fields the inventory reads, and a few more)."""
    return {"NodeID": node_id, "Alive": alive, "NodeManagerAddress": "10.0.0.7",
            "NodeManagerHostname": "gpu-host", "DeathReason": 0 if alive else 3,
            "DeathReasonMessage": death,
            "Resources": resources or {"CPU": 1.0, "memory": 2.0 * 2**30},
            "Labels": {"ray.io/node-id": node_id, **(labels or {})}}


def test_a_ray_node_becomes_a_shoal_node() -> None:
    node = node_of(_record("abc", labels={"shoal.io/node": "gpu-01", "team": "nlp"},
                           resources={"CPU": 7.5, "memory": 16.0 * 2**30 + 5, "GPU": 8.0,
                                      "accelerator_type:A100-SXM4-80GB": 1.0, "rdma": 2.0,
                                      "licence": 0.5, "node:10.0.0.7": 1.0,
                                      "node:__internal_head__": 1.0,
                                      "object_store_memory": 1e9, "bad name!": 3.0}))
    assert node.name == "gpu-01"
    # Ray's bookkeeping is no capacity; a fraction of a custom resource is none of it.
    assert node.capacity == Resources.of(cpu=7500, memory=16 * 1024, gpu=8,
                                         extras={"rdma": 2})
    assert dict(node.labels) == {"team": "nlp", GPU_TYPE_LABEL: "A100-SXM4-80GB",
                                 HOSTNAME_LABEL: "gpu-01"}


def test_the_gpu_model_is_normalised_and_a_node_label_wins() -> None:
    assert node_of(_record("a", resources={"GPU": 1, "accelerator_type:NVIDIA H100 80GB": 1})
                   ).labels[GPU_TYPE_LABEL] == "H100-80GB"
    own = node_of(_record("b", labels={GPU_TYPE_LABEL: "mine"},
                          resources={"accelerator_type:A100": 1}))
    assert own.labels[GPU_TYPE_LABEL] == "mine"
    assert GPU_TYPE_LABEL not in node_of(_record("c")).labels  # no GPU model, no label
    assert node_of(_record("c")).name == "c"  # no shoal.io/node label: the Ray node id


def test_health_from_alive_draining_and_dead_records() -> None:
    found = inventory([_record("dead-id", alive=False, labels={"shoal.io/node": "b"},
                               death="the node was preempted"),
                       _record("new-id", labels={"shoal.io/node": "b"}),
                       _record("old-id", alive=False, labels={"shoal.io/node": "c"}),
                       _record("busy-id", labels={"shoal.io/node": "a"})],
                      draining={"busy-id"})
    by_name = {h.name: h for h in found.health}
    assert [h.name for h in found.health] == ["a", "b", "c"]
    assert (by_name["a"].ready, by_name["a"].reason) == (False, "draining")
    # A machine restarted under the same label is its alive node, not the dead record.
    assert (by_name["b"].ready, by_name["b"].reason) == (True, "")
    assert (by_name["c"].ready, by_name["c"].reason) == (False, "dead")
    assert by_name["b"].address == "10.0.0.7"
    assert dict(found.alive) == {"a": "busy-id", "b": "new-id"}
    gone = inventory([_record("x", alive=False, death="the node was preempted")])
    assert gone.health[0].reason == "dead: the node was preempted"


def test_a_node_that_refused_pinned_work_is_not_ready_while_ray_lists_it_alive() -> None:
    found = inventory([_record("gone-id", labels={"shoal.io/node": "a"}),
                       _record("fine-id", labels={"shoal.io/node": "b"})],
                      unplaceable={"gone-id"})
    by_name = {h.name: h for h in found.health}
    assert (by_name["a"].ready, by_name["a"].reason) == (False, UNPLACEABLE)
    assert (by_name["b"].ready, by_name["b"].reason) == (True, "")


# ---- a real Ray cluster -------------------------------------------------------------------

_RAY = RayNodes({"inv-head": {},
                 "inv-a100": {"num_gpus": 2, "labels": {"team": "nlp"},
                              "resources": {"accelerator_type:A100": 1, "rdma": 2}},
                 "inv-doomed": {}})


@pytest.fixture(scope="module")
def ray_nodes() -> Iterator[RayNodes]:
    with _RAY as nodes:
        yield nodes


def _health(ray_nodes: RayNodes, tmp_path: Path) -> dict[str, NodeHealth]:
    from shoal.executors.ray_engine import RayExecutor

    ray_nodes.cluster  # noqa: B018 - started on first use
    executor = RayExecutor(tmp_path / "engine", namespace="inventory-test")
    return {h.name: h for h in executor.nodes()}


def test_ray_nodes_report_capacity_labels_gpu_type_and_address(ray_nodes: RayNodes,
                                                               tmp_path: Path) -> None:
    import ray

    nodes = _health(ray_nodes, tmp_path)
    assert {"inv-head", "inv-a100", "inv-doomed"} <= set(nodes)
    a100 = nodes["inv-a100"]
    assert a100.ready and a100.reason == ""
    assert a100.node is not None
    assert a100.node.name == "inv-a100"
    # RayNodes gives a GPU node one CPU per GPU unless told otherwise.
    assert (a100.node.capacity.cpu, a100.node.capacity.gpu) == (2000, 2)
    assert a100.node.capacity.get("rdma") == 2
    assert a100.node.capacity.memory > 0
    assert dict(a100.node.labels) == {"team": "nlp", GPU_TYPE_LABEL: "A100",
                                      HOSTNAME_LABEL: "inv-a100"}
    addresses = {n["Labels"]["shoal.io/node"]: n["NodeManagerAddress"]
                 for n in ray.nodes() if n["Alive"]}
    assert a100.address == addresses["inv-a100"] != ""
    head = nodes["inv-head"]
    assert head.node is not None and head.node.capacity.gpu == 0
    assert GPU_TYPE_LABEL not in head.node.labels


def test_a_drained_node_is_not_ready_and_a_removed_one_is_dead(ray_nodes: RayNodes,
                                                               tmp_path: Path) -> None:
    import ray
    from ray.core.generated import autoscaler_pb2
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    assert _health(ray_nodes, tmp_path)["inv-doomed"].ready
    node_id = next(n["NodeID"] for n in ray.nodes()
                   if n["Alive"] and n["Labels"].get("shoal.io/node") == "inv-doomed")

    @ray.remote(num_cpus=0)
    class Busy:
        def ping(self) -> int:
            return 1

    # Ray drains an idle node at once (it dies): an actor keeps it busy, so it drains.
    busy = Busy.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)
                        ).remote()  # type: ignore[attr-defined]
    assert ray.get(busy.ping.remote(), timeout=DEADLINE) == 1
    deadline_ms = int((time.time() + 600) * 1000)
    accepted, why = ray._private.worker.global_worker.gcs_client.drain_node(
        node_id, autoscaler_pb2.DrainNodeReason.Value("DRAIN_NODE_REASON_PREEMPTION"),
        "maintenance", deadline_ms)
    assert accepted, why
    wait_until(lambda: not _health(ray_nodes, tmp_path)["inv-doomed"].ready, DEADLINE)
    drained = _health(ray_nodes, tmp_path)["inv-doomed"]
    assert (drained.ready, drained.reason) == (False, "draining")
    assert drained.node is not None and drained.address != ""

    ray_nodes.remove("inv-doomed")
    wait_until(lambda: _health(ray_nodes, tmp_path)["inv-doomed"].reason.startswith("dead"),
               DEADLINE)
    dead = _health(ray_nodes, tmp_path)["inv-doomed"]
    assert not dead.ready
    assert _health(ray_nodes, tmp_path)["inv-a100"].ready  # the others are untouched
