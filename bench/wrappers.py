"""Benchmark: what starting a task's wrapper costs, the compiled wrapper (`wrapper.c`,
spawned) against the Python wrapper (forked from the launcher's interpreter), in the same
run (issue 18).

Sends N launch requests of `/bin/true` to a launcher (`shoal.executors.launcher`) in one
batch, waits until every attempt's `status.json` is written, and counts the CPU time of
every process involved: the launcher itself and, once it reaped them, each wrapper and its
command (`children` times). Rounds alternate between the two kinds, so that the machine's
load falls on both alike. Prints one JSON object: per kind, `cpu_ms_per_task` (launcher +
wrappers + commands ÷ N), `launcher_cpu_ms_per_task`, `wall_s` (first request to last
status), and `compiled_vs_python` (the ratio of `cpu_ms_per_task`).

    uv run python bench/wrappers.py [--tasks 500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from shoal.executors.launcher import Launcher, LaunchRequest

#: How long a round may take (a safety net, not a measurement).
ROUND_TIMEOUT = 600.0


def _cpu(process: psutil.Process) -> tuple[float, float]:
    """The launcher's own CPU seconds, and its reaped children's."""
    t = process.cpu_times()
    return t.user + t.system, t.children_user + t.children_system


def _round(compiled: bool, tasks: int, root: Path) -> dict[str, float]:
    launcher = Launcher(compiled=compiled)
    try:
        warm = root / "warm"
        warm.mkdir()
        launcher.fork(LaunchRequest(warm, ["/bin/true"], {}, "/", warm / "out", warm / "err"))
        while not (warm / "status.json").exists():
            time.sleep(0.01)
        process = psutil.Process(launcher.pid)
        requests = []
        for i in range(tasks):
            task_dir = root / f"task-{i}"
            task_dir.mkdir()
            requests.append(LaunchRequest(task_dir, ["/bin/true"], {"PATH": "/usr/bin:/bin"},
                                          "/", root / f"{i}.out", root / f"{i}.err"))
        own, children = _cpu(process)
        started = time.perf_counter()
        launcher.fork_many(requests)
        deadline = time.monotonic() + ROUND_TIMEOUT
        for request in requests:
            while not (request.task_dir / "status.json").exists():
                if time.monotonic() > deadline:
                    raise SystemExit("the wrappers did not all end in time")
                time.sleep(0.005)
        wall = time.perf_counter() - started
        while process.children():  # reaped: their CPU is in the launcher's children times
            time.sleep(0.05)
        own_after, children_after = _cpu(process)
        return {"cpu_ms_per_task": (own_after - own + children_after - children) * 1000 / tasks,
                "launcher_cpu_ms_per_task": (own_after - own) * 1000 / tasks, "wall_s": wall}
    finally:
        launcher.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"compiled": [], "python": []}
    probe = Launcher()
    with tempfile.TemporaryDirectory(prefix="shoal-bench-wrappers-") as tmp:
        for r in range(args.rounds):
            for kind in ("compiled", "python"):
                root = Path(tmp) / f"{kind}-{r}"
                root.mkdir()
                runs[kind].append(_round(kind == "compiled", args.tasks, root))
        probe_dir = Path(tmp) / "probe"
        probe_dir.mkdir()
        probe.fork(LaunchRequest(probe_dir, ["/bin/true"], {}, "/", probe_dir / "o",
                                 probe_dir / "e"))
        built = probe.native is not None
        # Its wrapper writes into the directory: done before the directory is removed.
        while not (probe_dir / "status.json").exists():
            time.sleep(0.01)
        probe.close()
    result: dict[str, object] = {"benchmark": "wrappers", "tasks": args.tasks,
                                 "rounds": args.rounds, "compiled_built": built}
    for kind, rounds in runs.items():
        result[kind] = {key: round(statistics.median(r[key] for r in rounds), 3)
                        for key in rounds[0]}
    result["compiled_vs_python"] = round(
        statistics.median(r["cpu_ms_per_task"] for r in runs["compiled"])
        / statistics.median(r["cpu_ms_per_task"] for r in runs["python"]), 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
