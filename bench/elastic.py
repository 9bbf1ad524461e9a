"""Benchmark: Shoal's profiles on the Pollux workloads, beside the figures their authors
published.

The 8 workloads of the Pollux OSDI'21 artifact (`../shared/traces/pollux/workloads/`) on
its cluster of 16 nodes × 4 GPUs, through Shoal's simulator with the Pollux application
model (`shoal/sim/pollux.py`): `fifo` (rigid), `default` (rigid: priority order with
backfill), `las` (rigid, Tiresias-style least attained service with preemption),
`elastic` and `las-elastic` (every job elastic from 1 replica to its requested count).
A name may say how its jobs behave after a `+`: `rigid`, `elastic`, or `adaptive` — elastic
jobs that also adapt their batch size to the replicas they get, as AdaptDL jobs do under
Pollux (`Application.adaptive_run_time`: the job's choice, not the scheduler's). Without
one, jobs are elastic under the profiles named for it and rigid under the others, so
`default` is Shoal's rigid default and `default+elastic` the same profile with its
`elastic` action at work. Preempted jobs keep their work up to their last checkpoint
(`--checkpoint`, 60 s by default), as the artifact's jobs checkpoint and restart. Prints one
JSON object per run, averaged over the workloads: `profile`, `jobs` (the mode),
`mean_jct_s`, `makespan_s`, `utilization`, `preemptions`, the per-workload mean JCTs, the
ratio of its mean JCT to the `fifo` run of the same process (`vs_fifo`), and to each
published figure (`vs_published`: Tiresias 4,038 s, Optimus 5,682 s, Pollux 2,751 s mean JCT
over the 8 workloads).

    uv run python bench/elastic.py [--workloads 1-8] [--profiles fifo,las,las-elastic+adaptive]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from statistics import fmean

from shoal.scheduler import Profile
from shoal.sim.loaders import parse_cluster_arg
from shoal.sim.loaders.pollux import load_pollux
from shoal.sim.metrics import summarize
from shoal.sim.pollux import load_applications
from shoal.sim.simulator import SimConfig, simulate

ROOT = Path(__file__).resolve().parents[1]
POLLUX = ROOT.parent / "shared" / "traces" / "pollux"
#: Mean JCT (s) over the 8 workloads published in the Pollux paper (OSDI 2021), for the
#: artifact's simulator: Tiresias and Optimus (rigid), and Pollux (goodput-adaptive).
PUBLISHED = {"tiresias": 4038.0, "optimus": 5682.0, "pollux": 2751.0}
CLUSTER = "16x4"
#: How a run's jobs behave, after a `+` in its name.
JOB_MODES = ("rigid", "elastic", "adaptive")
DEFAULT_PROFILES = "fifo,default,las,elastic,las-elastic,default+elastic,las-elastic+adaptive"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pollux", type=Path, default=POLLUX,
                        help="the artifact's directory: traces/ and workloads/")
    parser.add_argument("--workloads", default="1-8", help="e.g. 1-8 or 1,3")
    parser.add_argument("--profiles", default=DEFAULT_PROFILES)
    parser.add_argument("--checkpoint", type=float, default=60.0,
                        help="seconds between checkpoints: a preempted job keeps its work "
                             "up to the last one (the artifact's jobs checkpoint and "
                             "restart)")
    args = parser.parse_args(argv)
    workloads = _numbers(args.workloads)
    applications = load_applications(args.pollux / "traces")
    cluster = parse_cluster_arg(CLUSTER)
    rows: list[dict[str, object]] = []
    for name in (p.strip() for p in args.profiles.split(",") if p.strip()):
        profile_name, _, mode = name.partition("+")
        mode = mode or ("elastic" if "elastic" in profile_name else "rigid")
        if mode not in JOB_MODES:
            parser.error(f"--profiles: {name!r}: the jobs' mode after '+' is one of "
                         f"{', '.join(JOB_MODES)}")
        profile = Profile.load(profile_name)
        summaries = []
        start = time.perf_counter()
        for number in workloads:
            path = args.pollux / "workloads" / f"workload-{number}.csv"
            trace, work = load_pollux(path, applications, elastic=mode != "rigid",
                                      adaptive=mode == "adaptive")
            work = replace(work, checkpoint_interval=args.checkpoint)
            summaries.append(summarize(simulate(trace, cluster, profile,
                                                SimConfig(work=work))))
        rows.append({
            "benchmark": "elastic",
            "profile": name,
            "jobs": mode,
            "workloads": workloads,
            "cluster": CLUSTER,
            "mean_jct_s": round(fmean(s.mean_jct_s or 0.0 for s in summaries), 1),
            "makespan_s": round(fmean(s.makespan_s or 0.0 for s in summaries), 1),
            "utilization": round(fmean(s.avg_utilization or 0.0 for s in summaries), 4),
            "preemptions": round(fmean(s.preemptions for s in summaries), 1),
            "unfinished": sum(s.unfinished for s in summaries),
            "mean_jct_s_per_workload": [round(s.mean_jct_s or 0.0, 1) for s in summaries],
            "wall_seconds": round(time.perf_counter() - start, 2),
        })
    baseline = next((r["mean_jct_s"] for r in rows if r["profile"] == "fifo"), None)
    for row in rows:
        jct = float(row["mean_jct_s"])  # type: ignore[arg-type]
        row["vs_fifo"] = None if not baseline else round(jct / float(baseline), 3)  # type: ignore[arg-type]
        row["published_mean_jct_s"] = PUBLISHED
        row["vs_published"] = {k: round(jct / v, 3) for k, v in PUBLISHED.items()}
        row["python"] = sys.version.split()[0]
        print(json.dumps(row), flush=True)
    return 0


def _numbers(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
