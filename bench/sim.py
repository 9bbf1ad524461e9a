"""Benchmark: replay a real trace through the simulator, one profile after another.

By default the first 20,000 jobs of the Philly trace (`../shared/traces/philly/philly.csv`)
on a 1,000-GPU cluster (125 nodes × 8 GPUs), with the trace's 15 virtual clusters, under the
`fifo` and `default` profiles. Prints one JSON object per line and profile. Because these
machines are shared and noisy, each object also carries `vs_calibration`: the replay's wall
time divided by a fixed pure-Python loop timed in the same process.

    uv run python bench/sim.py [--trace PATH] [--cluster 125x8] [--jobs 20000]
                               [--profiles fifo,default]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from shoal.cli.profiles import load_profile
from shoal.sim.inputs import load_trace, with_trace_queues
from shoal.sim.loaders import parse_cluster_arg
from shoal.sim.metrics import summarize
from shoal.sim.simulator import SimConfig, simulate

sys.path.insert(0, str(Path(__file__).resolve().parent))  # as a script or via runpy
from calibration import calibration

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "philly" / "philly.csv"
SAMPLE_TRACE = ROOT / "examples" / "traces" / "philly-sample.csv"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path,
                        default=DEFAULT_TRACE if DEFAULT_TRACE.exists() else SAMPLE_TRACE)
    parser.add_argument("--cluster", default="125x8")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--profiles", default="fifo,default")
    parser.add_argument("--single-queue", action="store_true")
    args = parser.parse_args(argv)

    declared = parse_cluster_arg(args.cluster)
    load_start = time.perf_counter()
    trace = load_trace(args.trace, gpus_per_node=declared.gpus_per_node or 8,
                       limit=args.jobs, single_queue=args.single_queue)
    load_s = time.perf_counter() - load_start
    cluster = with_trace_queues(declared, trace)
    base = min(calibration() for _ in range(3))
    for name in (p.strip() for p in args.profiles.split(",") if p.strip()):
        profile = load_profile(name)
        start = time.perf_counter()
        result = simulate(trace, cluster, profile, SimConfig())
        wall = time.perf_counter() - start
        summary = summarize(result)
        print(json.dumps({
            "benchmark": "sim",
            "profile": profile.name,
            "trace": str(args.trace.name),
            "cluster_gpus": result.cluster_gpus,
            "jobs": len(trace.jobs),
            "finished": summary.finished,
            "wall_seconds": round(wall, 3),
            "trace_load_seconds": round(load_s, 3),
            "jobs_per_second": round(len(trace.jobs) / wall, 1),
            "events": result.events,
            "events_per_second": round(result.events / wall, 1),
            "mean_jct_s": summary.mean_jct_s,
            "median_jct_s": summary.median_jct_s,
            "lower_bound_mean_jct_s": summary.lower_bound_mean_jct_s,
            "avg_utilization": summary.avg_utilization,
            "calibration_seconds": round(base, 4),
            "vs_calibration": round(wall / base, 2),
            "python": sys.version.split()[0],
        }), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
