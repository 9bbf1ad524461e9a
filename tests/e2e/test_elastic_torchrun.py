"""End to end: a real elastic PyTorch job, scaled by Shoal through `shoal up` (seed 001).

`examples/elastic/torchrun.yaml` runs under `shoal up --profile elastic` with four (fake)
GPUs: torchrun agents with `--nnodes=1:4` and the c10d rendezvous, training on the CPU with
gloo. Shoal grows it 1 → 2 → 4; a job of a higher priority class arrives and takes two GPUs
back (4 → 2) and leaves; the training goes on through every change, resuming from its
checkpoint, and ends having learned its weights. It runs on every engine (`ENGINES`): the
local one (the example's one-machine cluster file) and Ray (a real Ray cluster on this
machine, one GPU per Ray node, so every torchrun agent is on a node of its own and they
meet at rank 0's node address).

Nothing here waits on a guess of how long something takes. The test decides when the job
may grow: the GPUs it has not reached yet are held by placeholder jobs of a higher priority
class, which the test releases (a file each) one size at a time, and only once the
training has done steps at the current size; `scaleCooldown` is 0. And the training cannot
run out of steps while Shoal and torchrun resize it: the test holds it (train.py's
`PAUSE_FILE`) from the moment a size has trained until the next world has formed (every
worker says so in its log as it starts) or, as it shrinks, until the tasks it gave up have
ended, so a slow re-rendezvous, or a world of 3 that torchrun forms on the way to 4 when
one agent starts late, never trains a step.

The example needs torch: the CPU build of torch 2.13.0 in the end-to-end tests' one
environment under `.cache/` (`torch_env`: made once, then reused), whose `bin` leads the
PATH of `shoal up` and so of its tasks (on Ray: of the Ray cluster, whose workers start the
tasks). Tasks run as the server's user (`--insecure-same-user`: this test is about
elasticity, not isolation; a task of its own OS user would start in a directory of its own,
where the command's relative `examples/elastic/train.py` is not)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml
from ray_support import RayNodes, namespace_of, node_label
from shoal_documents import job_yaml
from task_users import Scratch
from test_shoal_up import kill_leftover_tasks, submit, wait_for
from torch_env import torch_bin

from shoal.client import ShoalClient, wait_until_healthy
from shoal.executors.local import free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "elastic"
#: Enough to learn the weights: a loss of about 1e-9 after 300 steps at size 1 (larger
#: worlds average the gradient over more samples).
STEPS = 300
#: The pause per step that stands for real work (half train.py's default: the steps after
#: the last resize are most of the test's time). The test holds the training across every
#: resize, and it trains unheld only three times before its last size, each until the test
#: sees `TRAINED` steps at a size (polled every 0.1 s): 300 steps of 0.025 s (7.5 s, more
#: with each step's own work) leave a loaded machine's scheduling delays a wide margin
#: before the steps run out.
STEP_SECONDS = "0.025"
#: Steps a size must train before the test lets the job change size.
TRAINED = 3
JOB = "elastic-linear"
#: Safety nets only: torchrun agents and their workers each import torch, which takes
#: seconds on a loaded machine, and every resize restarts every worker.
RESIZE_DEADLINE = 300.0
FINISH_DEADLINE = 600.0
ENGINES = ("local", "ray")

pytestmark = pytest.mark.slow


def torch_path() -> str:
    return f"{torch_bin()}{os.pathsep}{os.environ['PATH']}"


@pytest.fixture(scope="module")
def ray_nodes() -> Iterator[RayNodes]:
    """Four nodes (the first is the head) with one fake GPU each, started as the README says
    a node running the example must be: from the repository's root (the task's command
    names `examples/elastic/train.py`) with torch's `bin` first on the PATH. Ray's workers,
    which start the tasks, inherit both from their node."""
    with RayNodes({f"gpu-{i}": {"num_gpus": 1} for i in range(4)}) as nodes:
        path, cwd = os.environ["PATH"], Path.cwd()
        os.environ["PATH"] = torch_path()
        os.chdir(ROOT)
        try:
            nodes.cluster  # noqa: B018 - started now, there and with that PATH
        finally:
            os.environ["PATH"] = path
            os.chdir(cwd)
        yield nodes


@dataclass(frozen=True)
class Engine:
    """How `shoal up` runs on an engine, and what its nodes are."""

    name: str
    args: list[str]
    addresses: dict[str, str]
    """Each node's address, which a task placed there as rank 0 gives as MASTER_ADDR."""
    one_task_per_node: bool
    """Whether each trainer runs on a node of its own (one GPU per node)."""


@dataclass(frozen=True)
class Elastic:
    """A running `shoal up` for this test: its URL, data dir, admin token, a directory its
    tasks may write to (`task_users.Scratch.shared`) and its engine."""

    url: str
    data: Path
    token: str
    shared: Path
    engine: Engine


def engine_for(name: str, request: pytest.FixtureRequest, root: Path) -> Engine:
    """The engine `name`, for a `shoal up` whose executor root is `root`: the example's
    cluster file on one machine; on Ray, the module's cluster (its nodes are Shoal's, the
    file gives the priority classes only), in a Ray namespace of the root's own."""
    if name == "local":
        return Engine(name, ["--cluster", str(EXAMPLE / "cluster.yaml")],
                      {"local": "127.0.0.1"}, one_task_per_node=False)
    nodes: RayNodes = request.getfixturevalue("ray_nodes")
    import ray

    addresses = {n["Labels"][node_label()]: n["NodeManagerAddress"] for n in ray.nodes()
                 if n["Alive"] and node_label() in n.get("Labels", {})}
    return Engine(name, ["--engine", "ray", "--ray-address", nodes.address, "--ray-namespace",
                         namespace_of(root), "--cluster",
                         str(EXAMPLE / "priority-classes.yaml")],
                  addresses, one_task_per_node=True)


def end_ray_actors(root: Path) -> None:
    """End the Ray actors a stopped `shoal up` left (they are detached)."""
    from shoal.executors.ray_engine import RayExecutor

    if root.exists():
        RayExecutor(root, namespace=namespace_of(root)).close()


@pytest.fixture(params=ENGINES)
def elastic_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Elastic]:
    """`shoal up --profile elastic` on the engine, with four GPUs."""
    data, port = tmp_path / "data", free_port()
    env = {**os.environ, "PATH": torch_path()}
    shoal = Path(sys.executable).parent / "shoal"
    scratch = Scratch()
    engine = engine_for(request.param, request, data / "executor")
    with open(tmp_path / "server.log", "ab") as log:
        process = subprocess.Popen(
            [str(shoal), "up", "--data-dir", str(data), "--port", str(port), "--profile",
             "elastic", *engine.args, "--interval", "0.5", "--grace-period", "10", "--work-dir",
             str(scratch.work), "--insecure-same-user"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_until_healthy(url, 180, lambda: process.poll() is None), \
            (tmp_path / "server.log").read_text()
        yield Elastic(url, data, (data / "admin.token").read_text().strip(), scratch.shared,
                      engine)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        kill_leftover_tasks(data)
        if engine.name == "ray":
            end_ray_actors(data / "executor")
        scratch.close()


def example_job(checkpoints: Path, pause: Path) -> str:
    """The example as it is, but for where it keeps its checkpoint, its pause file, no
    cooldown (the test, not a timer, decides when it may grow) and torchrun's log level
    (INFO: each agent logs its launch configuration, the rendezvous endpoint among it)."""
    doc = yaml.safe_load((EXAMPLE / "torchrun.yaml").read_text())
    spec = doc["spec"]
    spec["elastic"]["scaleCooldown"] = "0s"
    spec["taskGroups"][0]["env"].update(
        {"CHECKPOINT_DIR": str(checkpoints), "STEPS": str(STEPS), "STEP_SECONDS": STEP_SECONDS,
         "PAUSE_FILE": str(pause), "LOGLEVEL": "INFO"})
    return yaml.safe_dump(doc)


#: A task of the production class that holds its GPU until the test creates its file.
HOLD = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.2)"


def holding_job(name: str, replicas: int, release: Path) -> str:
    return job_yaml(name, queue=None, extra_spec="\n  priorityClassName: production",
                    replicas=replicas, gpu=1, cpu="1", memory="1Gi",
                    command=f"[{sys.executable!r}, -c, {json.dumps(HOLD)}, {str(release)!r}]")


def worlds(checkpoints: Path) -> list[tuple[int, int]]:
    """The world sizes the training ran in, in order, each with its number of steps."""
    path = checkpoints / "progress.jsonl"
    runs: list[tuple[int, int]] = []
    if not path.exists():
        return runs
    for line in path.read_text().splitlines():
        try:
            world = int(json.loads(line)["world"])
        except (ValueError, KeyError):
            continue  # a line being written
        if runs and runs[-1][0] == world:
            runs[-1] = (world, runs[-1][1] + 1)
        else:
            runs.append((world, 1))
    return runs


def wait_for_worlds(checkpoints: Path, expected: list[int]) -> None:
    """Until the training has run at least `TRAINED` steps in each of `expected`'s sizes, in
    order."""
    deadline = time.monotonic() + RESIZE_DEADLINE
    while time.monotonic() < deadline:
        sizes = [w for w, steps in worlds(checkpoints) if steps >= TRAINED]
        if sizes[:len(expected)] == expected:
            return
        time.sleep(0.1)
    raise AssertionError(f"the training ran in {worlds(checkpoints)}, not {expected} first")


def log_of(client: httpx.Client, task: str, stream: str = "stdout") -> str:
    """Everything task `task` of the job wrote to `stream`, every attempt, through the API."""
    text, offset = "", 0
    while True:
        answer = client.get(f"/api/v1/jobs/{JOB}/logs",
                            params={"task": task, "stream": stream, "offset": offset})
        if answer.status_code != 200 or not answer.content:
            return text
        text += answer.text
        offset = int(answer.headers["X-Shoal-Next-Offset"])


def wait_for_world_formed(client: httpx.Client, size: int) -> None:
    """Until every worker of a world of `size` has started (each prints `rank R of N` as it
    resumes): the rendezvous that forms it is over."""
    deadline = time.monotonic() + RESIZE_DEADLINE
    ranks: set[int] = set()
    while time.monotonic() < deadline:
        logs = "".join(log_of(client, f"trainer-{i}") for i in range(size))
        ranks = {int(r) for r in re.findall(rf"rank (\d+) of {size}: resuming", logs)}
        if ranks == set(range(size)):
            return
        time.sleep(0.2)
    raise AssertionError(f"no world of {size} formed (ranks seen: {sorted(ranks)})")


def running_trainers(client: httpx.Client) -> dict[str, str]:
    """The job's running tasks, each with its node."""
    tasks = client.get(f"/api/v1/jobs/{JOB}/tasks").json()["items"]
    return {t["name"]: t["node"] for t in tasks if t["state"] == "Running"}


def wait_for_tasks_holding(client: httpx.Client, count: int) -> None:
    """Until exactly `count` of the job's tasks hold a node (bound, running or stopping):
    those it gave up have ended."""
    deadline = time.monotonic() + RESIZE_DEADLINE
    holding: list[str] = []
    while time.monotonic() < deadline:
        tasks = client.get(f"/api/v1/jobs/{JOB}/tasks").json()["items"]
        holding = [t["name"] for t in tasks if t["state"] in {"Bound", "Running", "Releasing"}]
        if len(holding) == count:
            return
        time.sleep(0.2)
    raise AssertionError(f"{JOB} still holds {holding}, not {count} tasks")


def grow(client: httpx.Client, checkpoints: Path, pause: Path, releases: list[Path],
         sizes: list[int]) -> None:
    """Let the job grow to `sizes[-1]`: hold the training, free the GPUs it needs, wait for
    its new world to form, and let it train there."""
    pause.touch()
    for release in releases:
        release.touch()
    wait_for_world_formed(client, sizes[-1])
    pause.unlink()
    wait_for_worlds(checkpoints, sizes)


def test_torchrun_scales_with_shoal_and_finishes_training(elastic_server: Elastic) -> None:
    server = elastic_server
    checkpoints, pause = server.shared / "checkpoints", server.shared / "pause"
    released = [server.shared / f"release-{i}" for i in range(4)]
    with httpx.Client(base_url=server.url, timeout=30,
                      headers={"Authorization": f"Bearer {server.token}"}) as client:
        for i in range(1, 4):  # three of the four GPUs are taken: the job starts at 1
            submit(client, holding_job(f"hold-{i}", 1, released[i]))
        for i in range(1, 4):
            wait_for(client, f"hold-{i}", {"Running"}, seconds=RESIZE_DEADLINE)
        submit(client, example_job(checkpoints, pause))
        wait_for_worlds(checkpoints, [1])
        grow(client, checkpoints, pause, released[1:2], [1, 2])
        grow(client, checkpoints, pause, released[2:4], [1, 2, 4])
        # Held from here until the surplus has gone (below), so that the training cannot
        # end at 4 while the test looks or a job takes GPUs back.
        pause.touch()
        placed = running_trainers(client)
        assert len(placed) == 4, placed
        if server.engine.one_task_per_node:  # four agents, four machines
            assert len(set(placed.values())) == 4, placed
        for i in range(1, 4):
            held = wait_for(client, f"hold-{i}", {"Succeeded", "Failed"}, RESIZE_DEADLINE)
            assert held["status"]["state"] == "Succeeded", held  # type: ignore[index]

        # A job of the production class takes two GPUs back: 4 → 2.
        submit(client, holding_job("urgent", 2, released[0]))
        wait_for(client, "urgent", {"Running"}, seconds=RESIZE_DEADLINE)
        wait_for_tasks_holding(client, 2)
        pause.unlink()
        wait_for_worlds(checkpoints, [1, 2, 4, 2])
        # While `urgent` holds two GPUs the job stays at 2, as the API and client say.
        with ShoalClient(server.url, token=server.token) as shoal_client:
            assert shoal_client.get_job(JOB).elastic_size == 2
        released[0].touch()
        assert wait_for(client, "urgent", {"Succeeded", "Failed"}, RESIZE_DEADLINE)[
            "status"]["state"] == "Succeeded"  # type: ignore[index]
        job = wait_for(client, JOB, {"Succeeded", "Failed"}, seconds=FINISH_DEADLINE)
        events = client.get(f"/api/v1/jobs/{JOB}/events",
                            params={"limit": 1000}).json()["items"]
        rendezvous = {task: set(re.findall(r"rdzv_endpoint\s*:\s*(\S+):\d+",
                                           log_of(client, task, "stderr")))
                      for task in placed}
    assert job["status"]["state"] == "Succeeded", job  # type: ignore[index]
    progress = [json.loads(line) for line in
                (checkpoints / "progress.jsonl").read_text().splitlines()]
    assert progress[-1]["step"] == STEPS and progress[-1]["loss"] < 1e-6
    causes = [e["cause"] for e in events]
    assert any(c.startswith("evicted: elastic surplus taken (down to 2) for job 'urgent'")
               for c in causes), causes
    assert any(c.startswith("stopped after eviction") for c in causes), causes
    # Every agent, every attempt, met the others at rank 0's node (MASTER_ADDR).
    rank_0 = server.engine.addresses[placed["trainer-0"]]
    for task, endpoints in rendezvous.items():
        assert endpoints == {rank_0}, (task, endpoints, rank_0)
