"""Benchmark: the Ray engine launching one attempt at a time against launching in batches
(issue 18 item 2, `RayExecutor.launch_many` / `poll_many`), in the same run, on a local
multi-node Ray cluster this bench starts (`ray.cluster_utils.Cluster`: a head and
`--nodes` - 1 more nodes, each named for Shoal by its `shoal.io/node` label).

`--tasks` trivial tasks (`true`) are launched in rounds of `--batch`, as a control loop's
cycles would bind them, spread over the nodes; each round is polled until all of it ended
(which ends the attempts' actors: a live actor is a Ray worker process, ~100 MB), then the
next round starts. Two modes, each over its own Ray namespace and root:

- `one`: today's path, one call after the other — `launch` per task, `poll` per task;
- `batch`: `launch_many` per round (every actor made and every launch fired before one
  wait), `poll_many` per round.

For each mode it measures the launches alone (wall seconds, and this driver process's CPU
seconds: Shoal's side of the work, Ray's driver threads included) and the whole run, and
the CPU seconds of the Ray cluster's own processes (the raylets, GCS and workers: every
descendant of this process, alive or reaped). Prints one JSON object per mode and one with
the ratios one / batch. The machines are shared: CPU seconds and the same-run ratios are the
figures that count.

    uv run --extra ray python bench/ray_launch.py [--tasks 200] [--batch 25] [--nodes 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

# The engine first: importing it turns Ray's `uv run` hook off before Ray is imported.
from shoal.executors.ray_engine import NODE_LABEL, RayExecutor
from shoal.executors.task import RunningTask, TaskLaunch, TaskStatus

#: A safety net for a round: on a loaded machine a batch of actors takes seconds to start.
ROUND_DEADLINE = 600.0
_POLL_INTERVAL = 0.05


@dataclass(frozen=True)
class Clock:
    """Wall and CPU seconds read at one moment: this process's, and its descendants'."""

    wall: float
    cpu: float
    cluster_cpu: float

    @staticmethod
    def now(*, ending: bool = False) -> Clock:
        """Now; the cluster's CPU is read outside what it ends (`ending`) or starts, so
        walking its processes is not counted as this process's work."""
        cluster = 0.0 if ending else _descendants_cpu()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        wall, cpu = time.monotonic(), usage.ru_utime + usage.ru_stime
        return Clock(wall, cpu, _descendants_cpu() if ending else cluster)

    def since(self, start: Clock) -> dict[str, float]:
        return {"wall_s": round(self.wall - start.wall, 3),
                "cpu_s": round(self.cpu - start.cpu, 3),
                "cluster_cpu_s": round(self.cluster_cpu - start.cluster_cpu, 3)}


def _descendants_cpu() -> float:
    """CPU seconds of every process below this one: each live one's own, and those of its
    children that ended (a retired actor's worker is reaped by its raylet)."""
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:  # ended meanwhile: its time went to its parent's children
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _specs(round_: int, size: int, nodes: Sequence[str]) -> list[TaskLaunch]:
    return [TaskLaunch(job=f"round-{round_}", group="worker", index=i, world_size=size,
                       rank=i, master_addr="127.0.0.1", master_port=29500, gpus=(),
                       command=("true",), node=nodes[i % len(nodes)])
            for i in range(size)]


def _until_ended(poll: Callable[[list[RunningTask]], list[TaskStatus]],
                 tasks: list[RunningTask]) -> list[TaskStatus]:
    deadline = time.monotonic() + ROUND_DEADLINE
    while True:
        statuses = poll(tasks)
        if not any(s.running for s in statuses):
            return statuses
        if time.monotonic() > deadline:
            raise SystemExit(f"a round did not end in {ROUND_DEADLINE:.0f} s")
        time.sleep(_POLL_INTERVAL)


def run(mode: str, executor: RayExecutor, tasks: int, batch: int,
        nodes: Sequence[str]) -> dict[str, Any]:
    """Launch `tasks` tasks in rounds of `batch`; the timings of the launches and of it all."""
    launching = {"wall_s": 0.0, "cpu_s": 0.0, "cluster_cpu_s": 0.0}
    start = Clock.now()
    failed = 0
    for round_, first in enumerate(range(0, tasks, batch)):
        specs = _specs(round_, min(batch, tasks - first), nodes)
        before = Clock.now()
        if mode == "one":
            results: list[RunningTask | BaseException] = [executor.launch(s) for s in specs]
        else:
            results = executor.launch_many(specs)
        for key, value in Clock.now(ending=True).since(before).items():
            launching[key] += value
        handles = [r for r in results if isinstance(r, RunningTask) and r.pid > 0]
        failed += len(specs) - len(handles)
        if mode == "one":
            statuses = _until_ended(lambda ts: [executor.poll(t) for t in ts], handles)
        else:
            statuses = _until_ended(executor.poll_many, handles)
        failed += sum(1 for s in statuses if s.exit_code != 0)
    return {"mode": mode, "tasks": tasks, "batch": batch, "nodes": len(nodes),
            "failed": failed,
            "launch": {k: round(v, 3) for k, v in launching.items()},
            "launches_per_wall_s": round(tasks / max(launching["wall_s"], 1e-9), 2),
            "driver_cpu_ms_per_launch": round(1000 * launching["cpu_s"] / tasks, 2),
            "total": Clock.now(ending=True).since(start)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--batch", type=int, default=25,
                        help="launches per round (a cycle's launches)")
    parser.add_argument("--nodes", type=int, default=2, help="Ray nodes, the head included")
    parser.add_argument("--modes", default="one,batch")
    args = parser.parse_args(argv)
    if args.tasks < 1 or args.batch < 1 or args.nodes < 1:
        parser.error("--tasks, --batch and --nodes must be positive")
    import ray
    from ray.cluster_utils import Cluster

    names = [f"bench-{i}" for i in range(args.nodes)]
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "labels": {NODE_LABEL: names[0]}})
    for name in names[1:]:
        cluster.add_node(num_cpus=1, labels={NODE_LABEL: name})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    scratch = Path(tempfile.mkdtemp(prefix="shoal-ray-launch-"))
    results: dict[str, dict[str, Any]] = {}
    try:
        for mode in args.modes.split(","):
            executor = RayExecutor(scratch / mode, namespace=f"bench-{mode}-{os.getpid()}")
            try:
                results[mode] = run(mode, executor, args.tasks, args.batch, names)
            finally:
                executor.close()
            print(json.dumps(results[mode]), flush=True)
    finally:
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]
        shutil.rmtree(scratch, ignore_errors=True)
    if {"one", "batch"} <= results.keys():
        one, batch = results["one"], results["batch"]
        print(json.dumps({"ratio": "one / batch", **{
            f"{part}_{key}": round(one[part][key] / max(batch[part][key], 1e-9), 2)
            for part in ("launch", "total") for key in ("wall_s", "cpu_s", "cluster_cpu_s")}}),
            flush=True)


if __name__ == "__main__":
    main()
