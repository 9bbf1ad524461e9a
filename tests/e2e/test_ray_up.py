"""End to end on Ray: `shoal up --engine ray --ray-address <cluster>` as a real subprocess,
against a real multi-node Ray cluster started on this machine for the whole module
(`ray_support.RayNodes`: a head, and a node with 2 fake GPUs and a custom label).

Reusable by other Ray end-to-end tests: the module-scoped `ray_cluster` fixture (copy it
with the nodes a module needs), and `RayServers` (the conftest's `ray_servers` fixture),
which starts `shoal up --engine ray` against the module's `ray_cluster` and, at teardown,
stops every server, the task processes they left (each runs in its own session on its node,
here this machine) and their Ray actors.

As root (CI) the tasks run as unprivileged OS users (Ray runs as root here, as the README
asks), under the servers' `--work-dir`; they run `task_python()`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from ray_support import RayNodes, namespace_of
from task_users import Scratch
from test_shoal_up import Server, job_yaml, stop, stop_all, submit, wait_for

from shoal.client import wait_until_healthy
from shoal.executors.local import free_port

#: A safety net only: a Ray actor (a worker process) takes seconds to start on a busy box.
DEADLINE = 180.0
#: The module's Ray nodes: Shoal's node names → `Cluster.add_node` arguments.
NODES = {"ray-head": {"num_cpus": 1},
         "ray-gpu": {"num_cpus": 2, "num_gpus": 2, "labels": {"team": "nlp"}}}


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayNodes]:
    """One real Ray cluster for the module, started at once (every test here uses it)."""
    with RayNodes(NODES) as nodes:
        nodes.cluster  # noqa: B018 - start it now, not inside a test's deadline
        yield nodes


def start_ray_up(tmp: Path, nodes: RayNodes, work: Path, *args: str) -> Server:
    """`shoal up --engine ray` on `tmp/data` against `nodes`' cluster, in a Ray namespace of
    its data directory's own; `args`: more flags."""
    data, port = tmp / "data", free_port()
    shoal = Path(sys.executable).parent / "shoal"
    process = subprocess.Popen(
        [str(shoal), "up", "--engine", "ray", "--ray-address", nodes.address,
         "--ray-namespace", namespace_of(data / "executor"), "--data-dir", str(data),
         "--port", str(port), "--interval", "0.2", "--grace-period", "1",
         "--work-dir", str(work), *args],
        stdout=open(tmp / "server.out", "ab"),  # noqa: SIM115
        stderr=open(tmp / "server.log", "ab"))  # noqa: SIM115
    server = Server(data, port, process)
    if wait_until_healthy(server.url, DEADLINE, lambda: process.poll() is None):
        return server
    stop(server)
    raise AssertionError(f"shoal up --engine ray did not serve (exit {process.poll()}): "
                         + (tmp / "server.log").read_text())


@dataclass
class RayServers:
    """Starts `shoal up --engine ray` on one data directory (a restart reuses it); `close`
    stops them all, kills the task processes left behind and ends their Ray actors."""

    tmp: Path
    nodes: RayNodes
    started: list[Server] = field(default_factory=list)
    scratch: Scratch = field(default_factory=Scratch)

    def start(self, *args: str) -> Server:
        server = start_ray_up(self.tmp, self.nodes, self.scratch.work, *args)
        self.started.append(server)
        return server

    def close(self) -> None:
        stop_all(self.started, self.tmp / "data")
        from shoal.executors.ray_engine import RayExecutor

        root = self.tmp / "data" / "executor"
        if root.exists():
            RayExecutor(root, namespace=namespace_of(root)).close()
        self.scratch.close()


def _logs(client: httpx.Client, job: str) -> str:
    answer = client.get(f"/api/v1/jobs/{job}/logs", params={"task": "worker-0"})
    assert answer.status_code == 200, answer.text
    return answer.text


def test_shoal_up_on_ray_lists_rays_nodes_and_runs_a_job(ray_servers: RayServers) -> None:
    import ray

    server = ray_servers.start()
    assert "engine: ray" in (ray_servers.tmp / "server.out").read_text()
    with server.client() as client:
        nodes = {n["name"]: n for n in client.get("/api/v1/nodes").json()}
        assert set(nodes) == set(NODES)
        gpu = nodes["ray-gpu"]
        assert str(gpu["capacity"]["gpu"]) == "2" and gpu["labels"] == {
            "team": "nlp", "kubernetes.io/hostname": "ray-gpu"}
        assert gpu["state"] == "Ready"
        code = ("import os; print(os.environ['CUDA_VISIBLE_DEVICES'], "
                "os.environ['MASTER_ADDR'], os.environ['RANK'], os.environ['WORLD_SIZE'])")
        # One GPU: only ray-gpu has any, so that is where it runs.
        submit(client, job_yaml("on-ray", code, gpu=1, cpu="1", memory="128Mi"))
        job = wait_for(client, "on-ray", {"Succeeded", "Failed"}, DEADLINE)
        assert job["status"]["state"] == "Succeeded", _logs(client, "on-ray")  # type: ignore[index]
        tasks = client.get("/api/v1/jobs/on-ray/tasks").json()["items"]
        assert [t["node"] for t in tasks] == ["ray-gpu"]
        visible, master, rank, world = _logs(client, "on-ray").split()
    address = next(n["NodeManagerAddress"] for n in ray.nodes()
                   if n["Alive"] and n["Labels"].get("shoal.io/node") == "ray-gpu")
    assert visible in {"0", "1"} and (rank, world) == ("0", "1")
    assert master == address  # rank 0's node, as Ray knows it
