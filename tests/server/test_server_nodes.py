"""Nodes' states through the API and the client: `GET /api/v1/nodes` says whether each node
is Ready, NotReady (and why, as its engine reported) or Cordoned; `PUT /nodes` changes the
declaration and keeps the condition; the client's views and `shoal nodes`' table show both."""

from __future__ import annotations

from rich.console import Console
from server_helpers import Api

from shoal.api import NodePhase
from shoal.cli.remote_render import nodes_table
from shoal.client import ShoalClient
from shoal.store.nodes import NodeCondition

YAML = {"Content-Type": "application/yaml"}
CORDON = """\
apiVersion: shoal/v1
kind: Node
metadata: {name: gpu-1, labels: {gpu-type: a100}}
spec: {capacity: {cpu: 32, memory: 256Gi, gpu: 8}, unschedulable: true}
"""


def states(api: Api) -> dict[str, tuple[str, str, bool]]:
    answer = api.request("GET", "/api/v1/nodes", "alice")
    assert answer.status_code == 200
    return {n["name"]: (n["state"], n["reason"], n["unschedulable"]) for n in answer.json()}


def test_nodes_say_their_state_and_why(api: Api) -> None:
    assert states(api) == {"gpu-0": ("Ready", "", False), "gpu-1": ("Ready", "", False)}
    api.repository.record_nodes([], {"gpu-1": NodeCondition(False, "dead: missed heartbeats")})
    assert states(api) == {"gpu-0": ("Ready", "", False),
                           "gpu-1": ("NotReady", "dead: missed heartbeats", False)}
    # A declaration replaced keeps what the engine reported: still NotReady, and cordoned.
    put = api.request("PUT", "/api/v1/nodes", "root", content=CORDON, headers=YAML)
    assert put.status_code == 200, put.text
    assert [(n["state"], n["reason"]) for n in put.json()] == [
        ("NotReady", "dead: missed heartbeats")]
    assert states(api)["gpu-1"] == ("NotReady", "dead: missed heartbeats", True)
    api.repository.record_nodes([], {"gpu-1": NodeCondition()})
    assert states(api)["gpu-1"] == ("Cordoned", "", True)


def test_the_client_and_the_table_show_states(api: Api) -> None:
    api.repository.record_nodes([], {"gpu-1": NodeCondition(False, "draining")})
    with ShoalClient(http=api.client, token=api.tokens["alice"], retry_delay=0) as shoal:
        views = shoal.nodes()
    assert [(v.name, v.state, v.reason) for v in views] == [
        ("gpu-0", NodePhase.READY, ""), ("gpu-1", NodePhase.NOT_READY, "draining")]
    console = Console(record=True, width=200)
    console.print(nodes_table(views))
    lines = console.export_text().splitlines()
    assert "STATE" in lines[0]
    assert "Ready" in lines[1] and "NotReady (draining)" in lines[2]
