"""Benchmark: replay a real trace through the simulator, one profile after another.

By default the first 20,000 jobs of the Philly trace (`../shared/traces/philly/philly.csv`)
on a 1,000-GPU cluster (125 nodes × 8 GPUs), with the trace's 15 virtual clusters, under the
`fifo` and `default` profiles. Prints one JSON object per line and profile. Because these
machines are shared and noisy, each object also carries the process CPU seconds the replay
took (`cpu_seconds`, `jobs_per_cpu_second`) beside its wall time, and `vs_calibration`: the
replay's wall time divided by a fixed pure-Python loop timed in the same process.

`--case philly-full` is the backlog case of issue 18: every job of the trace (82,247 for
Philly) on 80 × 8 GPUs, where jobs really queue, under `fifo`, `default` and `las`.
`--jobs 0` takes every job of the trace. `--cpu-limit S` stops a replay after about S
CPU-seconds (checked every 5,000 events) and reports how far it got (`stopped_early`,
`finished`, `simulated_seconds`), so a replay too slow to finish still reports.

    uv run python bench/sim.py [--trace PATH] [--cluster 125x8] [--jobs 20000]
                               [--profiles fifo,default] [--case philly-full]
                               [--cpu-limit SECONDS]
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
from shoal.sim.result import SimResult
from shoal.sim.simulator import SimConfig, simulate

sys.path.insert(0, str(Path(__file__).resolve().parent))  # as a script or via runpy
from calibration import calibration

CASES = {"philly-full": {"cluster": "80x8", "jobs": 0, "profiles": "fifo,default,las"}}
"""Named cases: what they set, over the defaults (an option given explicitly wins)."""

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "philly" / "philly.csv"
SAMPLE_TRACE = ROOT / "examples" / "traces" / "philly-sample.csv"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path,
                        default=DEFAULT_TRACE if DEFAULT_TRACE.exists() else SAMPLE_TRACE)
    parser.add_argument("--cluster", default=None, help="NODESxGPUS (default 125x8)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="the trace's first N jobs; 0: all (default 20000)")
    parser.add_argument("--profiles", default=None, help="default fifo,default")
    parser.add_argument("--single-queue", action="store_true")
    parser.add_argument("--case", choices=sorted(CASES))
    parser.add_argument("--cpu-limit", type=float, default=None,
                        help="stop a replay after about this many CPU-seconds")
    args = parser.parse_args(argv)
    case = CASES.get(args.case or "", {})
    defaults = {"cluster": "125x8", "jobs": 20_000, "profiles": "fifo,default"}
    for key, value in {**defaults, **case}.items():
        if getattr(args, key) is None:
            setattr(args, key, value)

    declared = parse_cluster_arg(args.cluster)
    load_start = time.perf_counter()
    trace = load_trace(args.trace, gpus_per_node=declared.gpus_per_node or 8,
                       limit=args.jobs or None, single_queue=args.single_queue)
    load_s = time.perf_counter() - load_start
    cluster = with_trace_queues(declared, trace)
    base = min(calibration() for _ in range(3))
    for name in (p.strip() for p in args.profiles.split(",") if p.strip()):
        profile = load_profile(name)
        start = time.perf_counter()
        cpu_start = time.process_time()
        reached = Reached(cpu_start, args.cpu_limit)
        try:
            result: SimResult | None = simulate(trace, cluster, profile, SimConfig(),
                                                progress=reached)
        except CpuLimitError:
            result = None
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        out: dict[str, object] = {
            "benchmark": "sim",
            "case": args.case,
            "profile": profile.name,
            "trace": str(args.trace.name),
            "cluster": args.cluster,
            "jobs": len(trace.jobs),
            "cpu_seconds": round(cpu, 3),
            "wall_seconds": round(wall, 3),
            "jobs_per_cpu_second": round(len(trace.jobs) / cpu, 1) if cpu else None,
            "trace_load_seconds": round(load_s, 3),
            "stopped_early": result is None,
        }
        if result is None:
            out.update(finished=reached.finished, simulated_seconds=round(reached.time, 1),
                       cpu_limit=args.cpu_limit)
        else:
            summary = summarize(result)
            out.update({
                "finished": summary.finished,
                "jobs_per_second": round(len(trace.jobs) / wall, 1),
                "events": result.events,
                "events_per_second": round(result.events / wall, 1),
                "mean_jct_s": summary.mean_jct_s,
                "median_jct_s": summary.median_jct_s,
                "lower_bound_mean_jct_s": summary.lower_bound_mean_jct_s,
                "avg_utilization": summary.avg_utilization,
            })
        out.update(calibration_seconds=round(base, 4), vs_calibration=round(wall / base, 2),
                   python=sys.version.split()[0])
        print(json.dumps(out), flush=True)
    return 0


class CpuLimitError(Exception):
    """A replay ran past `--cpu-limit`."""


class Reached:
    """The simulator's progress callback: remembers how far the replay got, and stops it
    (raises `CpuLimitError`) once it has used more CPU time than allowed."""

    def __init__(self, cpu_start: float, limit: float | None) -> None:
        self.cpu_start = cpu_start
        self.limit = limit
        self.time = 0.0
        self.finished = 0

    def __call__(self, now: float, finished: int, total: int) -> None:
        self.time, self.finished = now, finished
        if finished < total and self.limit is not None \
                and time.process_time() - self.cpu_start > self.limit:
            raise CpuLimitError


if __name__ == "__main__":
    raise SystemExit(main())
