"""Benchmark: one cycle of job-level preemption and reclaim on a full cluster (seed 001).

Builds `--nodes` nodes × 8 GPUs, every GPU held by low-priority running jobs — rigid gangs
of 8-GPU tasks and elastic jobs grown to their maximum, all started long enough ago to be
takeable — and `--waiting` pending jobs of 1–32 GPUs: production-class ones in the running
jobs' virtual cluster (preempt), and jobs of a team whose guarantee the running jobs borrow
(reclaim). Times `run_cycle` under the `elastic` profile (preempt, reclaim and elastic, with
capacity in elastic mode) and, on the same snapshot, under `default` (which evicts nothing,
so its cycle is the cost of finding that nothing fits).

Prints one JSON object. The machines are shared and noisy: compare the ratios
(`vs_default`, `cycle_vs_calibration`, `scaling_ratio` against a tenth of the size), timed in the
same process, rather than the seconds.

    uv run python bench/preempt.py [--nodes 200] [--waiting 200] [--seed 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from shoal.api import (
    Elasticity,
    Job,
    JobState,
    Node,
    PriorityClass,
    Resources,
    ScaleStep,
    SchedulerName,
    Task,
    TaskGroup,
    TaskState,
    VirtualCluster,
)
from shoal.api.decisions import Decisions
from shoal.core import Snapshot
from shoal.scheduler import Profile, run_cycle

sys.path.insert(0, str(Path(__file__).resolve().parent))  # as a script or via runpy
from calibration import calibration, cycle_ratios

GPUS_PER_NODE = 8
CLASSES = (PriorityClass("low", 10), PriorityClass("production", 1000))
#: The running jobs started this long before the cycle: past any protection.
RAN_FOR = 3600.0


def build(nodes: int, waiting: int, seed: int) -> Snapshot:
    rng = random.Random(seed)
    node_list = tuple(Node(f"node-{i:05d}", Resources.of(cpu=96_000, memory=1_024_000,
                                                          gpu=GPUS_PER_NODE))
                      for i in range(nodes))
    gpus = nodes * GPUS_PER_NODE
    # The team is owed a quarter of the GPUs, which the borrowers hold.
    vcs = (VirtualCluster("team", min=Resources.of(gpu=gpus // 4)), VirtualCluster("borrowers"))
    jobs: list[Job] = []
    per_gpu = Resources.of(cpu=8_000, memory=64_000, gpu=1)
    for n, node in enumerate(node_list):
        # Each node: one rigid 4-GPU task of a two-node gang, and one elastic job of 4
        # one-GPU tasks grown to its maximum from a minimum of 1 (powers of two).
        if n % 2 == 0 and n + 1 < nodes:
            gang = f"gang-{n:05d}"
            jobs.append(Job(gang, (TaskGroup("w", 2, per_gpu.scale(4)),), queue="borrowers",
                            scheduler_name=SchedulerName.SHOAL, priority_class="low",
                            submitted=-RAN_FOR, state=JobState.RUNNING, tasks=tuple(
                                Task(gang, "w", i, TaskState.RUNNING, node_list[n + i].name,
                                     (0, 1, 2, 3), -RAN_FOR) for i in range(2))))
        name = f"elastic-{n:05d}"
        jobs.append(Job(name, (TaskGroup("w", 4, per_gpu),), queue="borrowers",
                        scheduler_name=SchedulerName.SHOAL, priority_class="low",
                        submitted=-RAN_FOR, state=JobState.RUNNING,
                        elastic=Elasticity("w", 1, 4, ScaleStep.POWER_OF_TWO),
                        tasks=tuple(Task(name, "w", i, TaskState.RUNNING, node.name, (4 + i,),
                                         -RAN_FOR) for i in range(4))))
    for w in range(waiting):
        size = 2 ** rng.randint(0, 5)
        per_task = min(size, GPUS_PER_NODE)
        reclaim = w % 2 == 1
        jobs.append(Job(f"wait-{w:05d}", (TaskGroup("w", size // per_task,
                                                    per_gpu.scale(per_task)),),
                        queue="team" if reclaim else "borrowers",
                        scheduler_name=SchedulerName.SHOAL, submitted=float(w),
                        priority_class="low" if reclaim else "production"))
    return Snapshot(node_list, tuple(jobs), vcs, CLASSES)


def time_cycle(snapshot: Snapshot, profile: Profile, repeat: int) -> tuple[float, Decisions]:
    best, decided = float("inf"), Decisions()
    for _ in range(repeat):
        start = time.perf_counter()
        decided = run_cycle(snapshot, profile)
        best = min(best, time.perf_counter() - start)
    return best, decided


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--waiting", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    snapshot = build(args.nodes, args.waiting, args.seed)
    small = build(max(2, args.nodes // 10), max(1, args.waiting // 10), args.seed)
    elastic, default = Profile.load("elastic"), Profile.load("default")
    calibration_s = min(calibration() for _ in range(args.repeat))
    small_s, _ = time_cycle(small, elastic, args.repeat)
    cycle_s, decided = time_cycle(snapshot, elastic, args.repeat)
    default_s, _ = time_cycle(snapshot, default, args.repeat)
    reasons = [e.reason for e in decided.evictions]
    print(json.dumps({
        "benchmark": "preempt",
        "profile": elastic.name,
        "nodes": args.nodes,
        "gpus": args.nodes * GPUS_PER_NODE,
        "waiting_jobs": args.waiting,
        "placements": len(decided.binds),
        "evictions": len(decided.evictions),
        "surplus_evictions": sum("surplus" in r for r in reasons),
        "resizes": len(decided.resizes),
        "cycle_seconds": round(cycle_s, 4),
        "default_cycle_seconds": round(default_s, 4),
        "vs_default": round(cycle_s / default_s, 2) if default_s else None,
        **cycle_ratios(cycle_s, calibration_s, small_s),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
