"""Benchmark: the REST API of a real `shoal up` under many concurrent clients, per store.

Starts `shoal up` (one node, a blocker job holding all of its CPU so that nothing submitted
starts: what is measured is the API and the store, not process start-up), then runs
`--clients` clients at once, each on its own keep-alive connection, each doing `--rounds`
rounds of: submit a job (`POST /api/v1/jobs`, JSON, with an idempotency key), list jobs
(`GET /api/v1/jobs?limit=20`), cancel the job it submitted. Meanwhile one more client checks
`GET /healthz` every 20 ms. Done once on SQLite and once on PostgreSQL when its binaries
are installed (a throw-away server: `initdb` + `pg_ctl`, fsync off, on a Unix socket).

Prints one JSON object per store: the error rate (any answer other than the expected 201 /
200 / 200, or a failed request: the goal is 0) with the kinds of errors seen, p50/p99
latency per request kind, `/healthz` p99 during the load and as a ratio to its p99 on the
same server just before the load, the wall time of the load and the server process's CPU
seconds over it (user + system, psutil), also per request.

    uv run python bench/soak.py [--clients 50] [--rounds 20] [--store sqlite|postgresql|both]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from glob import glob
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))  # as a script or via runpy
from local_server import CLUSTER, local_server, server_process

from shoal.executors.local import free_port

KINDS = ("submit", "list", "cancel")
HEALTH_EVERY = 0.02
IDLE_CHECKS = 100
"""`/healthz` checks before the load, for the idle baseline."""
TIMEOUT = 60.0


def job_document(name: str, cpu: str, command: list[str]) -> bytes:
    return json.dumps({"apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": name},
                       "spec": {"taskGroups": [{"name": "main", "replicas": 1,
                                                "resources": {"cpu": cpu, "memory": "64Mi"},
                                                "command": command}]}}).encode()


@dataclass
class Tally:
    """What the clients saw; each client appends under the lock."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    errors: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, seconds: float, error: str | None) -> None:
        with self.lock:
            self.latencies[kind].append(seconds)
            if error is not None:
                self.errors[f"{kind}: {error}"] += 1


class Client:
    """One keep-alive connection; a failed request reconnects for the next one."""

    def __init__(self, url: httpx.URL, token: str) -> None:
        self.host, self.port = url.host, url.port or 80
        self.token = token
        self.connection = self._connect()

    def _connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)

    def send(self, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        try:
            self.connection.request(method, path, body, {"Authorization": self.token,
                                                         **(headers or {})})
            answer = self.connection.getresponse()
            return answer.status, answer.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()
            self.connection = self._connect()
            raise


def timed(tally: Tally, kind: str, expect: int, client: Client, method: str, path: str,
          body: bytes | None = None, headers: dict[str, str] | None = None) -> None:
    started = time.perf_counter()
    try:
        status, data = client.send(method, path, body, headers)
        error = None if status == expect else f"{status} {data[:120].decode(errors='replace')}"
    except (OSError, http.client.HTTPException) as exc:
        error = type(exc).__name__
    tally.record(kind, time.perf_counter() - started, error)


def run_client(index: int, rounds: int, url: httpx.URL, token: str, tally: Tally,
               start: threading.Barrier) -> None:
    client = Client(url, token)
    start.wait()
    for r in range(rounds):
        name = f"soak-{index:03d}-{r:04d}"
        timed(tally, "submit", 201, client, "POST", "/api/v1/jobs",
              job_document(name, "1", ["/bin/true"]),
              {"Content-Type": "application/json", "Idempotency-Key": uuid.uuid4().hex})
        timed(tally, "list", 200, client, "GET", "/api/v1/jobs?limit=20")
        timed(tally, "cancel", 200, client, "POST", f"/api/v1/jobs/{name}/cancel")
    client.connection.close()


def check_health(url: httpx.URL, stop: threading.Event, seen: list[float]) -> None:
    client = Client(url, "")
    while not stop.is_set():
        started = time.perf_counter()
        with contextlib.suppress(OSError, http.client.HTTPException):
            client.send("GET", "/healthz")
        seen.append(time.perf_counter() - started)
        stop.wait(HEALTH_EVERY)


def idle_health(url: httpx.URL, checks: int = IDLE_CHECKS) -> list[float]:
    """`/healthz` latencies of the same server before the load: the baseline of its p99."""
    client = Client(url, "")
    seen = []
    for _ in range(checks):
        started = time.perf_counter()
        with contextlib.suppress(OSError, http.client.HTTPException):
            client.send("GET", "/healthz")
        seen.append(time.perf_counter() - started)
    client.connection.close()
    return seen


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def wait_running(client: httpx.Client, name: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while client.get(f"/api/v1/jobs/{name}").json()["status"]["state"] != "Running":
        if time.monotonic() > deadline:
            raise SystemExit(f"job {name} did not start within {TIMEOUT} s")
        time.sleep(0.1)


def soak(store: str, workdir: Path, clients: int, rounds: int, *db: str) -> dict[str, object]:
    cluster = workdir / "cluster.yaml"
    cluster.write_text(CLUSTER)
    with local_server(workdir, "--cluster", str(cluster), "--grace-period", "1",
                      *db) as admin:
        answer = admin.post("/api/v1/jobs", content=job_document(
            "blocker", "8", ["/bin/sleep", "3600"]),
                            headers={"Content-Type": "application/json"})
        if answer.status_code != 201:
            raise SystemExit(f"blocker refused: {answer.status_code} {answer.text}")
        wait_running(admin, "blocker")  # from now on nothing submitted starts
        server = server_process(workdir / "data")
        idle = idle_health(admin.base_url)
        tally, health = Tally(), list[float]()
        start, stop = threading.Barrier(clients + 1), threading.Event()
        token = admin.headers["Authorization"]
        workers = [threading.Thread(target=run_client,
                                    args=(i, rounds, admin.base_url, token, tally, start))
                   for i in range(clients)]
        prober = threading.Thread(target=check_health, args=(admin.base_url, stop, health))
        for worker in workers:
            worker.start()
        cpu_before = sum(server.cpu_times()[:2])
        prober.start()
        started = time.perf_counter()
        start.wait()
        for worker in workers:
            worker.join()
        wall = time.perf_counter() - started
        cpu = sum(server.cpu_times()[:2]) - cpu_before
        stop.set()
        prober.join()
        admin.post("/api/v1/jobs/blocker/cancel")  # its sleep would outlive the server
        deadline = time.monotonic() + TIMEOUT
        while (admin.get("/api/v1/jobs/blocker").json()["status"]["state"] != "Cancelled"
               and time.monotonic() < deadline):
            time.sleep(0.1)
    requests = sum(len(v) for v in tally.latencies.values())
    errors = sum(tally.errors.values())
    return {
        "store": store, "clients": clients, "requests": requests, "errors": errors,
        "error_rate": round(errors / requests, 4) if requests else 0.0,
        "error_kinds": dict(tally.errors.most_common(5)),
        **{f"{kind}_p50_ms": ms(statistics.median(v)) for kind, v in tally.latencies.items()},
        **{f"{kind}_p99_ms": ms(percentile(v, 99)) for kind, v in tally.latencies.items()},
        "healthz_p99_ms": ms(percentile(health, 99)), "healthz_checks": len(health),
        "healthz_idle_p99_ms": ms(percentile(idle, 99)),
        "healthz_p99_ratio_to_idle": round(percentile(health, 99) / max(percentile(idle, 99),
                                                                          1e-6), 1),
        "server_cpu_ms_per_request": round(cpu * 1000 / requests, 2) if requests else 0.0,
        "requests_per_second": round(requests / wall, 1), "wall_s": round(wall, 2),
        "server_cpu_s": round(cpu, 2), "cpus": os.cpu_count() or 0,
    }


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name) or max(glob(f"/usr/lib/postgresql/*/bin/{name}"), default=None)
    return found


@contextlib.contextmanager
def postgres(workdir: Path) -> Iterator[str | None]:
    """A throw-away PostgreSQL server's URL for `shoal up --db`; None without the binaries.
    As root it runs as `postgres` (initdb refuses root)."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        yield None
        return
    prefix: list[str] = []
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        os.chown(workdir, account.pw_uid, account.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, port = workdir / "pg", free_port()
    subprocess.run([*prefix, initdb, "-D", str(data), "-U", "shoal", "--auth=trust", "-E",
                    "UTF8", "--no-instructions"], check=True, capture_output=True)
    subprocess.run([*prefix, pg_ctl, "-D", str(data), "-o",
                    f"-k {workdir} -p {port} -c listen_addresses='' -c fsync=off "
                    "-c max_connections=200", "-l", str(workdir / "pg.log"), "start", "-w"],
                   check=True, capture_output=True)
    try:
        subprocess.run([*prefix, _pg_bin("createdb") or "createdb", "-h", str(workdir),
                        "-p", str(port), "-U", "shoal", "soak"], check=True,
                       capture_output=True)
        yield f"postgresql+psycopg://shoal@/soak?host={workdir}&port={port}"
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "stop", "-m", "fast", "-w"],
                       check=False, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=20,
                        help="submit+list+cancel rounds per client")
    parser.add_argument("--store", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()
    if args.store in ("sqlite", "both"):
        with tempfile.TemporaryDirectory(prefix="shoal-soak-",
                                         ignore_cleanup_errors=True) as tmp:
            print(json.dumps(soak("sqlite", Path(tmp), args.clients, args.rounds)),
                  flush=True)
    if args.store in ("postgresql", "both"):
        with tempfile.TemporaryDirectory(prefix="shoal-soak-pg-",
                                         ignore_cleanup_errors=True) as tmp:
            os.chmod(tmp, 0o755)  # the server's user must reach its socket and data
            with postgres(Path(tmp)) as url:
                if url is None:
                    print(json.dumps({"store": "postgresql",
                                      "skipped": "PostgreSQL is not installed"}))
                    return
                work = Path(tmp) / "shoal"
                work.mkdir()
                print(json.dumps(soak("postgresql", work, args.clients, args.rounds,
                                      "--db", url)), flush=True)


if __name__ == "__main__":
    main()
