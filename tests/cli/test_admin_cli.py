"""Issue 21's admin verbs through typer's CliRunner against one real `shoal up` of two
nodes: users, tokens, priority classes, virtual clusters (a drained one deleted by the
control loop once empty), a job's priority class, the audit log, and a live drain — the
task on the drained node is evicted once its `protectFor` has passed, and its job runs
again on the other node."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_shoal import Server
from shoal_documents import node_yaml, virtual_cluster_yaml
from shoal_up_process import shoal_up, until
from task_users import task_python
from typer.testing import CliRunner, Result

from shoal.api import TaskState
from shoal.client import ShoalClient

PROTECT_S = 3.0
runner = CliRunner()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("admin-up")
    (home / "cluster.yaml").write_text(node_yaml("node-a") + "---\n" + node_yaml("node-b")
                                       + "---\n" + virtual_cluster_yaml("team-a"))
    with shoal_up(home) as up:
        yield Server(home, up.url, up.token)


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("SHOAL_SERVER", "SHOAL_TOKEN", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SHOAL_CONFIG", str(tmp_path / "config" / "shoal.yaml"))
    monkeypatch.chdir(tmp_path)


def ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    return result.output


def refused(result: Result) -> str:
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    return result.output


def write(directory: Path, name: str, text: str) -> str:
    path = directory / name
    path.write_text(text)
    return str(path)


def test_users_and_their_tokens(server: Server) -> None:
    token = ok(server.shoal("user", "add", "carol", "--queue", "default")).strip().splitlines()[-1]
    assert "carol" in ok(server.shoal("user", "list"))
    shown = json.loads(ok(server.shoal("user", "update", "carol", "--admin", "--queues",
                                       "default,team-a", "-o", "json")))
    assert shown == [{"name": "carol", "admin": True, "queues": ["default", "team-a"]}]
    second = ok(server.shoal("user", "token", "carol")).strip().splitlines()[-1]
    assert "carol" in ok(server.shoal("whoami", token=second))
    assert "revoked 2 token(s) of carol" in ok(server.shoal("user", "revoke", "carol"))
    assert "refused" in refused(server.shoal("whoami", token=token))
    assert "refused" in refused(server.shoal("whoami", token=second))
    ok(server.shoal("user", "delete", "carol"))
    assert "no user 'carol'" in refused(server.shoal("user", "delete", "carol"))


def test_priority_classes_and_virtual_clusters(server: Server, tmp_path: Path) -> None:
    gold = "apiVersion: shoal/v1\nkind: PriorityClass\nmetadata: {name: gold}\nvalue: 500\n"
    ok(server.shoal("pc", "create", "-f", write(tmp_path, "pc.yaml", gold)))
    ok(server.shoal("pc", "update", "-f", write(tmp_path, "pc2.yaml",
                                                 gold.replace("500", "700"))))
    assert {"name": "gold", "value": 700}.items() <= next(
        p for p in json.loads(ok(server.shoal("pc", "list", "-o", "json")))
        if p["name"] == "gold").items()
    ok(server.shoal("pc", "delete", "gold"))

    tree = (virtual_cluster_yaml("team-b", "{flexibleResourceMin: {gpu: 1}}") + "---\n"
            + virtual_cluster_yaml("team-b-sub", "{parent: team-b, "
                                   "flexibleResourceMin: {gpu: 1}}"))
    ok(server.shoal("vc", "create", write(tmp_path, "vc.yaml", tree)))
    shrunk = virtual_cluster_yaml("team-b", "{flexibleResourceMin: {cpu: 1}}")
    assert "flexibleResourceMin" in refused(server.shoal(
        "vc", "update", "-f", write(tmp_path, "vc2.yaml", shrunk)))
    assert "team-b-sub" in refused(server.shoal("vc", "delete", "team-b"))
    ok(server.shoal("vc", "delete", "team-b-sub"))
    assert "deleted once its last job" in ok(server.shoal("vc", "delete", "team-b",
                                                          "--drain"))
    # Empty: the control loop deletes it on its own.
    until("the drained virtual cluster to be deleted", lambda: "team-b" not in {
        v["name"] for v in json.loads(ok(server.shoal("vc", "list", "-o", "json")))})
    actions = [(e["actor"], e["action"], e["target"]) for e in json.loads(ok(server.shoal(
        "audit", "--action", "vc.", "-o", "json")))]
    assert actions[:3] == [("shoal", "vc.delete", "team-b"), ("admin", "vc.drain", "team-b"),
                           ("admin", "vc.delete", "team-b-sub")]


def job_yaml(name: str) -> str:
    code = "import time; time.sleep(600)"
    return f"""\
apiVersion: shoal/v1
kind: Job
metadata: {{name: {name}}}
spec:
  schedulerName: shoal
  elastic: {{minReplicas: 1, protectFor: {PROTECT_S}s}}
  taskGroups:
    - name: worker
      replicas: 1
      resources: {{cpu: 2, memory: 1Gi, gpu: 2}}
      command: [{task_python()!r}, -c, {code!r}]
"""


def test_a_drain_moves_a_task_to_another_node_once_unprotected(server: Server,
                                                               tmp_path: Path) -> None:
    ok(server.shoal("submit", write(tmp_path, "job.yaml", job_yaml("moved"))))
    client = ShoalClient(server.url, server.token, timeout=30)

    def running() -> tuple[str, float] | None:
        [task] = client.tasks("moved").items
        if task.state is TaskState.RUNNING and task.node and task.start_time:
            return task.node, task.start_time
        return None
    first, started = until("the job to run", running)
    other = "node-b" if first == "node-a" else "node-a"

    assert "Cordoned (draining)" in ok(server.shoal("node", "drain", first))
    second, _ = until("the job to run again elsewhere",
                      lambda: (found := running()) and found[0] == other and found)
    assert second == other
    evicted = [e for e in client.events("moved") if "being drained" in e.cause]
    assert evicted and evicted[0].time >= started + PROTECT_S  # its protection held
    nodes = {n["name"]: n for n in json.loads(ok(server.shoal("nodes", "-o", "json")))}
    assert nodes[first]["state"] == "Cordoned"
    until("the drain to end", lambda: not next(
        n for n in client.nodes() if n.name == first).draining)

    raised = json.loads(ok(server.shoal("job", "set-priority", "moved", "production",
                                        "-o", "json")))
    assert raised["spec"]["priorityClassName"] == "production"
    assert "no priority class" in refused(server.shoal("job", "set-priority", "moved", "x"))
    assert "Ready" in ok(server.shoal("node", "uncordon", first))
    ok(server.shoal("cancel", "moved"))
    actions = [e["action"] for e in json.loads(ok(server.shoal("audit", "-o", "json")))]
    assert actions[:3] == ["node.uncordon", "job.set-priority", "node.drain"]
