"""`shoal schedule` on `examples/sedna/`: edge workers on the edge node their file names,
cloud workers on cloud nodes (`node-role: cloud`), the gang placed together; a node's own
`kubernetes.io/hostname` and what happens where nodes declare no role."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shoal.cli.main import app

SEDNA = Path(__file__).resolve().parents[2] / "examples" / "sedna"
runner = CliRunner()


def schedule(*files: Path, cycles: int = 2) -> dict[str, Any]:
    result = runner.invoke(app, ["schedule", *map(str, files), "-n", str(cycles), "-o", "json"])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def placed(out: dict[str, Any]) -> dict[str, str]:
    return {b["task"]: b["node"] for c in out["cycles"] for b in c["binds"]}


def test_federated_learning_trainers_on_their_edge_nodes_aggregator_on_cloud() -> None:
    out = schedule(SEDNA / "cluster.yaml", SEDNA / "federated-learning.yaml")
    assert placed(out) == {"surface-defect/aggregator/0": "cloud-0",
                           "surface-defect/trainer-0/0": "edge-0",
                           "surface-defect/trainer-1/0": "edge-1"}
    assert len({b["task"] for b in out["cycles"][0]["binds"]}) == 3  # one gang, one cycle


def test_joint_inference_cloud_model_on_cloud_little_model_on_its_edge() -> None:
    out = schedule(SEDNA / "cluster.yaml", SEDNA / "joint-inference.yaml")
    assert placed(out) == {"helmet-detection/cloud/0": "cloud-0",
                           "helmet-detection/edge/0": "edge-0"}


@pytest.mark.parametrize("name", ["incremental", "lifelong"])
def test_learning_phases_train_on_cloud_the_others_wait_in_order(name: str) -> None:
    """Train places on the cloud; eval and deploy wait for the phase before them to succeed
    (`dependsOn`; the live test runs all three, deploy on its edge node)."""
    out = schedule(SEDNA / "cluster.yaml", SEDNA / f"{name}-learning.yaml")
    assert placed(out) == {f"{name}-train/train/0": "cloud-0"}
    reasons = {p["job"]: json.dumps(p["reason"]) for p in out["pending"]}
    assert f"{name}-train" in reasons[f"{name}-eval"]
    assert f"{name}-eval" in reasons[f"{name}-deploy"]


def test_a_worker_pinned_to_a_missing_node_waits_and_says_why(tmp_path: Path) -> None:
    text = (SEDNA / "federated-learning.yaml").read_text().replace("nodeName: edge-1",
                                                                   "nodeName: edge-9")
    (tmp_path / "fl.yaml").write_text(text)
    out = schedule(SEDNA / "cluster.yaml", tmp_path / "fl.yaml")
    assert placed(out) == {}
    (reason,) = [p["reason"] for p in out["pending"] if p["job"] == "surface-defect"]
    assert "kubernetes.io/hostname=edge-9" in json.dumps(reason)


def test_without_node_roles_only_pinned_workers_place(tmp_path: Path) -> None:
    """Nodes that declare no role: a worker its file pins still places; one it does not pin
    waits for a node of its role, and says so."""
    cluster = (SEDNA / "cluster.yaml").read_text()
    for role in ("cloud", "edge"):
        cluster = cluster.replace(f", labels: {{node-role: {role}}}", "")
    (tmp_path / "cluster.yaml").write_text(cluster)
    out = schedule(tmp_path / "cluster.yaml", SEDNA / "joint-inference.yaml")
    assert placed(out) == {}  # a gang: the unpinned cloud model holds back the pinned edge one
    (reason,) = [p["reason"] for p in out["pending"] if p["job"] == "helmet-detection"]
    assert "node-role=cloud" in json.dumps(reason)
    lifelong = schedule(tmp_path / "cluster.yaml", SEDNA / "lifelong-learning.yaml")
    assert placed(lifelong) == {}  # train has no cloud node; eval and deploy wait for it
    (train,) = [p["reason"] for p in lifelong["pending"] if p["job"] == "lifelong-train"]
    assert "node-role=cloud" in json.dumps(train)
