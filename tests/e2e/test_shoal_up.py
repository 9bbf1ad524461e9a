"""End to end: `shoal up` as a real subprocess on a free port, driven over HTTP.

A gang runs with its ranks and exact GPU indices; cancel kills a running job; and a
`kill -9` of the server while a task runs loses nothing: the restarted server adopts the task
(its launch counter stays 1) and records its success."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

CLUSTER = """\
apiVersion: shoal/v1
kind: Node
metadata: {name: local, labels: {gpu-type: fake}}
spec:
  capacity: {cpu: 4, memory: 8Gi, gpu: 2}
"""


def job_yaml(name: str, code: str, replicas: int = 1, gpu: int = 0) -> str:
    return f"""\
apiVersion: shoal/v1
kind: Job
metadata: {{name: {name}}}
spec:
  schedulerName: shoal
  taskGroups:
    - name: worker
      replicas: {replicas}
      resources: {{cpu: 1, memory: 1Gi, gpu: {gpu}}}
      command: [{sys.executable!r}, -c, {code!r}]
"""


@dataclass
class Server:
    data: Path
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self) -> httpx.Client:
        token = (self.data / "admin.token").read_text().strip()
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"},
                            timeout=10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(tmp: Path, port: int) -> Server:
    (tmp / "cluster.yaml").write_text(CLUSTER)
    shoal = Path(sys.executable).parent / "shoal"
    process = subprocess.Popen(
        [str(shoal), "up", "--data-dir", str(tmp / "data"), "--port", str(port),
         "--cluster", str(tmp / "cluster.yaml"), "--interval", "0.2", "--grace-period", "1"],
        stdout=subprocess.DEVNULL, stderr=open(tmp / "server.log", "ab"))  # noqa: SIM115
    server = Server(tmp / "data", port, process)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{server.url}/healthz", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError("shoal up did not answer /healthz within 30 s: "
                         + (tmp / "server.log").read_text())


def wait_for(client: httpx.Client, name: str, states: set[str], seconds: float = 20
             ) -> dict[str, object]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = client.get(f"/api/v1/jobs/{name}").json()
        if job["status"]["state"] in states:
            return dict(job)
        time.sleep(0.1)
    raise AssertionError(f"{name} did not reach {states}: {job['status']}")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = start(tmp_path, free_port())
    yield running
    running.process.send_signal(signal.SIGTERM)
    try:
        running.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        running.process.kill()


def submit(client: httpx.Client, text: str) -> None:
    answer = client.post("/api/v1/jobs", content=text,
                         headers={"Content-Type": "application/yaml"})
    assert answer.status_code == 201, answer.text


def test_gang_runs_with_ranks_and_exact_gpus(server: Server) -> None:
    code = ("import os; print(os.environ['SHOAL_TASK_INDEX'], os.environ['SHOAL_WORLD_SIZE'],"
            " os.environ['CUDA_VISIBLE_DEVICES'])")
    with server.client() as client:
        submit(client, job_yaml("gang", code, replicas=2, gpu=1))
        job = wait_for(client, "gang", {"Succeeded", "Failed"})
    assert job["status"]["state"] == "Succeeded"  # type: ignore[index]
    logs = server.data / "executor" / "logs" / "gang"
    lines = sorted(p.read_text().strip() for p in logs.glob("*.out"))
    assert lines == ["0 2 0", "1 2 1"]


def test_impossible_job_is_rejected_and_cancel_kills(server: Server) -> None:
    with server.client() as client:
        answer = client.post("/api/v1/jobs", content=job_yaml("huge", "pass", gpu=8),
                             headers={"Content-Type": "application/yaml"})
        assert answer.status_code == 422 and "gpu" in answer.text
        submit(client, job_yaml("sleeper", "import time; time.sleep(60)"))
        wait_for(client, "sleeper", {"Running"})
        assert client.post("/api/v1/jobs/sleeper/cancel").status_code == 200
        wait_for(client, "sleeper", {"Cancelled"})


def wait_for_task_running(client: httpx.Client, name: str, seconds: float = 20) -> None:
    """Until the task itself runs (its process started and recorded), not just the job: a
    crash before that is a different case (at most once: the task is then lost, never
    launched twice)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        tasks = client.get(f"/api/v1/jobs/{name}").json()["status"]["tasks"]
        if tasks and all(t["state"] == "Running" for t in tasks):
            return
        time.sleep(0.05)
    raise AssertionError(f"{name}'s tasks did not start: {tasks}")


def test_kill_9_loses_nothing_and_runs_nothing_twice(tmp_path: Path) -> None:
    counter, go = tmp_path / "launches", tmp_path / "go"
    code = (f"import os, time, pathlib; c = pathlib.Path({str(counter)!r}); "
            f"c.write_text(str(int(c.read_text() or 0) + 1) if c.exists() else '1'); "
            f"[time.sleep(0.05) for _ in iter(lambda: os.path.exists({str(go)!r}), True)]")
    port = free_port()
    first = start(tmp_path, port)
    with first.client() as client:
        submit(client, job_yaml("survivor", code))
        wait_for_task_running(client, "survivor")
    os.kill(first.process.pid, signal.SIGKILL)
    first.process.wait(timeout=10)
    second = start(tmp_path, port)
    try:
        go.touch()
        with second.client() as client:
            job = wait_for(client, "survivor", {"Succeeded", "Failed"})
        assert job["status"]["state"] == "Succeeded"  # type: ignore[index]
        assert counter.read_text() == "1"
    finally:
        second.process.send_signal(signal.SIGTERM)
        second.process.wait(timeout=10)
