"""Benchmark: how fair each profile is on real traces (issue 17, "How it is checked").

Replays each trace under each profile and prints ONE JSON object per (trace, profile) with
its JCT, the stretch-based fairness figures of `shoal.sim.fairness` (Jain's index over the
virtual clusters' and the users' stretches, the worst virtual cluster's mean queueing delay,
the largest finish-time fairness ρ and the fraction of jobs with ρ > 1), preemptions, and
the CPU seconds and wall time of the run. Each object also compares its mean JCT with the
best *other* profile's on the same trace (`mean_jct_vs_best_other`, < 1 is better) and says
whether it meets the issue's goal (`meets_goal`: Jain over VC stretch ≥ 0.9 with mean JCT
within 10 % of the best other profile; null on a trace with one virtual cluster).

Traces (`--traces`, comma-separated):

- `philly`: the first `--jobs` jobs of `../shared/traces/philly/philly.csv` (`--philly-trace`)
  with its 15 virtual clusters (min 0, declared from the trace) on 80 × 8 GPUs
  (`examples/traces/cluster-philly-small.yaml`);
- `philly-vc`: the same with the per-VC minimums of `examples/traces/cluster-philly-vc.yaml`;
- `itp`: Microsoft ITP `cluster01.csv` (`--itp-trace`) on 8 × 8 GPUs (`--itp-cluster`; its
  largest gang is 64 GPUs). ITP has one queue and no users: its per-VC index is 1.0 by
  construction and its per-user index null; its JCT and ρ figures still compare profiles.

Neither Philly nor ITP records users, so `jain_user_stretch` is null on them (`users` 0).
`--quick` replays the small samples in `examples/traces/` (200 Philly jobs on 4 × 8 GPUs,
100 ITP jobs on 8 × 8) for a CI smoke test. A profile name that is not built into this build
is skipped with a notice on stderr. `--workers K` runs the (trace, profile) pairs in K
processes; `cpu_s` is then still the CPU time of that one run (its process's
`time.process_time` around it).

    uv run python bench/fairness.py [--traces philly,itp] [--profiles default,las,fairshare]
                                    [--jobs 20000] [--workers 1] [--checkpoint S] [--quick]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
import traceback
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from shoal.scheduler.profile import BUILTIN_PROFILES, Profile
from shoal.sim.fairness import by_queue, by_user, group_stretch, worst_mean
from shoal.sim.inputs import load_trace, with_trace_queues
from shoal.sim.loaders import ClusterDescription, parse_cluster_arg
from shoal.sim.metrics import summarize
from shoal.sim.result import JobRecord, SimResult
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace
from shoal.sim.work import WorkModel

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "traces"
EXAMPLES = ROOT / "examples" / "traces"

#: The issue's goal: Jain's index over VC stretch at least this ...
GOAL_JAIN = 0.9
#: ... with a mean JCT at most this times the best other profile's.
GOAL_JCT_RATIO = 1.1


@dataclass(frozen=True)
class TraceSetup:
    """One trace to replay: the file, the cluster and how many jobs."""

    name: str
    path: Path
    cluster: str
    """A cluster file or the `NODESxGPUS` shorthand."""
    limit: int | None


def setups(names: list[str], *, jobs: int, quick: bool, philly: Path, itp_trace: Path,
           itp_cluster: str) -> list[TraceSetup]:
    small = str(EXAMPLES / "cluster-philly-small.yaml")
    by_name = {
        "philly": TraceSetup("philly", philly, small, jobs),
        "philly-vc": TraceSetup("philly-vc", philly, str(EXAMPLES / "cluster-philly-vc.yaml"),
                                jobs),
        "itp": TraceSetup("itp", itp_trace, itp_cluster, jobs),
    }
    if quick:
        by_name = {
            "philly": TraceSetup("philly", EXAMPLES / "philly-sample.csv", "4x8", None),
            "philly-vc": TraceSetup("philly-vc", EXAMPLES / "philly-sample.csv", "4x8", None),
            "itp": TraceSetup("itp", EXAMPLES / "itp-cluster01-sample.csv", "8x8", None),
        }
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown trace(s) {', '.join(unknown)}; known: "
                         f"{', '.join(by_name)}")
    chosen = [by_name[n] for n in names]
    missing = sorted({str(s.path) for s in chosen if not s.path.is_file()})
    if missing:
        raise SystemExit(f"no trace file {', '.join(missing)} (--philly-trace, --itp-trace; "
                         "--quick uses the samples in examples/traces)")
    return chosen


@cache
def _inputs(setup: TraceSetup) -> tuple[Trace, ClusterDescription]:
    """The trace and cluster of a setup, loaded once per process."""
    declared = parse_cluster_arg(setup.cluster)
    trace = load_trace(setup.path, gpus_per_node=declared.gpus_per_node or 8,
                       limit=setup.limit)
    return trace, with_trace_queues(declared, trace)


def _has_total_wait() -> bool:
    """Whether this build's job records carry a total wait (preempted jobs' waits too)."""
    # a field (a slot descriptor on the class) or a property: either way an attribute
    return hasattr(JobRecord, "total_wait")


def run_one(setup: TraceSetup, profile_name: str,
            checkpoint: float | None) -> dict[str, Any]:
    """Replay one (trace, profile) and measure it; errors come back as {"error": ...}."""
    try:
        trace, cluster = _inputs(setup)
        profile = Profile.load(profile_name)
        config = SimConfig(work=WorkModel(checkpoint_interval=checkpoint))
        cpu0, wall0 = time.process_time(), time.perf_counter()
        result = simulate(trace, cluster, profile, config)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        return measure(setup.name, result, cpu_s=cpu, wall_s=wall)
    except Exception as exc:  # reported beside the other runs, not lost in a worker
        return {"trace": setup.name, "profile": profile_name,
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=5)}


def measure(trace: str, result: SimResult, *, cpu_s: float, wall_s: float) -> dict[str, Any]:
    """The benchmark's JSON object for one run (without the cross-profile comparison)."""
    s = summarize(result, points=1)
    jobs = result.jobs
    vcs = [q for q, js in by_queue(jobs).items() if group_stretch(js) is not None]
    users = [u for u, js in by_user(jobs).items() if group_stretch(js) is not None]
    out: dict[str, Any] = {
        "benchmark": "fairness",
        "trace": trace,
        "profile": result.profile,
        "cluster_gpus": result.cluster_gpus,
        "jobs": s.jobs,
        "finished": s.finished,
        "virtual_clusters": len(vcs),
        "users": len(users),
        "mean_jct_s": _r(s.mean_jct_s),
        "p95_jct_s": _r(s.p95_jct_s),
        "jain_vc_stretch": _r(s.jain_vc_stretch, 4),
        "jain_user_stretch": _r(s.jain_user_stretch, 4),
        "worst_vc_mean_queueing_delay_s": _r(s.worst_vc_mean_queueing_delay_s),
    }
    if _has_total_wait():
        out["worst_vc_mean_total_wait_s"] = _r(worst_mean(
            by_queue(jobs), lambda j: getattr(j, "total_wait", None)))
    out.update({
        "max_rho": _r(s.max_rho, 4),
        "frac_rho_gt_1": _r(s.frac_rho_gt_1, 4),
        "preemptions": s.preemptions,
        "lost_gpu_hours": _r(s.lost_gpu_hours),
        "cpu_s": round(cpu_s, 3),
        "wall_s": round(wall_s, 3),
        "events": result.events,
    })
    return out


def compare(rows: list[dict[str, Any]]) -> None:
    """Add to each row its mean JCT over the best other profile's on the same trace, and
    whether it meets the issue's goal."""
    for row in rows:
        others = [r for r in rows if r["trace"] == row["trace"] and r is not row
                  and r.get("mean_jct_s") is not None]
        if "error" in row:
            continue
        best = min(others, key=lambda r: r["mean_jct_s"], default=None)
        ratio = None
        if best is not None and row["mean_jct_s"] is not None and best["mean_jct_s"] > 0:
            ratio = round(row["mean_jct_s"] / best["mean_jct_s"], 4)
        row["best_other_profile"] = None if best is None else best["profile"]
        row["mean_jct_vs_best_other"] = ratio
        jain = row["jain_vc_stretch"]
        # With one virtual cluster the index is 1 by construction: the goal says nothing.
        row["meets_goal"] = None if row["virtual_clusters"] < 2 else (
            jain is not None and jain >= GOAL_JAIN
            and (ratio is None or ratio <= GOAL_JCT_RATIO))


def _r(x: float | None, digits: int = 1) -> float | None:
    return None if x is None else round(x, digits)


def _run_star(args: tuple[TraceSetup, str, float | None]) -> dict[str, Any]:
    return run_one(*args)


def _done(row: dict[str, Any]) -> dict[str, Any]:
    """Say on stderr that a run is done, with its figures: the JSON lines on stdout wait for
    every profile of a trace (their ratios), and a run stopped before then keeps these."""
    print(f"done: {json.dumps(row)}", file=sys.stderr, flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", default="philly,itp",
                        help="comma-separated: philly, philly-vc, itp")
    parser.add_argument("--profiles", default="default,las,fairshare")
    parser.add_argument("--jobs", type=int, default=20_000,
                        help="the first N jobs of each trace (by submission time)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--checkpoint", type=float, default=None,
                        help="checkpoint interval (s) of every job; default: none, an "
                             "evicted job loses all its work")
    parser.add_argument("--philly-trace", type=Path,
                        default=SHARED / "philly" / "philly.csv")
    parser.add_argument("--itp-trace", type=Path, default=SHARED / "itp" / "cluster01.csv")
    parser.add_argument("--itp-cluster", default="8x8")
    parser.add_argument("--quick", action="store_true",
                        help="the small samples of examples/traces (CI smoke test)")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.workers < 1:
        parser.error("--jobs and --workers must be at least 1")

    chosen = setups([t.strip() for t in args.traces.split(",") if t.strip()],
                    jobs=args.jobs, quick=args.quick, philly=args.philly_trace,
                    itp_trace=args.itp_trace,
                    itp_cluster=args.itp_cluster)
    profiles = []
    for name in (p.strip() for p in args.profiles.split(",") if p.strip()):
        if name in BUILTIN_PROFILES:
            profiles.append(name)
        else:
            print(f"skip: {name!r} is not a built-in profile in this build (built-in: "
                  f"{', '.join(sorted(BUILTIN_PROFILES))})", file=sys.stderr, flush=True)
    tasks = [(setup, p, args.checkpoint) for setup in chosen for p in profiles]
    rows: list[dict[str, Any]] = []
    if args.workers == 1 or len(tasks) <= 1:
        for task in tasks:
            rows.append(_done(_run_star(task)))
    else:
        # fork would share the parent's loaded modules cheaply, but spawn is safe everywhere
        # and the trace is loaded once per worker anyway (`_inputs`).
        with multiprocessing.get_context("spawn").Pool(min(args.workers, len(tasks))) as pool:
            rows.extend(_done(row) for row in pool.imap_unordered(_run_star, tasks,
                                                                  chunksize=1))
        order = {(setup.name, p): i for i, (setup, p, _) in enumerate(tasks)}
        rows.sort(key=lambda row: order[(row["trace"], row["profile"])])
    compare(rows)
    for row in rows:
        print(json.dumps(row), flush=True)
    return 1 if any("error" in row for row in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
