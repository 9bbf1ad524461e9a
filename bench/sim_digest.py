"""Benchmark check: a fingerprint of a trace replay's decisions, to compare two versions.

Replays the first N jobs of the Philly trace (`../shared/traces/philly/philly.csv`, else the
sample shipped in `examples/`) on a cluster (80 × 8 GPUs by default, where jobs queue) under
each profile and prints one JSON object per profile: `records_sha256`, a SHA-256 over every
job's `JobRecord` (all its fields, jobs sorted by name), `samples_sha256` over the cluster's
time series, the event count, and the process CPU seconds the replay took. A change meant to
be a pure speed-up keeps every digest: run it on the old and the new code and compare.

    uv run python bench/sim_digest.py [--jobs 5000] [--cluster 80x8] [--profiles las,fifo]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path

from shoal.cli.profiles import load_profile
from shoal.sim.inputs import load_trace, with_trace_queues
from shoal.sim.loaders import parse_cluster_arg
from shoal.sim.result import SimResult
from shoal.sim.simulator import SimConfig, simulate

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "philly" / "philly.csv"
SAMPLE_TRACE = ROOT / "examples" / "traces" / "philly-sample.csv"


def records_digest(result: SimResult) -> str:
    """SHA-256 over every job record, all fields in declaration order, jobs by name (floats
    by `repr`, which round-trips exactly)."""
    digest = hashlib.sha256()
    for record in sorted(result.jobs, key=lambda r: r.name):
        digest.update(repr(dataclasses.astuple(record)).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def samples_digest(result: SimResult) -> str:
    digest = hashlib.sha256()
    for sample in result.samples:
        digest.update(repr(dataclasses.astuple(sample)).encode())
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path,
                        default=DEFAULT_TRACE if DEFAULT_TRACE.exists() else SAMPLE_TRACE)
    parser.add_argument("--cluster", default="80x8", help="NODESxGPUS (default 80x8)")
    parser.add_argument("--jobs", type=int, default=5000, help="the trace's first N jobs")
    parser.add_argument("--profiles", default="las", help="comma-separated (default las)")
    args = parser.parse_args(argv)
    declared = parse_cluster_arg(args.cluster)
    trace = load_trace(args.trace, gpus_per_node=declared.gpus_per_node or 8,
                       limit=args.jobs or None)
    cluster = with_trace_queues(declared, trace)
    for name in (p.strip() for p in args.profiles.split(",") if p.strip()):
        profile = load_profile(name)
        cpu_start = time.process_time()
        result = simulate(trace, cluster, profile, SimConfig())
        cpu = time.process_time() - cpu_start
        print(json.dumps({
            "benchmark": "sim_digest", "profile": profile.name, "cluster": args.cluster,
            "jobs": len(trace.jobs), "events": result.events,
            "records_sha256": records_digest(result)[:32],
            "samples_sha256": samples_digest(result)[:32],
            "cpu_seconds": round(cpu, 3), "python": sys.version.split()[0],
        }), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
