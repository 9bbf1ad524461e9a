"""Benchmark: the REST API and the control loop of a real `shoal up`, over HTTP.

Starts its own `shoal up` (SQLite, a temporary data directory, one node), then measures:

- `submissions_per_second`: sequential `POST /api/v1/jobs` over one keep-alive connection,
  each with its own idempotency key and the spec as JSON. The jobs ask for more CPU than is
  free (a blocker job holds the node), so they are stored, admitted and considered by every
  cycle, but never start: what is timed is the submission path, not process start-up.
  The load generator is the standard library's `http.client`, which costs the client
  ~0.3 ms a request: the number is the server's. `yaml_submissions_per_second`: the same with
  YAML bodies (what `shoal submit FILE.yaml` sends).
- `client_submissions_per_second`: the same through `shoal.client.ShoalClient.submit` (httpx,
  ~1.2 ms of client CPU a request here): what a Python script that uses Shoal's client gets.
- `submit_to_running_p50_ms` / `_p99_ms`: for a trivial one-task job on an idle cluster,
  one at a time, from just before the client sends the POST to the moment the server
  recorded the task's process as started (the `Running` event's timestamp; client and server
  share this machine's clock).

As a same-process baseline it times `GET /healthz` (the HTTP floor of this machine and
client); `submission_vs_health` = submission time / health-check time is the ratio to
compare across runs and machines. All of these are timed in interleaved rounds, so that the
shared machine's noise falls on each alike. Prints one JSON object.

    uv run python bench/api.py [--submissions 1000] [--latency-jobs 100]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))  # as a script or via runpy
from local_server import CLUSTER, local_server

from shoal.client import ShoalClient

JOB = """\
apiVersion: shoal/v1
kind: Job
metadata: {{name: {name}}}
spec:
  taskGroups:
    - name: main
      replicas: 1
      resources: {{cpu: "{cpu}", memory: 64Mi}}
      command: [{command}]
"""
TRUE = "/bin/true"
SLEEP = "/bin/sleep, '3600'"
ROUNDS = 10
COMMANDS = {TRUE: ["/bin/true"], SLEEP: ["/bin/sleep", "3600"]}


def job_document(name: str, cpu: str, command: str) -> dict[str, object]:
    return {"apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"taskGroups": [{"name": "main", "replicas": 1,
                                     "resources": {"cpu": cpu, "memory": "64Mi"},
                                     "command": COMMANDS[command]}]}}


def job_body(name: str, cpu: str, command: str, *, as_json: bool) -> tuple[str, str]:
    """The content type and body of a submission."""
    if as_json:
        return "application/json", json.dumps(job_document(name, cpu, command))
    return "application/yaml", JOB.format(name=name, cpu=cpu, command=command)


def submit(client: httpx.Client, name: str, cpu: str, command: str) -> None:
    content_type, body = job_body(name, cpu, command, as_json=False)
    answer = client.post("/api/v1/jobs", content=body,
                         headers={"Content-Type": content_type,
                                  "Idempotency-Key": uuid.uuid4().hex})
    if answer.status_code != 201:
        raise SystemExit(f"submission {name} refused: {answer.status_code} {answer.text}")


class LeanHttp:
    """The load generator: one keep-alive `http.client` connection."""

    def __init__(self, url: httpx.URL, token: str) -> None:
        self.connection = http.client.HTTPConnection(url.host, url.port or 80)
        self.token = token

    def health(self) -> None:
        self._send("GET", "/healthz", None, {})

    def submit(self, name: str, *, as_json: bool) -> None:
        content_type, body = job_body(name, "1", TRUE, as_json=as_json)
        self._send("POST", "/api/v1/jobs", body.encode(), {
            "Authorization": self.token, "Content-Type": content_type,
            "Idempotency-Key": uuid.uuid4().hex}, expect=201)

    def _send(self, method: str, path: str, body: bytes | None, headers: dict[str, str],
              expect: int = 200) -> None:
        self.connection.request(method, path, body, headers)
        answer = self.connection.getresponse()
        data = answer.read()
        if answer.status != expect:
            raise SystemExit(f"{method} {path}: {answer.status} {data.decode()}")


def running_at(client: httpx.Client, name: str, timeout: float = 30.0) -> float:
    """The server's timestamp of the task's `Running` event."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in client.get(f"/api/v1/jobs/{name}/events").json()["items"]:
            if event["task"] is not None and event["target"] == "Running":
                return float(event["time"])
        time.sleep(0.005)
    raise SystemExit(f"job {name} did not start within {timeout} s")


def per_second(count: int, actions: dict[str, Callable[[int], object]],
               rounds: int = ROUNDS) -> dict[str, float]:
    """Each action run `count` times, in `rounds` interleaved rounds so that a noisy
    neighbour slows all of them alike; → calls per second of each."""
    spent = dict.fromkeys(actions, 0.0)
    done = 0
    for r in range(rounds):
        batch = range(done, count * (r + 1) // rounds)
        for label, action in actions.items():
            started = time.perf_counter()
            for i in batch:
                action(i)
            spent[label] += time.perf_counter() - started
        done = batch.stop
    return {label: count / seconds for label, seconds in spent.items()}


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1]


def measure(client: httpx.Client, submissions: int, latency_jobs: int) -> dict[str, float]:
    latencies = []
    for i in range(latency_jobs):
        name = f"latency-{i:05d}"
        sent = time.time()
        submit(client, name, "100m", TRUE)
        latencies.append((running_at(client, name) - sent) * 1000)
    submit(client, "blocker", "8", SLEEP)  # from now on nothing else fits
    running_at(client, "blocker")
    lean = LeanHttp(client.base_url, client.headers["Authorization"])
    shoal = ShoalClient(str(client.base_url), client.headers["Authorization"].split()[-1])
    rates = per_second(submissions, {
        "health": lambda _i: lean.health(),
        "json": lambda i: lean.submit(f"json-{i:05d}", as_json=True),
        "yaml": lambda i: lean.submit(f"yaml-{i:05d}", as_json=False),
        "client": lambda i: shoal.submit(job_document(f"client-{i:05d}", "1", TRUE))})
    shoal.close()
    health_rate, rate = rates["health"], rates["json"]
    # `shoal up` leaves running tasks alive when it stops (a restart adopts them): cancel the
    # blocker, or its `sleep` would outlive the benchmark.
    client.post("/api/v1/jobs/blocker/cancel")
    deadline = time.monotonic() + 30
    while (client.get("/api/v1/jobs/blocker").json()["status"]["state"] != "Cancelled"
           and time.monotonic() < deadline):
        time.sleep(0.1)
    return {
        "submissions": submissions,
        "submissions_per_second": round(rate, 1),
        "yaml_submissions_per_second": round(rates["yaml"], 1),
        "client_submissions_per_second": round(rates["client"], 1),
        "health_checks_per_second": round(health_rate, 1),
        "submission_vs_health": round(health_rate / rate, 2),
        "latency_jobs": latency_jobs,
        "submit_to_running_p50_ms": round(statistics.median(latencies), 1),
        "submit_to_running_p99_ms": round(percentile(latencies, 99), 1),
        "submit_to_running_max_ms": round(max(latencies), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--latency-jobs", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="shoal-bench-api-",
                                     ignore_cleanup_errors=True) as tmp:
        cluster = Path(tmp) / "cluster.yaml"
        cluster.write_text(CLUSTER)
        with local_server(Path(tmp), "--cluster", str(cluster), "--grace-period", "1") as client:
            result = measure(client, args.submissions, args.latency_jobs)
    result["cpus"] = os.cpu_count() or 0
    print(json.dumps(result))


if __name__ == "__main__":
    main()
