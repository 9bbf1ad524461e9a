"""Benchmark: one scheduling cycle on a large synthetic cluster.

Builds `--nodes` nodes × 8 GPUs and `--jobs` pending gang jobs of 1–64 GPUs (powers of two;
jobs above 8 GPUs are gangs of 8-GPU tasks) spread over four team virtual clusters with
guaranteed minimums and the default one, then times `run_cycle` on it.

Prints one JSON object. Because these machines are shared and noisy, the same process also
times a fixed pure-Python calibration loop and a cycle at a tenth of the size; the ratios
(`cycle_vs_calibration`, `scaling_ratio`) are what to compare across runs and machines.

    uv run python bench/cycle.py [--nodes 1000] [--jobs 10000] [--seed 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup, VirtualCluster
from shoal.cli.profiles import load_profile
from shoal.core import Snapshot
from shoal.scheduler import Profile, run_cycle

sys.path.insert(0, str(Path(__file__).resolve().parent))  # as a script or via runpy
from calibration import calibration, cycle_ratios

GPUS_PER_NODE = 8
TEAMS = ("vision", "speech", "nlp", "rl")


def build(nodes: int, jobs: int, seed: int) -> Snapshot:
    rng = random.Random(seed)
    node_list = tuple(
        Node(f"node-{i:05d}", Resources.of(cpu=96_000, memory=1_024_000, gpu=GPUS_PER_NODE),
             {"gpu-type": "A100" if i % 4 else "H100"})
        for i in range(nodes))
    share = max(1, nodes * GPUS_PER_NODE // 8)
    vcs = tuple(VirtualCluster(t, min=Resources.of(gpu=share)) for t in TEAMS)
    queues = (*TEAMS, "default")
    job_list = []
    for j in range(jobs):
        size = 2 ** rng.randint(0, 6)
        per_task = min(size, GPUS_PER_NODE)
        group = TaskGroup("worker", size // per_task,
                          Resources.of(cpu=8_000 * per_task, memory=64_000 * per_task,
                                       gpu=per_task))
        job_list.append(Job(f"job-{j:06d}", (group,), queue=rng.choice(queues),
                            scheduler_name=SchedulerName.SHOAL, submitted=float(j),
                            priority_class=rng.choice(("normal", "normal", "production"))))
    return Snapshot(node_list, tuple(job_list), vcs)


def time_cycle(snapshot: Snapshot, profile: Profile, repeat: int) -> tuple[float, int]:
    best = float("inf")
    placements = 0
    for _ in range(repeat):
        start = time.perf_counter()
        decisions = run_cycle(snapshot, profile)
        best = min(best, time.perf_counter() - start)
        placements = len(decisions.binds)
    return best, placements


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", default="default")
    args = parser.parse_args(argv)

    profile = load_profile(args.profile)
    snapshot = build(args.nodes, args.jobs, args.seed)
    small = build(max(1, args.nodes // 10), max(1, args.jobs // 10), args.seed)
    calibration_s = min(calibration() for _ in range(args.repeat))
    small_s, _ = time_cycle(small, profile, args.repeat)
    cycle_s, placements = time_cycle(snapshot, profile, args.repeat)
    print(json.dumps({
        "benchmark": "cycle",
        "profile": profile.name,
        "nodes": args.nodes,
        "gpus": args.nodes * GPUS_PER_NODE,
        "pending_jobs": args.jobs,
        "placements": placements,
        "cycle_seconds": round(cycle_s, 4),
        "placements_per_second": round(placements / cycle_s, 1) if cycle_s else None,
        **cycle_ratios(cycle_s, calibration_s, small_s),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
