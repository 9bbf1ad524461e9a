"""Benchmark: the REST API and the control loop of a real `shoal up`, over HTTP, on each
execution engine side by side.

Starts its own `shoal up` (SQLite, a temporary data directory, one node of 8 CPUs and
16 GiB) per engine (`--engines`, default both): `local` (tasks are its subprocesses) and
`ray` (`shoal up --engine ray` on a one-node Ray cluster that the benchmark starts itself,
`ray.cluster_utils`, offering the same node: each task started by the node's supervisor
actor). Both servers run at once and every measurement alternates between them, so that the shared
machine's noise falls on each alike. Per engine it measures:

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
- `server_cpu_s`: the `shoal up` process's CPU seconds (user + system) over the whole run,
  beside the run's `wall_s` (the Ray engine's actor processes are not counted: what it costs
  is the control plane's side).

As a same-process baseline it times `GET /healthz` (the HTTP floor of this machine and
client); `submission_vs_health` = submission time / health-check time is the ratio to
compare across runs and machines. All of these are timed in interleaved rounds. Prints one
JSON object: one object of these per engine, and `ray_vs_local`, the Ray engine's
submit→RUNNING p50/p99 and submission rate as ratios to the local engine's.

`--burst N` runs the burst case instead (issue 18): N one-CPU jobs running `/bin/true`,
all of which fit at once (one node of N CPUs), submitted as fast as `--burst-clients`
keep-alive connections send them, into `shoal up` (local engine, SQLite) and — where
Slurm is installed or installable (`slurm_local`; `--slurm off` skips it) — the same N
jobs through `sbatch` from as many client threads into a one-node Slurm declaring N CPUs,
in alternating rounds (`--rounds`). Per system: `started_per_second` (N ÷ first send to
last start), `submit_to_running_p50_ms`/`_p99_ms` (Shoal: the task's `Running` event, the
server's record of its process; Slurm: the job's command's first timestamp — later than
Slurm's own start, by slurmstepd and a shell), `daemon_cpu_ms_per_job` (process CPU time
of the server — Shoal's `shoal up` plus its launcher; Slurm's slurmctld plus slurmd — ÷
N; tasks' own wrappers and slurmstepd are not counted), beside `wall_s`;
`all_processes_cpu_ms_per_job` (Shoal: every process `shoal up` runs — itself, its
launcher, each task's wrapper and command, counted through their parents once reaped — ÷
N), `clients_cpu_ms_per_job` (the submitting threads, this process) and
`machine_busy_cpu_s` (the whole machine's busy CPU over the round: other load shows there),
`bind_cycles` (the scheduling cycles that placed the burst, from the jobs' Bound events);
and
`shoal_vs_slurm_start_rate` with the other same-run ratios. `--baseline DIR` also runs,
in the same rounds, a `shoal up` of another checkout (DIR, with its own `.venv`: the code
before a change) and reports it as `baseline`, with `shoal_vs_baseline_*` ratios.
`submitted_per_second` is the clients' rate (N ÷ first to last send): where it exceeds the
start rate, jobs queue and p50 grows with the burst.

    uv run --extra ray python bench/api.py [--submissions 1000] [--latency-jobs 100]
        [--engines local,ray]
    uv run python bench/api.py --burst 1000 [--burst-clients 4] [--rounds 1] [--slurm auto]
        [--baseline ../main]
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
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))  # as a script or via runpy
from burst import burst_main
from local_server import CLUSTER, local_server, ray_cluster, server_process

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
ENGINES = ("local", "ray")
#: How long a job may take to start: a Ray actor's worker process takes seconds on a busy
#: machine (a safety net, not a measurement).
START_TIMEOUT = 120.0
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


def running_at(client: httpx.Client, name: str, timeout: float = START_TIMEOUT) -> float:
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
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1]


@dataclass(frozen=True)
class Target:
    """One engine's `shoal up`: an admin client and its process."""

    engine: str
    client: httpx.Client
    process: psutil.Process


def cancel(client: httpx.Client, name: str) -> None:
    """`shoal up` leaves running tasks alive when it stops (a restart adopts them): a job
    still running is cancelled, or its process would outlive the benchmark."""
    client.post(f"/api/v1/jobs/{name}/cancel")
    deadline = time.monotonic() + START_TIMEOUT
    while (client.get(f"/api/v1/jobs/{name}").json()["status"]["state"] != "Cancelled"
           and time.monotonic() < deadline):
        time.sleep(0.1)


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def measure(targets: list[Target], submissions: int, latency_jobs: int
            ) -> dict[str, dict[str, float]]:
    """Every measurement on every target, alternating between them."""
    cpu = {t.engine: cpu_seconds(t.process) for t in targets}
    latencies: dict[str, list[float]] = {t.engine: [] for t in targets}
    for i in range(latency_jobs):
        for target in targets:
            name = f"latency-{i:05d}"
            sent = time.time()
            submit(target.client, name, "100m", TRUE)
            latencies[target.engine].append((running_at(target.client, name) - sent) * 1000)
    for target in targets:
        submit(target.client, "blocker", "8", SLEEP)  # from now on nothing else fits
    for target in targets:
        running_at(target.client, "blocker")
    actions: dict[str, Callable[[int], object]] = {}
    clients = []
    for target in targets:
        lean = LeanHttp(target.client.base_url, target.client.headers["Authorization"])
        shoal = ShoalClient(str(target.client.base_url),
                            target.client.headers["Authorization"].split()[-1])
        clients.append(shoal)
        actions |= _rates(target.engine, lean, shoal)
    rates = per_second(submissions, actions)
    for shoal in clients:
        shoal.close()
    results = {}
    for target in targets:
        cancel(target.client, "blocker")
        engine, runs = target.engine, latencies[target.engine]
        health_rate, rate = rates[f"{engine}.health"], rates[f"{engine}.json"]
        results[engine] = {
            "submissions_per_second": round(rate, 1),
            "yaml_submissions_per_second": round(rates[f"{engine}.yaml"], 1),
            "client_submissions_per_second": round(rates[f"{engine}.client"], 1),
            "health_checks_per_second": round(health_rate, 1),
            "submission_vs_health": round(health_rate / rate, 2),
            "submit_to_running_p50_ms": round(statistics.median(runs), 1),
            "submit_to_running_p99_ms": round(percentile(runs, 99), 1),
            "submit_to_running_max_ms": round(max(runs), 1),
            "server_cpu_s": round(cpu_seconds(target.process) - cpu[engine], 2),
        }
    return results


def _rates(engine: str, lean: LeanHttp, shoal: ShoalClient
           ) -> dict[str, Callable[[int], object]]:
    """The timed actions on one engine's server, each submitting its own job names."""
    return {
        f"{engine}.health": lambda _i: lean.health(),
        f"{engine}.json": lambda i: lean.submit(f"json-{i:05d}", as_json=True),
        f"{engine}.yaml": lambda i: lean.submit(f"yaml-{i:05d}", as_json=False),
        f"{engine}.client": lambda i: shoal.submit(job_document(f"client-{i:05d}", "1", TRUE)),
    }


def ratio(ray: float, local: float) -> float:
    return round(ray / local, 2) if local else 0.0


@contextmanager
def serve(engine: str, workdir: Path) -> Iterator[Target]:
    """`shoal up` on `engine` over `workdir` (on a Ray cluster of its own for `ray`, shut
    down after the server)."""
    workdir.mkdir()
    with ExitStack() as stack:
        if engine == "ray":
            address = stack.enter_context(ray_cluster())
            args: tuple[str, ...] = ("--engine", "ray", "--ray-address", address)
        else:
            cluster = workdir / "cluster.yaml"
            cluster.write_text(CLUSTER)
            args = ("--cluster", str(cluster))
        with local_server(workdir, *args, "--grace-period", "1",
                          timeout=START_TIMEOUT) as client:
            yield Target(engine, client, server_process(workdir / "data"))


def engines(text: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(e.strip() for e in text.split(",") if e.strip()))
    unknown = set(chosen) - set(ENGINES)
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(
            f"engines are a comma-separated list of {', '.join(ENGINES)}; got {text!r}")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--latency-jobs", type=int, default=100)
    parser.add_argument("--engines", type=engines, default=ENGINES,
                        help="which engines, comma-separated (default: local,ray)")
    parser.add_argument("--burst", type=int, default=0,
                        help="run the burst case of this many jobs instead (local engine)")
    parser.add_argument("--burst-clients", type=int, default=4,
                        help="concurrent submitters in the burst case")
    parser.add_argument("--rounds", type=int, default=1,
                        help="burst rounds, alternating Shoal and Slurm")
    parser.add_argument("--slurm", choices=("auto", "off"), default="auto",
                        help="burst case: also through Slurm where it is (or can be) "
                             "installed")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="burst case: also run another checkout's Shoal (its .venv), "
                             "in the same rounds, for same-run ratios")
    args = parser.parse_args()
    if args.burst > 0:
        print(json.dumps(burst_main(args.burst, args.burst_clients, args.rounds,
                                    args.slurm == "auto", args.baseline)))
        return
    with tempfile.TemporaryDirectory(prefix="shoal-bench-api-",
                                     ignore_cleanup_errors=True) as tmp, ExitStack() as stack:
        Path(tmp).chmod(0o711)  # tasks' users traverse it to their engine's work directory
        targets = [stack.enter_context(serve(engine, Path(tmp) / engine))
                   for engine in args.engines]
        started = time.perf_counter()
        per_engine = measure(targets, args.submissions, args.latency_jobs)
        wall = time.perf_counter() - started
    result: dict[str, object] = {"engines": list(args.engines), **per_engine}
    if "local" in per_engine and "ray" in per_engine:
        local, ray = per_engine["local"], per_engine["ray"]
        result["ray_vs_local"] = {key: ratio(ray[key], local[key]) for key in (
            "submit_to_running_p50_ms", "submit_to_running_p99_ms", "submissions_per_second")}
    result |= {"submissions": args.submissions, "latency_jobs": args.latency_jobs,
               "wall_s": round(wall, 1), "cpus": os.cpu_count() or 0}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
