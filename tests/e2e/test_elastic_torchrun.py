"""End to end: a real elastic PyTorch job, scaled by Shoal through `shoal up` (seed 001).

`examples/elastic/torchrun.yaml` runs under `shoal up --profile elastic` on one machine
with four (fake) GPUs: torchrun agents with `--nnodes=1:4` and the c10d rendezvous, training
on the CPU with gloo. Shoal starts it at one task and grows it 1 → 2 → 4; a job of a
higher priority class arrives and takes two GPUs back (4 → 2) and leaves; the training goes
on through every change, resuming from its checkpoint, and ends having learned its weights.

The example needs torch: the CPU build of torch 2.13.0 that this machine's pip installs
goes into a virtual environment of its own under `.cache/` (made once, then reused), whose
`bin` leads the PATH of `shoal up` and so of its tasks. That environment's interpreter is
the tests' own: where it lives beyond other users' reach (a 0700 home), tasks run as the
server's user (`--insecure-same-user`; this test is about elasticity, not isolation), and
otherwise as their own OS user, as `shoal up` does as root."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from task_users import Scratch, reachable_by_others
from test_shoal_up import kill_leftover_tasks, submit, wait_for

from shoal.client import ShoalClient, wait_until_healthy
from shoal.executors.local import free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "elastic"
TORCH_ENV = ROOT / ".cache" / "torch-2.13.0"
STEPS = 600

pytestmark = pytest.mark.slow


def torch_bin() -> Path:
    """The `bin` of a virtual environment with torch 2.13.0 (CPU), made if missing."""
    python = TORCH_ENV / "bin" / "python"
    if not (TORCH_ENV / "bin" / "torchrun").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(TORCH_ENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "torch==2.13.0"],
                       check=True)
    subprocess.run([str(python), "-c", "import torch.distributed.run"], check=True)
    return TORCH_ENV / "bin"


@pytest.fixture
def elastic_server(tmp_path: Path) -> Iterator[tuple[str, Path, Path]]:
    """`shoal up --profile elastic` on the example's cluster; yields its URL, data dir and a
    directory its tasks may write to (`task_users.Scratch.shared`)."""
    data, port = tmp_path / "data", free_port()
    bin_dir = torch_bin()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    shoal = Path(sys.executable).parent / "shoal"
    scratch = Scratch()
    same_user = [] if reachable_by_others(bin_dir / "python") else ["--insecure-same-user"]
    with open(tmp_path / "server.log", "ab") as log:
        process = subprocess.Popen(
            [str(shoal), "up", "--data-dir", str(data), "--port", str(port), "--profile",
             "elastic", "--cluster", str(EXAMPLE / "cluster.yaml"), "--interval", "0.5",
             "--grace-period", "10", "--work-dir", str(scratch.work), *same_user],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_until_healthy(url, 30, lambda: process.poll() is None), \
            (tmp_path / "server.log").read_text()
        yield url, data, scratch.shared
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        kill_leftover_tasks(data)
        scratch.close()


def example_job(checkpoints: Path) -> str:
    doc = yaml.safe_load((EXAMPLE / "torchrun.yaml").read_text())
    spec = doc["spec"]
    spec["elastic"]["scaleCooldown"] = "10s"
    spec["taskGroups"][0]["env"].update(
        {"CHECKPOINT_DIR": str(checkpoints), "STEPS": str(STEPS), "STEP_SECONDS": "0.05"})
    return yaml.safe_dump(doc)


#: Two GPUs of the production class, held until the test creates `release`.
HOLD = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.2)"


def urgent_job(release: Path) -> str:
    return f"""\
apiVersion: shoal/v1
kind: Job
metadata: {{name: urgent}}
spec:
  schedulerName: shoal
  priorityClassName: production
  taskGroups:
    - name: worker
      replicas: 2
      resources: {{cpu: 1, memory: 1Gi, gpu: 1}}
      command: [{sys.executable!r}, -c, {json.dumps(HOLD)}, {str(release)!r}]
"""


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


def wait_for_worlds(checkpoints: Path, expected: list[int], seconds: float) -> None:
    """Until the training has run at least 3 steps in each of `expected`'s sizes, in order."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sizes = [w for w, steps in worlds(checkpoints) if steps >= 3]
        if sizes[:len(expected)] == expected:
            return
        time.sleep(0.5)
    raise AssertionError(f"the training ran in {worlds(checkpoints)}, not {expected} first")


def test_torchrun_scales_with_shoal_and_finishes_training(
        elastic_server: tuple[str, Path, Path]) -> None:
    url, data, shared = elastic_server
    checkpoints, release = shared / "checkpoints", shared / "release"
    token = (data / "admin.token").read_text().strip()
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"},
                      timeout=10) as client:
        submit(client, example_job(checkpoints))
        wait_for_worlds(checkpoints, [1, 2, 4], seconds=150)
        submit(client, urgent_job(release))
        wait_for(client, "urgent", {"Running"}, seconds=60)
        wait_for_worlds(checkpoints, [1, 2, 4, 2], seconds=90)
        # While `urgent` holds two GPUs the job stays at 2, as the API and client say.
        with ShoalClient(url, token=token) as shoal_client:
            assert shoal_client.get_job("elastic-linear").elastic_size == 2
        release.touch()
        assert wait_for(client, "urgent", {"Succeeded", "Failed"}, 30)["status"][  # type: ignore[index]
            "state"] == "Succeeded"
        job = wait_for(client, "elastic-linear", {"Succeeded", "Failed"}, seconds=300)
        events = client.get("/api/v1/jobs/elastic-linear/events",
                            params={"limit": 1000}).json()["items"]
    assert job["status"]["state"] == "Succeeded", job  # type: ignore[index]
    progress = [json.loads(line) for line in
                (checkpoints / "progress.jsonl").read_text().splitlines()]
    assert progress[-1]["step"] == STEPS and progress[-1]["loss"] < 1e-6
    causes = [e["cause"] for e in events]
    assert any(c.startswith("evicted: elastic surplus taken (down to 2) for job 'urgent'")
               for c in causes), causes
    assert any(c.startswith("stopped after eviction") for c in causes), causes
