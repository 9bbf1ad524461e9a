"""Benchmark: what polling a copy on a Shoal member costs, the dispatcher's most frequent call.

Starts one `shoal up` (a node of 128 CPUs), runs `--jobs` small jobs (one task of `sleep`)
and one gang of `--gang` tasks, and once all run, times `--rounds` rounds of:

- `status_ms`: `ShoalMember.status` of each small job (one `GET /api/v1/jobs/{name}`: the
  job's latest events hold its start);
- `status_gang_ms`: `ShoalMember.status` of the gang, whose start has scrolled out of its
  latest events behind its tasks' own, so its events' first page is read too;
- `get_job_ms`: the peer, `ShoalClient.get_job` of each small job, the same request through
  the Python client: `status_cpu_ratio_to_get_job` is what the adapter adds to it.

Each as the median wall milliseconds per call and this process's CPU milliseconds per call
(`…_cpu_ms`: the adapter's side), and `server_cpu_ms_per_status` the server's CPU per call
over the status rounds (psutil). The jobs are cancelled at the end.

    uv run python bench/member_poll.py [--jobs 20] [--gang 60] [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from shoal.api.federation import ClusterKind, CopyRequest, CopyState, MemberCluster, RoleRequest
from shoal.client import ShoalClient, wait_until_healthy
from shoal.executors.local import free_port
from shoal.federation.members.contract import MemberCredentials
from shoal.federation.members.shoal_member import ShoalMember

NODE = """\
apiVersion: shoal/v1
kind: Node
metadata: {name: big}
spec:
  capacity: {cpu: 128, memory: 64Gi, gpu: 0}
"""


def copy(name: str, instances: int) -> CopyRequest:
    role = RoleRequest("main", instances, ("sleep 600",), cpu=1, memory_mib=64)
    return CopyRequest(job_name=name, alias="edge", name=name, roles=(role,), document="{}",
                       document_kind="openpai-v2")


def timed(call: Callable[[], object], rounds: int) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(rounds):
        started, cpu_started = time.perf_counter(), time.process_time()
        call()
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - cpu_started) * 1000)
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--gang", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        home = Path(tmp)
        home.chmod(0o711)  # as root, tasks run as their own OS user under --work-dir
        (home / "cluster.yaml").write_text(NODE)
        port = free_port()
        server = subprocess.Popen(
            [str(Path(sys.executable).parent / "shoal"), "up", "--port", str(port),
             "--cluster", "cluster.yaml", "--interval", "0.2", "--grace-period", "1",
             "--work-dir", str(home / "work")],
            cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            if not wait_until_healthy(url, 120, lambda: server.poll() is None):
                raise SystemExit("shoal up did not start")
            token = (home / ".shoal" / "admin.token").read_text().strip()
            result = measure(url, token, args, psutil.Process(server.pid))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
    print(json.dumps(result))


def measure(url: str, token: str, args: argparse.Namespace,
            server: psutil.Process) -> dict[str, object]:
    edge = ShoalMember(MemberCluster("edge", url, ClusterKind.SHOAL),
                       MemberCredentials(token=token), timeout_s=60)
    names = [edge.submit(copy(f"small-{i}", 1)) for i in range(args.jobs)]
    gang = edge.submit(copy("gang", args.gang))
    deadline = time.monotonic() + 300
    while True:
        statuses = {n: edge.status(n) for n in [*names, gang]}
        if all(s.state is CopyState.RUNNING and not s.detail.startswith("partially")
               for s in statuses.values()):
            break
        if time.monotonic() > deadline or any(s.state.is_final for s in statuses.values()):
            stop(edge, [*names, gang])
            raise SystemExit(f"the jobs did not all start: {statuses}")
        time.sleep(0.5)
    results: dict[str, object] = {"jobs": args.jobs, "gang_tasks": args.gang,
                                  "rounds": args.rounds}
    with ShoalClient(url, token, timeout=60) as client:
        server_cpu = sum(server.cpu_times()[:2])
        status = timed(lambda: [edge.status(n) for n in names], args.rounds)
        server_cpu = sum(server.cpu_times()[:2]) - server_cpu
        gang_status = timed(lambda: edge.status(gang), args.rounds)
        get_job = timed(lambda: [client.get_job(n) for n in names], args.rounds)
        for key, (walls, cpus), per in (("status", status, args.jobs),
                                        ("status_gang", gang_status, 1),
                                        ("get_job", get_job, args.jobs)):
            results[f"{key}_ms"] = round(statistics.median(walls) / per, 2)
            results[f"{key}_cpu_ms"] = round(statistics.median(cpus) / per, 2)
        results["server_cpu_ms_per_status"] = round(
            server_cpu * 1000 / (args.rounds * args.jobs), 2)
        results["status_cpu_ratio_to_get_job"] = round(
            float(str(results["status_cpu_ms"])) / max(float(str(results["get_job_cpu_ms"])),
                                                        0.01), 2)
    stop(edge, [*names, gang])
    return results


def stop(edge: ShoalMember, names: list[str]) -> None:
    """Cancel every copy and wait until the member has stopped each one's processes."""
    for name in names:
        edge.cancel(name)
    deadline = time.monotonic() + 120
    while not all(edge.status(n).state.is_final for n in names):
        if time.monotonic() > deadline:
            raise SystemExit("the copies did not stop within 120 s")
        time.sleep(0.5)
    edge.close()


if __name__ == "__main__":
    main()
