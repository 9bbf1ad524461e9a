"""End to end: `shoal up --engine ray` against a real multi-node Ray cluster (issue 15).

One Ray cluster serves the module (`ray.cluster_utils.Cluster` through `RayNodes`): a head
with one CPU and no GPU, and GPU nodes with one CPU and two fake GPUs each (a node resource:
Shoal assigns the indices). Each test starts its own `shoal up --engine ray` on a fresh data
directory and Ray namespace, as a real subprocess driven over HTTP; nodes join and die while
it runs (`RayNodes.add`, `RayNodes.remove`). A one-CPU task is alone on its node, so the
members of a gang of one-CPU, one-GPU tasks run on different machines of the cluster.

- a 2-node gloo gang all-reduces across its nodes, each task seeing exactly the GPUs Shoal
  assigned it and rank 0's node address as MASTER_ADDR, its output read through the API;
- a node that joins while jobs wait for room runs them, without a restart;
- a node that dies under a running gang: the job is restarted whole on the nodes left;
- `kill -9` of `shoal up` while tasks run: the restarted one adopts them (a launch counter
  per task stays at one).

As root (CI) tasks run as an unprivileged OS user (`task_users`): their interpreter is one
that user can reach, with torch installed beside it for the gang (`torch_env.torch_python`).
Every wait is on a condition; deadlines are safety nets for a loaded 2-core machine, where a
Ray worker process takes seconds to start.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from ray_support import RayNodes, node_label
from shoal_documents import job_yaml
from task_users import task_python
from test_ray_up import RayServers
from test_shoal_up import kill_9, poll_until, submit, wait_for, wait_for_task_running
from torch_env import torch_python

#: Safety nets only: on a loaded 2-core machine each Ray actor takes seconds to start.
DEADLINE = 180.0
GPU_NODE = {"num_cpus": 1, "num_gpus": 2}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayNodes]:
    with RayNodes({"ray-head": {"num_cpus": 1}, "gpu-a": GPU_NODE, "gpu-b": GPU_NODE}) as nodes:
        nodes.cluster  # noqa: B018 - started here, so that its start is no test's wait
        yield nodes


def ray_job(name: str, command: list[str], *, replicas: int = 1, cpu: str = "1",
            gpu: int = 0, task_retries: int = 0) -> str:
    """A gang of `replicas` tasks running `command`; one CPU each keeps them on separate
    nodes."""
    return job_yaml(name, queue=None, replicas=replicas, gpu=gpu, cpu=cpu, memory="256Mi",
                    command=json.dumps(command),
                    extra_group=f"\n      taskRetryCount: {task_retries}")


def gated(launches: Path, go: Path) -> list[str]:
    """A task that appends its index to `launches` (once per start), then runs until `go`
    exists (or ten minutes, should a test end without creating it)."""
    code = (f"import os, time\n"
            f"open({str(launches)!r}, 'a').write(os.environ['SHOAL_TASK_INDEX'] + '\\n')\n"
            f"end = time.monotonic() + 600\n"
            f"while not os.path.exists({str(go)!r}) and time.monotonic() < end:\n"
            f"    time.sleep(0.05)\n")
    return [task_python(), "-c", code]


def tasks(client: httpx.Client, job: str) -> list[dict[str, Any]]:
    answer = client.get(f"/api/v1/jobs/{job}/tasks")
    assert answer.status_code == 200, answer.text
    return list(answer.json()["items"])


def launch_counts(launches: Path) -> dict[int, int]:
    """How many times each task index started, from a `gated` launch file."""
    lines = launches.read_text().split() if launches.exists() else []
    return {int(i): lines.count(i) for i in sorted(set(lines))}


def alive_gpu_nodes() -> dict[str, str]:
    """Ray's alive nodes with GPUs: Shoal name → node address."""
    import ray

    return {n["Labels"][node_label()]: n["NodeManagerAddress"]
            for n in ray.nodes()  # type: ignore[no-untyped-call]
            if n["Alive"] and n["Resources"].get("GPU", 0) > 0}


def pending(client: httpx.Client, job: str) -> bool:
    """Whether the scheduler considered `job` and said why it cannot start yet."""
    return client.get(f"/api/v1/jobs/{job}").json()["status"].get("pendingReason") is not None


def until(condition: Callable[[], bool], what: str) -> None:
    poll_until(condition, what, seconds=DEADLINE)


GANG = """\
import datetime, json, os, sys
import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=150))
value = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(value)
seen = {"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": value.item(),
        "cuda": os.environ["CUDA_VISIBLE_DEVICES"], "master": os.environ["MASTER_ADDR"],
        "index": int(os.environ["SHOAL_TASK_INDEX"])}
dist.destroy_process_group()
print(json.dumps(seen), flush=True)
with open(os.path.join(sys.argv[1], f"gang-{seen['rank']}.json"), "w") as out:
    out.write(json.dumps(seen))
"""


def test_a_gloo_gang_all_reduces_across_two_nodes_with_its_own_gpus(
        ray_servers: RayServers) -> None:
    python = str(torch_python())
    server = ray_servers.start()
    shared = ray_servers.scratch.shared
    job = ray_job("gang", [python, "-c", GANG, str(shared)], replicas=2, gpu=1)
    with server.client() as client:
        submit(client, job)
        done = wait_for(client, "gang", {"Succeeded", "Failed"}, DEADLINE)
        placed = {t["index"]: t for t in tasks(client, "gang")}
        logs = {i: client.get("/api/v1/jobs/gang/logs", params={"task": f"worker-{i}"}).text
                for i in placed}
    assert done["status"]["state"] == "Succeeded", (done, logs)  # type: ignore[index]
    seen = {r: json.loads((shared / f"gang-{r}.json").read_text()) for r in (0, 1)}
    assert [seen[r]["sum"] for r in (0, 1)] == [3.0, 3.0]  # 1 + 2, across the two nodes
    assert {seen[r]["world"] for r in (0, 1)} == {2}
    nodes = {i: placed[i]["node"] for i in (0, 1)}
    assert nodes[0] != nodes[1] and set(nodes.values()) <= set(alive_gpu_nodes()), nodes
    for rank in (0, 1):
        index = seen[rank]["index"]
        assigned = placed[index]["gpus"]
        assert len(assigned) == 1
        assert seen[rank]["cuda"] == ",".join(map(str, assigned)), (seen[rank], assigned)
        # The task's own stdout, read through `shoal logs` from the node that ran it.
        assert json.loads(logs[index].strip().splitlines()[-1]) == seen[rank]
    rank0 = next(placed[seen[r]["index"]]["node"] for r in (0, 1) if seen[r]["rank"] == 0)
    assert {seen[r]["master"] for r in (0, 1)} == {alive_gpu_nodes()[rank0]}


def test_a_node_that_joins_runs_the_jobs_that_wait(ray_servers: RayServers,
                                                   ray_cluster: RayNodes) -> None:
    shared = ray_servers.scratch.shared
    launches, go = shared / "launches", shared / "go"
    server = ray_servers.start()
    full = len(alive_gpu_nodes())
    with server.client() as client:
        # Every GPU node's one CPU taken: nothing needing a GPU fits anywhere.
        submit(client, ray_job("holders", gated(launches, go),
                               replicas=full, gpu=1))
        wait_for_task_running(client, "holders", DEADLINE)
        waiting = ["waits-0", "waits-1"]
        for name in waiting:
            submit(client, ray_job(name, gated(shared / name, go), gpu=1))
        for name in waiting:
            until(partial(pending, client, name), f"{name} to wait for room")
        ray_cluster.add("gpu-late", num_cpus=2, num_gpus=2)
        for name in waiting:
            wait_for_task_running(client, name, DEADLINE)
            assert [t["node"] for t in tasks(client, name)] == ["gpu-late"]
        go.touch()
        for name in ["holders", *waiting]:
            assert wait_for(client, name, {"Succeeded", "Failed"}, DEADLINE)[
                "status"]["state"] == "Succeeded", name  # type: ignore[index]
    assert launch_counts(launches) == dict.fromkeys(range(full), 1)
    assert all(launch_counts(shared / name) == {0: 1} for name in waiting)


def test_a_node_that_dies_under_a_gang_restarts_it_whole_on_the_rest(
        ray_servers: RayServers, ray_cluster: RayNodes) -> None:
    if len(alive_gpu_nodes()) < 3:  # the gang's two members, and room for the lost one
        ray_cluster.add("gpu-spare", **GPU_NODE)
    shared = ray_servers.scratch.shared
    launches, go = shared / "launches", shared / "go"
    server = ray_servers.start()
    with server.client() as client:
        submit(client, ray_job("gang", gated(launches, go), replicas=2,
                               gpu=1, task_retries=1))
        wait_for_task_running(client, "gang", DEADLINE)
        until(lambda: launch_counts(launches) == {0: 1, 1: 1}, "both members to start")
        first = {t["index"]: t["node"] for t in tasks(client, "gang")}
        ray_cluster.remove(first[1])
        # The whole gang starts again (the survivor too), on nodes that are alive.
        until(lambda: launch_counts(launches) == {0: 2, 1: 2}, "the gang to start again")
        wait_for_task_running(client, "gang", DEADLINE)
        again = {t["index"]: t["node"] for t in tasks(client, "gang")}
        go.touch()
        done = wait_for(client, "gang", {"Succeeded", "Failed"}, DEADLINE)
        retries = {t["index"]: t["retries"] for t in tasks(client, "gang")}
    assert done["status"]["state"] == "Succeeded", done  # type: ignore[index]
    # The lost member spent its task retry; the gang's restart spent no job retry.
    assert retries == {0: 0, 1: 1} and done["status"]["retries"] == 0, (retries, done)  # type: ignore[index]
    assert first[1] not in again.values() and len(set(again.values())) == 2, (first, again)
    assert launch_counts(launches) == {0: 2, 1: 2}


def test_kill_9_of_shoal_up_adopts_its_ray_tasks_and_runs_none_twice(
        ray_servers: RayServers) -> None:
    shared = ray_servers.scratch.shared
    launches, go = shared / "launches", shared / "go"
    first = ray_servers.start()
    with first.client() as client:
        submit(client, ray_job("survivor", gated(launches, go),
                               replicas=2, gpu=1))
        wait_for_task_running(client, "survivor", DEADLINE)
        until(lambda: launch_counts(launches) == {0: 1, 1: 1}, "both tasks to start")
    kill_9(first)
    second = ray_servers.start()  # the same data directory and Ray namespace
    with second.client() as client:
        # Adopted, not relaunched: still running before they are let go.
        assert {t["state"] for t in tasks(client, "survivor")} == {"Running"}
        go.touch()
        done = wait_for(client, "survivor", {"Succeeded", "Failed"}, DEADLINE)
    assert done["status"]["state"] == "Succeeded", done  # type: ignore[index]
    assert launch_counts(launches) == {0: 1, 1: 1}
