"""Benchmark: the multi-cluster what-if on the Microsoft ITP clusters 01–05 (issue 19).

Each trace file is a member (the home of its jobs), sized by `shoal.sim.multicluster_inputs`
(nodes of 8 GPUs, enough for its largest gang and for its own jobs to fill `--utilisation`
of it), with a stated GPU type and the priority of its generation. The jobs each trace
submits in its first `--days` days are replayed under `single`, `fac` and `fac-priority`,
each member running the `--profile` scheduling profile.

Prints one JSON object per policy: `policy`, `mean_queueing_delay_s`,
`p95_queueing_delay_s`, `mean_jct_s`, `preferred_cluster_share`,
`wasted_gpu_seconds_fraction`, the process CPU seconds and wall seconds of that replay, and
ratios against `single` from the same run (`vs_single_*`; `queueing_delay_cut_vs_single` is
1 − the ratio of mean queueing delays). `goal_met` says whether a policy cuts mean queueing
delay by at least 40 % against `single` while wasting under 1 % of GPU-seconds.

    uv run python bench/multicluster.py [--traces DIR] [--days 2] [--utilisation 0.85]
        [--guard 60] [--time-scale 5] [--poll 30] [--profile default] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from shoal.cli.profiles import load_profile
from shoal.sim.multicluster import McConfig, McPolicy, simulate_multicluster
from shoal.sim.multicluster_inputs import itp_inputs
from shoal.sim.multicluster_report import McSummary, summarize

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACES = ROOT.parent / "shared" / "traces" / "itp"
GOAL_CUT = 0.40
GOAL_WASTE = 0.01


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--days", type=float, default=2.0)
    parser.add_argument("--utilisation", type=float, default=0.85)
    parser.add_argument("--guard", type=float, default=60.0)
    parser.add_argument("--time-scale", type=float, default=5.0)
    parser.add_argument("--poll", type=float, default=30.0)
    parser.add_argument("--profile", default="default")
    parser.add_argument("--limit", type=int, default=None, help="at most N jobs per member")
    args = parser.parse_args(argv)

    load_start = time.perf_counter()
    inputs = itp_inputs(args.traces, days=args.days, utilisation=args.utilisation,
                        jobs_per_member=args.limit)
    load_s = time.perf_counter() - load_start
    profile = load_profile(args.profile)
    base: McSummary | None = None
    for policy in McPolicy:
        config = McConfig(policy, guard_time_running=args.guard, time_scale=args.time_scale,
                          poll_interval=args.poll)
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        summary = summarize(simulate_multicluster(inputs.jobs, inputs.members, profile,
                                                  config))
        wall, cpu = time.perf_counter() - wall_start, time.process_time() - cpu_start
        if base is None:
            base = summary  # `single` comes first: the others are measured against it
        out: dict[str, object] = {
            "benchmark": "multicluster",
            **summary.to_json(),
            "cpu_seconds": round(cpu, 3),
            "wall_seconds": round(wall, 3),
            "members": {m.cluster.alias: {"nodes": n, "gpus": n * 8,
                                          "gpu_type": m.cluster.gpu_type,
                                          "priority": m.cluster.priority, "speed": m.speed}
                        for m, (_, n) in zip(inputs.members, inputs.nodes, strict=True)},
            "days": args.days, "utilisation": args.utilisation, "guard_s": args.guard,
            "time_scale_s": args.time_scale, "poll_s": args.poll, "profile": profile.name,
            "trace_load_seconds": round(load_s, 3),
        }
        out.update(_versus(summary, base))
        out["python"] = sys.version.split()[0]
        print(json.dumps(out), flush=True)
    return 0


def _ratio(value: float | None, of: float | None) -> float | None:
    if value is None or of is None or of == 0:
        return None
    return round(value / of, 4)


def _versus(s: McSummary, single: McSummary) -> dict[str, object]:
    delay = _ratio(s.mean_queueing_delay_s, single.mean_queueing_delay_s)
    cut = None if delay is None else round(1 - delay, 4)
    return {
        "vs_single_mean_queueing_delay": delay,
        "vs_single_p95_queueing_delay": _ratio(s.p95_queueing_delay_s,
                                               single.p95_queueing_delay_s),
        "vs_single_mean_jct": _ratio(s.mean_jct_s, single.mean_jct_s),
        "queueing_delay_cut_vs_single": cut,
        "goal_met": cut is not None and cut >= GOAL_CUT
        and s.wasted_gpu_seconds_fraction < GOAL_WASTE,
    }


if __name__ == "__main__":
    raise SystemExit(main())
