"""Benchmark: the Ray engine launching one attempt at a time against launching in batches
(issue 18 item 2, `RayExecutor.launch_many` / `poll_many`), in the same run, on a local
multi-node Ray cluster this bench starts (`ray.cluster_utils.Cluster`: a head and
`--nodes` - 1 more nodes, each named for Shoal by its `shoal.io/node` label).

`--tasks` trivial tasks (`true`) are launched in rounds of `--batch`, as a control loop's
cycles would bind them, spread over the nodes; each round is polled until all of it ended,
then the next round starts. Every launch goes through its node's long-lived supervisor actor
(made on first use, during the warm-up); an engine before issue 18's supervisors made one
actor, a fresh Ray worker process, per attempt: run this file from such a checkout to
compare the cluster's CPU per launch (`cluster_cpu_s_per_launch`) in the same window.

Two modes, each over its own Ray namespace and root, taking the rounds
in turn (each going first every other round, so that both see the same load on a shared
machine), after one warm-up round each (Ray's first-use costs, not counted):

- `one`: one attempt at a time, as the control loop called the engine before batches —
  `launch` per task, `poll` per task;
- `batch`: `launch_many` per round (one call per node's supervisor, all fired before one
  wait), `poll_many` per round.

For each mode it measures the launches alone (wall seconds, and this driver process's CPU
seconds: Shoal's side of the work, Ray's driver threads included) and the whole run, and
the CPU seconds of the Ray cluster's own processes (the raylets, GCS and workers: every
descendant of this process, sampled after each round's launches and after its end; a lower
bound, `ClusterCpu`). Prints one JSON object per mode and one with the ratios one / batch.
The machines are shared: CPU seconds and the same-run ratios are the figures that count.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

# The engine first: importing it turns Ray's `uv run` hook off before Ray is imported.
from shoal.executors.ray_engine import NODE_LABEL, RayExecutor
from shoal.executors.task import RunningTask, TaskLaunch, TaskStatus

#: A safety net for a round: on a loaded machine a launch can take seconds.
ROUND_DEADLINE = 600.0
_POLL_INTERVAL = 0.05


class ClusterCpu:
    """The CPU seconds the Ray cluster's processes (every descendant of this one: GCS,
    raylets, workers) spent since the first sample, each process as last seen alive: a
    worker that ends is reaped outside this process's view, so its time is taken from the
    samples (one after each round's launches and one after its end).
    What a process spent after its last sample is missed: a lower bound."""

    def __init__(self) -> None:
        self._seen: dict[tuple[int, float], tuple[float, float]] = {}  # base, last
        self._first = True
        self.sample()
        self._first = False

    def sample(self) -> float:
        for child in psutil.Process().children(recursive=True):
            try:
                with child.oneshot():
                    key = (child.pid, child.create_time())
                    times = child.cpu_times()
            except psutil.Error:  # ended meanwhile
                continue
            spent = times.user + times.system
            base, _ = self._seen.get(key, (spent if self._first else 0.0, 0.0))
            self._seen[key] = (base, spent)
        return sum(last - base for base, last in self._seen.values())


@dataclass(frozen=True)
class Clock:
    """Wall and CPU seconds read at one moment: this process's, and the cluster's."""

    wall: float
    cpu: float
    cluster_cpu: float

    @staticmethod
    def now(cluster: ClusterCpu, *, ending: bool = False) -> Clock:
        """Now; the cluster is sampled outside what this reading ends (`ending`) or starts,
        so walking its processes is not counted as this process's work."""
        before = 0.0 if ending else cluster.sample()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        wall, cpu = time.monotonic(), usage.ru_utime + usage.ru_stime
        return Clock(wall, cpu, cluster.sample() if ending else before)

    def since(self, start: Clock) -> dict[str, float]:
        return {"wall_s": round(self.wall - start.wall, 3),
                "cpu_s": round(self.cpu - start.cpu, 3),
                "cluster_cpu_s": round(self.cluster_cpu - start.cluster_cpu, 3)}


def _specs(round_: int, size: int, nodes: Sequence[str]) -> list[TaskLaunch]:
    job = f"round-{round_}" if round_ >= 0 else "warm-up"
    return [TaskLaunch(job=job, group="worker", index=i, world_size=size, rank=i,
                       master_addr="127.0.0.1", master_port=29500, gpus=(), command=("true",),
                       node=nodes[i % len(nodes)])
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


@dataclass
class Tally:
    """One mode's executor (its own Ray namespace and root) and what its rounds cost."""

    mode: str
    executor: RayExecutor
    launch: dict[str, float] = field(default_factory=dict)
    total: dict[str, float] = field(default_factory=dict)
    tasks: int = 0
    failed: int = 0

    def run_round(self, specs: list[TaskLaunch], cluster: ClusterCpu, *,
                  counted: bool = True) -> None:
        """Launch the round, then poll it until it all ended."""
        start = Clock.now(cluster)
        executor = self.executor
        if self.mode == "one":
            results: list[RunningTask | BaseException] = [executor.launch(s) for s in specs]
        else:
            results = executor.launch_many(specs)
        launched = Clock.now(cluster, ending=True)
        handles = [r for r in results if isinstance(r, RunningTask) and r.pid > 0]
        if self.mode == "one":
            statuses = _until_ended(lambda ts: [executor.poll(t) for t in ts], handles)
        else:
            statuses = _until_ended(executor.poll_many, handles)
        ended = Clock.now(cluster, ending=True)
        if not counted:
            return
        for into, end in ((self.launch, launched), (self.total, ended)):
            for key, value in end.since(start).items():
                into[key] = into.get(key, 0.0) + value
        self.tasks += len(specs)
        self.failed += len(specs) - len(handles) + sum(1 for s in statuses
                                                        if s.exit_code != 0)

    def report(self, batch: int, nodes: int) -> dict[str, Any]:
        return {"mode": self.mode, "tasks": self.tasks, "batch": batch, "nodes": nodes,
                "failed": self.failed,
                "launch": {k: round(v, 3) for k, v in self.launch.items()},
                "launches_per_wall_s": round(self.tasks / max(self.launch["wall_s"], 1e-9),
                                             2),
                "driver_cpu_ms_per_launch": round(1000 * self.launch["cpu_s"] / self.tasks, 2),
                "cluster_cpu_s_per_launch": round(self.total["cluster_cpu_s"] / self.tasks, 3),
                "total": {k: round(v, 3) for k, v in self.total.items()}}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--batch", type=int, default=25,
                        help="launches per round (a cycle's launches)")
    parser.add_argument("--nodes", type=int, default=2, help="Ray nodes, the head included")
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
    tallies = [Tally(mode, RayExecutor(scratch / mode,
                                       namespace=f"bench-{mode}-{os.getpid()}"))
               for mode in ("one", "batch")]
    try:
        samples = ClusterCpu()
        for tally in tallies:  # Ray's first-use costs (the supervisors, workers) paid first
            tally.run_round(_specs(-1, args.nodes, names), samples, counted=False)
        for round_, first in enumerate(range(0, args.tasks, args.batch)):
            specs = _specs(round_, min(args.batch, args.tasks - first), names)
            # Rounds alternate between the modes, each going first in turn, so that both
            # see the same load on a shared machine.
            for tally in tallies if round_ % 2 == 0 else tallies[::-1]:
                tally.run_round(specs, samples)
    finally:
        for tally in tallies:
            tally.executor.close()
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]
        shutil.rmtree(scratch, ignore_errors=True)
    one, batch = (tally.report(args.batch, args.nodes) for tally in tallies)
    print(json.dumps(one), flush=True)
    print(json.dumps(batch), flush=True)
    print(json.dumps({"ratio": "one / batch", **{
        f"{part}_{key}": round(one[part][key] / max(batch[part][key], 1e-9), 2)
        for part in ("launch", "total") for key in ("wall_s", "cpu_s", "cluster_cpu_s")}}),
        flush=True)


if __name__ == "__main__":
    main()
