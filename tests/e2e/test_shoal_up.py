"""End to end: `shoal up` as a real subprocess on a free port, driven over HTTP.

A gang runs with its ranks and exact GPU indices; cancel kills a running job; and a
`kill -9` of the server while a task runs loses nothing: the restarted server adopts the task
(its launch counter stays 1) and records its success — on SQLite and, with `--db`, on a real
PostgreSQL server (tests/conftest.py starts it). The same holds when the kill lands in
the middle of a burst of submissions: clients retry with their idempotency keys, every job
ends Succeeded and every task ran exactly once.

Every server a test starts, and every task process it left behind (tasks run in their own
sessions and outlive a killed server), is stopped at teardown, pass or fail (`Servers`).

As root (CI), `shoal up` runs each task as an unprivileged OS user (`shoal-admin` for the
admin's jobs): tasks run `task_python()`, work under the servers' own `--work-dir`, and
write what a test reads into `Servers.shared` (`task_users.Scratch`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
import pytest
import shoal_documents
from shoal_documents import node_yaml
from task_users import Scratch, reachable_by_others, task_python

from shoal.client import wait_until_healthy
from shoal.executors.local import free_port
from shoal.executors.wrapper import PID_FILE

CLUSTER = node_yaml()

#: A safety net only: every wait ends as soon as its condition holds. Generous, as a `shoal
#: up` can take a minute to answer on a loaded machine (the suite's two workers beside other
#: work: 52 s measured at a load average of 16 on 2 cores).
DEADLINE = 120.0


def job_yaml(name: str, code: str, replicas: int = 1, gpu: int = 0, cpu: str = "1",
             memory: str = "1Gi") -> str:
    """A gang whose tasks run `python -c code` (`task_python()`), in the default queue."""
    return shoal_documents.job_yaml(name, queue=None, replicas=replicas, gpu=gpu, cpu=cpu,
                                    memory=memory,
                                    command=f"[{task_python()!r}, -c, {code!r}]")


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
                            timeout=DEADLINE / 4)



def start(tmp: Path, port: int, db: str | None = None, *args: str) -> Server:
    """`shoal up` on `tmp/data` with `args` more (e.g. `--work-dir`)."""
    (tmp / "cluster.yaml").write_text(CLUSTER)
    shoal = Path(sys.executable).parent / "shoal"
    process = subprocess.Popen(
        [str(shoal), "up", "--data-dir", str(tmp / "data"), "--port", str(port),
         "--cluster", str(tmp / "cluster.yaml"), "--interval", "0.2", "--grace-period", "1",
         *(["--db", db] if db else []), *args],
        stdout=subprocess.DEVNULL, stderr=open(tmp / "server.log", "ab"))  # noqa: SIM115
    server = Server(tmp / "data", port, process)
    try:
        if wait_until_healthy(server.url, DEADLINE, lambda: process.poll() is None):
            return server
    except BaseException:
        stop(server)
        raise
    exited = process.poll()
    stop(server)
    raise AssertionError((f"shoal up did not answer /healthz within {DEADLINE:.0f} s: "
                          if exited is None
                          else f"shoal up exited with code {exited} before serving: ")
                         + (tmp / "server.log").read_text())


def stop(server: Server) -> None:
    """SIGTERM, then SIGKILL if it does not exit within 10 s; always reaped."""
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.process.kill()
    server.process.wait(timeout=10)


def kill_leftover_tasks(data: Path) -> None:
    """SIGKILL the process group of every task attempt still alive (each attempt runs in its
    own session, so it survives its server). The pid is checked against its recorded start
    time so that a recycled pid is never signalled. The Ray engine's tasks are its nodes'
    (`executor/nodes/<node>/tasks`: one disk on this one machine)."""
    for pid_file in [*data.glob(f"executor/tasks/*/*/attempt-*/{PID_FILE}"),
                     *data.glob(f"executor/nodes/*/tasks/*/*/attempt-*/{PID_FILE}")]:
        try:
            record = json.loads(pid_file.read_text())
            pid, started = int(record["pid"]), float(record["start_time"])
            if pid > 1 and abs(psutil.Process(pid).create_time() - started) < 0.05:
                os.killpg(pid, signal.SIGKILL)
        except (OSError, ValueError, KeyError, psutil.Error):
            continue


def stop_all(servers: list[Server], data: Path) -> None:
    """Stop every server (whatever stopping the others does), then kill every task process
    they left behind in their data directory `data`."""
    for server in servers:
        with contextlib.suppress(Exception):  # keep cleaning up the others
            stop(server)
    kill_leftover_tasks(data)


@dataclass
class Servers:
    """Starts `shoal up` on one data directory (a restart reuses it); `close` stops every
    server started and kills every task process left behind."""

    tmp: Path
    started: list[Server] = field(default_factory=list)
    db: str | None = None
    """The store's URL (`--db`); None: SQLite in the data directory."""
    args: tuple[str, ...] = ()
    """More flags for every `shoal up` (`--work-dir` is always given)."""
    scratch: Scratch = field(default_factory=Scratch)

    @property
    def shared(self) -> Path:
        """A directory every task may write to and the test reads."""
        return self.scratch.shared

    def start(self, port: int | None = None) -> Server:
        server = start(self.tmp, free_port() if port is None else port, self.db,
                       "--work-dir", str(self.scratch.work), *self.args)
        self.started.append(server)
        return server

    def close(self) -> None:
        stop_all(self.started, self.tmp / "data")
        self.scratch.close()


def wait_for(client: httpx.Client, name: str, states: set[str],
             seconds: float = DEADLINE) -> dict[str, object]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = client.get(f"/api/v1/jobs/{name}").json()
        if job["status"]["state"] in states:
            return dict(job)
        time.sleep(0.1)
    raise AssertionError(f"{name} did not reach {states}: {job['status']}")


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
        answer = client.post("/api/v1/jobs", content=job_yaml("huge", "pass", gpu=8, cpu="8"),
                             headers={"Content-Type": "application/yaml"})
        assert answer.status_code == 422 and "gpu" in answer.text
        submit(client, job_yaml("sleeper", "import time; time.sleep(60)"))
        wait_for(client, "sleeper", {"Running"})
        assert client.post("/api/v1/jobs/sleeper/cancel").status_code == 200
        wait_for(client, "sleeper", {"Cancelled"})


def wait_for_task_running(client: httpx.Client, name: str, seconds: float = DEADLINE
                          ) -> None:
    """Until the task itself runs (its process started and recorded), not just the job: a
    crash before that is a different case (at most once: the task is then lost, never
    launched twice)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        tasks = client.get(f"/api/v1/jobs/{name}/tasks").json()["items"]
        if tasks and all(t["state"] == "Running" for t in tasks):
            return
        time.sleep(0.05)
    raise AssertionError(f"{name}'s tasks did not start: {tasks}")


def gated_counter_code(counter: Path, go: Path) -> str:
    """A task that counts its launches in `counter`, then runs until `go` exists."""
    return (f"import os, time, pathlib; c = pathlib.Path({str(counter)!r}); "
            f"c.write_text(str(int(c.read_text() or 0) + 1) if c.exists() else '1'); "
            f"[time.sleep(0.05) for _ in iter(lambda: os.path.exists({str(go)!r}), True)]")


def kill_9(server: Server) -> None:
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait(timeout=10)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_kill_9_loses_nothing_and_runs_nothing_twice(servers: Servers, tmp_path: Path,
                                                     backend: str,
                                                     request: pytest.FixtureRequest) -> None:
    if backend == "postgresql":  # `shoal up --db postgresql+psycopg://…`, the same behaviour
        postgres = request.getfixturevalue("postgres_server")
        database = f"shoal_e2e_{os.getpid()}"
        with postgres.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{database}"')
        servers.db = postgres.url(database)
    counter, go = servers.shared / "launches", servers.shared / "go"
    port = free_port()
    first = servers.start(port)
    with first.client() as client:
        submit(client, job_yaml("survivor", gated_counter_code(counter, go)))
        wait_for_task_running(client, "survivor")
    kill_9(first)
    second = servers.start(port)
    go.touch()
    with second.client() as client:
        job = wait_for(client, "survivor", {"Succeeded", "Failed"})
    assert job["status"]["state"] == "Succeeded"  # type: ignore[index]
    assert counter.read_text() == "1"
    assert (tmp_path / "data" / "shoal.db").exists() == (backend == "sqlite")


BURST = 20
SUBMITTERS = 4
KILL_AFTER = 6
"""The server is killed once this many of the burst's submissions have been answered."""
TERMINAL = {"Succeeded", "Failed", "Cancelled"}


def poll_until(condition: Callable[[], bool], what: str, seconds: float = DEADLINE) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


def test_kill_9_during_a_submission_burst(servers: Servers) -> None:
    """kill -9 while a task runs and submissions are in flight; the clients retry every
    submission with its idempotency key against the restarted server: each is created (201)
    or replayed (200), every job succeeds, and every task ran exactly once."""
    counter, go, ran = (servers.shared / name for name in ("launches", "go", "ran"))
    names = [f"burst-{i:02d}" for i in range(BURST)]
    texts = {name: job_yaml(name, f"open({str(ran)!r}, 'a').write({name!r} + '\\n')",
                            cpu="250m", memory="256Mi")
             for name in names}
    keys = {name: f"key-{name}" for name in names}

    def post(client: httpx.Client, name: str) -> httpx.Response:
        return client.post("/api/v1/jobs", content=texts[name],
                           headers={"Content-Type": "application/yaml",
                                    "Idempotency-Key": keys[name]})

    port = free_port()
    first = servers.start(port)
    with first.client() as client:
        submit(client, job_yaml("long", gated_counter_code(counter, go)))
        wait_for_task_running(client, "long")

    # The burst: SUBMITTERS threads, each posting its share of the names back to back.
    answers: dict[str, int | str] = {}  # name → status, or the transport error's name

    def submitter(share: list[str]) -> None:
        with first.client() as client:
            for name in share:
                try:
                    answers[name] = post(client, name).status_code
                except httpx.TransportError as exc:
                    answers[name] = type(exc).__name__

    threads = [threading.Thread(target=submitter, args=(names[i::SUBMITTERS],), daemon=True)
               for i in range(SUBMITTERS)]
    for thread in threads:
        thread.start()
    poll_until(lambda: len(answers) >= KILL_AFTER, f"{KILL_AFTER} answered submissions")
    kill_9(first)
    for thread in threads:
        thread.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a submitter hung after the kill"

    before = dict(answers)
    created = {n for n, status in before.items() if status == 201}
    lost = {n for n, status in before.items() if not isinstance(status, int)}
    assert set(before) == set(names)
    assert set(before.values()) - {201} <= {"ConnectError", "ReadError", "RemoteProtocolError",
                                            "WriteError", "ReadTimeout"}, before
    assert len(created) >= KILL_AFTER and lost, f"the kill did not land mid-burst: {before}"

    # Restart on the same data directory; every client retries with its own key.
    second = servers.start(port)
    with second.client() as client:
        retried = {name: post(client, name) for name in names}
        statuses = {name: answer.status_code for name, answer in retried.items()}
        assert set(statuses.values()) <= {200, 201}, {
            n: (a.status_code, a.text) for n, a in retried.items() if a.status_code > 201}
        # A submission answered 201 before the crash is stored: its retry is a replay.
        assert {n for n in created if statuses[n] != 200} == set(), statuses
        for name, answer in retried.items():
            assert answer.json()["metadata"]["name"] == name

        go.touch()
        states: dict[str, str] = {}

        def all_terminal() -> bool:
            page = client.get("/api/v1/jobs", params={"limit": 500})
            assert page.status_code == 200, page.text
            states.clear()
            states.update({j["metadata"]["name"]: j["status"]["state"]
                           for j in page.json()["items"]})
            return set(states) == {"long", *names} and set(states.values()) <= TERMINAL

        poll_until(all_terminal, "every job to end")

    assert states == dict.fromkeys(["long", *names], "Succeeded"), states
    launches = sorted(ran.read_text().split())
    assert launches == names, "a task ran twice or never: " + ", ".join(
        f"{n}×{launches.count(n)}" for n in names if launches.count(n) != 1)
    assert counter.read_text() == "1", "the long task was launched again, not adopted"


def refused_start(data: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    shoal = Path(sys.executable).parent / "shoal"
    return subprocess.run(
        [str(shoal), "up", "--data-dir", str(data), "--cluster", str(tmp / "cluster.yaml"),
         *args], capture_output=True, text=True, timeout=60, check=False)


def test_one_control_plane_per_data_directory_store_and_port(
        servers: Servers, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A second `shoal up` on what a running one holds stops at once with the reason, and
    the running one is undisturbed: two control planes would launch every task twice."""
    running = servers.start()
    # Blocks until a signal ends it (teardown kills it): the refused starts below may take
    # minutes on a loaded machine, and the task must still be running when the test looks.
    with running.client() as client:
        submit(client, job_yaml("steady", "import signal; signal.pause()"))
        wait_for_task_running(client, "steady")

    same_dir = refused_start(running.data, tmp_path, "--port", str(free_port()))
    assert same_dir.returncode == 2, same_dir.stderr
    assert "another shoal up" in same_dir.stderr and str(os.getpid()) not in same_dir.stderr
    assert f"pid {running.process.pid}" in same_dir.stderr

    same_port = refused_start(tmp_path / "other", tmp_path, "--port", str(running.port))
    assert same_port.returncode == 2
    assert f"cannot listen on 127.0.0.1:{running.port}" in same_port.stderr

    postgres = request.getfixturevalue("postgres_server")
    database = f"shoal_e2e_owner_{os.getpid()}"
    with postgres.admin() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{database}"')
    (tmp_path / "pg").mkdir()
    on_postgres = Servers(tmp_path / "pg", db=postgres.url(database))
    try:
        on_postgres.start()
        same_store = refused_start(tmp_path / "pg-other", tmp_path, "--port",
                                   str(free_port()), "--db", postgres.url(database))
        assert same_store.returncode == 2
        assert "another shoal up is using the store" in same_store.stderr
    finally:
        on_postgres.close()

    with running.client() as client:  # the first one never noticed
        job = client.get("/api/v1/jobs/steady").json()
        assert job["status"]["state"] == "Running"
        assert job["status"]["taskCounts"] == {"Running": 1}


def test_a_task_creates_sub_clusters_and_runs_work_in_each(servers: Servers) -> None:
    """Seed 003's nested clusters, through `shoal up`, with `examples/sub-clusters.yaml` as
    shipped: its driver sees only its job's virtual cluster, creates two sub-clusters in it
    with its job's token, runs a job in each (each sees only its sub-cluster), and when the
    job ends its sub-clusters and its token are gone.

    The example runs `python` with Shoal installed, the tests' own interpreter: where that
    lives beyond other users' reach (a 0700 home), the tasks must run as the server's user
    (`--insecure-same-user`); this test is about nested clusters, not isolation."""
    if not reachable_by_others(Path(sys.executable)):
        servers.args = ("--insecure-same-user",)
    server = servers.start()
    example = Path(__file__).resolve().parents[2] / "examples" / "sub-clusters.yaml"
    with server.client() as client:
        submit(client, example.read_text())
        job = wait_for(client, "datasets", {"Succeeded", "Failed"}, 120)
        logs = server.data / "executor" / "logs"
        driver = (logs / "datasets" / "driver-0.out").read_text()
        assert job["status"]["state"] == "Succeeded", (  # type: ignore[index]
            driver + (logs / "datasets" / "driver-0.err").read_text())
        before, after, ended = (json.loads(line) for line in driver.splitlines())
        assert before["cluster"] == "job:datasets" and before["children"] == []
        assert before["resources"]["cpu"] == "1"  # its maximum: 200m used + 800m available
        assert before["available"]["cpu"] == "800m"
        assert after["children"] == ["job:datasets/train-data", "job:datasets/validation-data"]
        assert ended == {"datasets-train": "Succeeded", "datasets-validation": "Succeeded"}
        for part, cpu in (("train", "400m"), ("validation", "400m")):
            sub = client.get(f"/api/v1/jobs/datasets-{part}").json()
            assert sub["spec"]["queue"] == f"job:datasets/{part}-data"
            [seen] = [json.loads(line) for line in
                      (logs / f"datasets-{part}" / "worker-0.out").read_text().splitlines()]
            assert seen["cluster"] == f"job:datasets/{part}-data"
            assert seen["resources"]["cpu"] == cpu
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(
                v["name"].startswith("job:datasets")
                for v in client.get("/api/v1/virtual-clusters").json()):
            time.sleep(0.1)
        assert not [v["name"] for v in client.get("/api/v1/virtual-clusters").json()
                    if v["name"].startswith("job:")]
    with sqlite3.connect(server.data / "shoal.db") as db:
        assert db.execute("SELECT count(*) FROM tokens WHERE job IS NOT NULL").fetchone() \
            == (0,)
