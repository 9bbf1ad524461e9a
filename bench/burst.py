"""The burst case of `bench/api.py` (issue 18): N one-CPU jobs that all fit at once,
submitted as fast as possible into `shoal up` and, side by side, into Slurm (`slurm_local`).
`bench/api.py`'s docstring says what is measured; `burst_main` prints nothing itself."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import httpx
import psutil
import slurm_local
from local_server import local_server, server_process

#: How long a burst may take to start every job (a safety net, not a measurement).
BURST_TIMEOUT = 1800.0
TRUE = ["/bin/true"]


def _cluster(cpus: int) -> str:
    return (f"apiVersion: shoal/v1\nkind: Node\nmetadata: {{name: local}}\n"
            f"spec:\n  capacity: {{cpu: {cpus}, memory: {cpus * 64}Mi}}\n")


def _job(name: str) -> bytes:
    return json.dumps({"apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": name},
                       "spec": {"taskGroups": [{"name": "main", "replicas": 1,
                                                "resources": {"cpu": "1", "memory": "16Mi"},
                                                "command": TRUE}]}}).encode()


def _cpu(processes: list[psutil.Process]) -> dict[int, float]:
    out = {}
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        out[process.pid] = float(times.user + times.system)
    return out


def _spent(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(after[pid] - before.get(pid, 0.0) for pid in after)


def _tree_cpu(root: psutil.Process) -> tuple[dict[int, float], set[int]]:
    """CPU seconds of `root` and every process under it, each with what its reaped
    children spent (a wrapper the launcher reaped, the command its wrapper waited for), by
    pid; and the pids of the processes that outlive a burst under `root`: the launchers
    (`--serve`), which the first launch starts, and whatever ran there before."""
    out = {}
    try:
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        tree = [root]
    for process in tree:
        try:
            t = process.cpu_times()
        except psutil.Error:
            continue
        out[process.pid] = float(t.user + t.system + t.children_user + t.children_system)
    return out, {p.pid for p in tree[1:] if "--serve" in _cmdline(p)}


def _settled_tree_cpu(root: psutil.Process, resident: set[int]) -> dict[int, float]:
    """`_tree_cpu` once nothing but `resident` processes and launchers runs under `root`:
    the processes a burst started have ended and been reaped, their CPU counted in their
    parents' (a safety net of 30 s; the launcher reaps at least every second). Counting
    processes instead waited the whole 30 s whenever the burst's first launch started the
    launcher."""
    deadline = time.monotonic() + 30
    while True:
        cpu, launchers = _tree_cpu(root)
        if set(cpu) - {root.pid} <= resident | launchers or time.monotonic() > deadline:
            return cpu
        time.sleep(0.05)


def _busy(times: object) -> float:
    """The machine's busy CPU seconds since boot, all cores (idle and iowait left out)."""
    return float(sum(value for name, value in times._asdict().items()  # type: ignore[attr-defined]
                     if name not in ("idle", "iowait", "guest", "guest_nice")))


def _in_parallel(count: int, clients: int, send: Callable[[int, int], None]) -> None:
    """`send(client, i)` for i in range(count), spread over `clients` threads."""
    def run(client: int) -> None:
        for i in range(client, count, clients):
            send(client, i)

    threads = [threading.Thread(target=run, args=(c,)) for c in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def _summary(count: int, sent: list[float], started: list[float], cpu: float,
             wall: float, extra: dict[str, float] | None = None) -> dict[str, float]:
    waits = [(s - t) * 1000 for s, t in zip(started, sent, strict=True)]
    span = max(started) - min(sent)
    sending = max(sent) - min(sent)
    return {"submitted_per_second": round(count / sending, 1) if sending > 0 else 0.0,
            "started_per_second": round(count / span, 1),
            "submit_to_running_p50_ms": round(statistics.median(waits), 1),
            "submit_to_running_p99_ms": round(_percentile(waits, 99), 1),
            "daemon_cpu_ms_per_job": round(cpu * 1000 / count, 2),
            "daemon_cpu_s": round(cpu, 2), "wall_s": round(wall, 1), **(extra or {})}


# ---- Shoal ------------------------------------------------------------------------------------

def _shoal_round(client: httpx.Client, server: psutil.Process, count: int, clients: int,
                 prefix: str) -> dict[str, float]:
    url, token = client.base_url, client.headers["Authorization"]
    connections = [httpx.Client(base_url=url, headers={"Authorization": token,
                                                       "Content-Type": "application/json"},
                                timeout=120) for _ in range(clients)]
    sent = [0.0] * count
    names = [f"{prefix}-{i:05d}" for i in range(count)]

    def send(c: int, i: int) -> None:
        sent[i] = time.time()
        answer = connections[c].post("/api/v1/jobs", content=_job(names[i]),
                                     headers={"Idempotency-Key": uuid.uuid4().hex})
        if answer.status_code != 201:
            raise SystemExit(f"submission {names[i]} refused: {answer.status_code} "
                             f"{answer.text}")

    before = _cpu([server, *server.children(recursive=True)])
    tree_before, _ = _tree_cpu(server)
    resident = set(tree_before) - {server.pid}
    # The clients' CPU from the process's own clock, not psutil's ticks (10 ms: a small
    # burst's clients spend less than one).
    client_before, machine_before = time.process_time(), _busy(psutil.cpu_times())
    started = time.perf_counter()
    _in_parallel(count, clients, send)
    clients_cpu = time.process_time() - client_before
    deadline = time.monotonic() + BURST_TIMEOUT
    while any(client.get("/api/v1/jobs", params={"state": state, "limit": 1}).json()["items"]
              for state in ("Pending", "Running")):
        if time.monotonic() > deadline:
            raise SystemExit(f"the Shoal burst did not end within {BURST_TIMEOUT} s")
        time.sleep(0.25)
    wall = time.perf_counter() - started
    # The launcher is the server's child; the wrappers it forked are its children.
    daemons = [server, *(p for p in server.children() if "--serve" in _cmdline(p))]
    cpu = _spent(before, _cpu(daemons))
    machine = _busy(psutil.cpu_times()) - machine_before
    everything = _spent(tree_before, _settled_tree_cpu(server, resident))
    for connection in connections:
        connection.close()
    starts = [_started(client, name) for name in names]
    running = [at for at, _ in starts]
    return _summary(count, sent, running, cpu, wall, {
        "bind_cycles": len({cycle for _, cycle in starts}),
        "all_processes_cpu_ms_per_job": round(everything * 1000 / count, 2),
        "clients_cpu_ms_per_job": round(clients_cpu * 1000 / count, 2),
        "machine_busy_cpu_s": round(machine, 2)})


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def _started(client: httpx.Client, name: str) -> tuple[float, str]:
    """When the job's task was recorded running, and the scheduling cycle that placed it
    (`bind_cycles` counts them: how many jobs a cycle's batch carried)."""
    running, cycle = None, ""
    for event in client.get(f"/api/v1/jobs/{name}/events").json()["items"]:
        if event["task"] is None:
            continue
        if event["target"] == "Running" and running is None:
            running = float(event["time"])
        if event["target"] == "Bound" and not cycle:
            cycle = str(event.get("cause", "")).split(" (")[0]
    if running is None:
        raise SystemExit(f"job {name} has no Running event")
    return running, cycle


# ---- Slurm ------------------------------------------------------------------------------------

def _slurm_round(slurm: slurm_local.Slurm, marks: Path, count: int, clients: int
                 ) -> dict[str, float]:
    sent = [0.0] * count
    ids = [""] * count

    def send(_c: int, i: int) -> None:
        sent[i] = time.time()
        ids[i] = slurm.sbatch("-J", f"burst-{i}", "-n1", "-c1", "--mem=16",
                              "-o", "/dev/null", "-e", "/dev/null", "--wrap",
                              f"date +%s.%N > {marks}/$SLURM_JOB_ID")

    before = _cpu(list(slurm.daemons))
    started = time.perf_counter()
    _in_parallel(count, clients, send)
    deadline = time.monotonic() + BURST_TIMEOUT
    while slurm.queued():
        if time.monotonic() > deadline:
            raise SystemExit(f"the Slurm burst did not end within {BURST_TIMEOUT} s")
        time.sleep(0.25)
    wall = time.perf_counter() - started
    cpu = _spent(before, _cpu(list(slurm.daemons)))
    running = [float((marks / job).read_text()) for job in ids]
    return _summary(count, sent, running, cpu, wall)


# ---- both -------------------------------------------------------------------------------------

def _mean(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.fmean(r[key] for r in rounds), 2) for key in rounds[0]}


def _ratios(ours: dict[str, float], theirs: dict[str, float], prefix: str
            ) -> dict[str, float]:
    return {f"{prefix}_start_rate": round(
                ours["started_per_second"] / theirs["started_per_second"], 2),
            f"{prefix}_p50": round(
                ours["submit_to_running_p50_ms"] / theirs["submit_to_running_p50_ms"], 2),
            f"{prefix}_cpu_per_job": round(
                ours["daemon_cpu_ms_per_job"] / theirs["daemon_cpu_ms_per_job"], 2)}


def burst_main(count: int, clients: int, rounds: int, with_slurm: bool,
               baseline: Path | None = None) -> dict[str, object]:
    """Run the burst `rounds` times on Shoal (and on `baseline`, another checkout's Shoal,
    and Slurm), alternating; the result object."""
    slurm_ok = with_slurm and slurm_local.install()
    shoal_runs: list[dict[str, float]] = []
    baseline_runs: list[dict[str, float]] = []
    slurm_runs: list[dict[str, float]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="shoal-bench-burst-",
                                     ignore_cleanup_errors=True) as tmp, ExitStack() as stack:
        root = Path(tmp)
        root.chmod(0o711)
        servers: list[tuple[httpx.Client, psutil.Process, list[dict[str, float]]]] = []
        for name, checkout, runs in (("shoal", None, shoal_runs),
                                     ("baseline", baseline, baseline_runs)):
            if name == "baseline" and checkout is None:
                continue
            workdir = root / name
            workdir.mkdir()
            cluster = workdir / "cluster.yaml"
            cluster.write_text(_cluster(count))
            client = stack.enter_context(local_server(
                workdir, "--cluster", str(cluster), "--grace-period", "1", timeout=120,
                checkout=checkout))
            servers.append((client, server_process(workdir / "data"), runs))
        slurm = stack.enter_context(slurm_local.local_slurm(root / "slurm", count)) \
            if slurm_ok else None
        for r in range(rounds):
            for client, server, runs in servers:
                runs.append(_shoal_round(client, server, count, clients, f"burst{r}"))
            if slurm is not None:
                marks = root / f"marks-{r}"
                marks.mkdir()
                slurm_runs.append(_slurm_round(slurm, marks, count, clients))
    shoal = _mean(shoal_runs)
    result: dict[str, object] = {"case": "burst", "jobs": count, "clients": clients,
                                 "rounds": rounds, "shoal": shoal}
    if baseline_runs:
        result["baseline"] = _mean(baseline_runs)
        result["baseline_checkout"] = str(baseline)
        result |= _ratios(shoal, _mean(baseline_runs), "shoal_vs_baseline")
        result["shoal_vs_baseline_all_processes_cpu_per_job"] = round(
            shoal["all_processes_cpu_ms_per_job"]
            / _mean(baseline_runs)["all_processes_cpu_ms_per_job"], 2)
    result["slurm"] = _mean(slurm_runs) if slurm_runs else None
    if slurm_runs:
        result |= _ratios(shoal, _mean(slurm_runs), "shoal_vs_slurm")
    result |= {"wall_s": round(time.perf_counter() - started, 1), "cpus": os.cpu_count() or 0}
    return result
