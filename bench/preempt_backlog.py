"""Benchmark: preemption under backlog (issue 18) — the preempt action's victim index and
preemptor classes against the plain search, in the same process.

Two cases, each run twice: as shipped, and as *plain* — the same actions with the
preemptor classes and the victim index turned off (`shoal.scheduler.preemptor_class`,
`shoal.scheduler.victim_index`), which is how the action searched before issue 18: every
waiting job against every running job, every cycle.

- `backlog` (default): `--nodes` nodes × 8 GPUs held by running gangs of one 8-GPU task
  per node — most of the `production` class, every `--low-every`-th of class `low` —
  and `--waiting` jobs of class `normal` in the same virtual cluster, of three shapes
  (gangs of 8-GPU tasks, one to two tasks more than there are `low` jobs): each may evict
  only the `low` jobs, which together free too little for any of them, so every one of
  them is matched against every `low` job and fails, every cycle.
  A model is kept between cycles, as the simulator and the control loop keep it, and
  `--cycles` cycles run over it under the `elastic` profile (preempt and reclaim) with
  nothing changing but the clock (a minute a cycle). Prints the process CPU seconds per
  cycle, first and steady (the median of the later ones), and the ratio plain / shipped.
- `philly`: the first `--jobs` jobs of the Philly trace (`--trace`: the shared one, else
  the repository's sample) on `--cluster` (80 × 8 GPUs, where
  jobs queue) replayed by the simulator under `--profiles` (las), each run in a child
  process with `--cpu-limit` CPU seconds (a run that passes it prints `finished: false`):
  CPU seconds, jobs per CPU second, mean JCT, preemptions and lost GPU-hours, and whether
  both runs gave every job the same starts, ends and evictions.

Prints one JSON object per case and profile. The machines are shared: CPU seconds, not wall
time, and the same-run ratio are the figures that count.

    uv run python bench/preempt_backlog.py [--case backlog] [--nodes 500] [--waiting 2000]
    uv run python bench/preempt_backlog.py --case philly [--jobs 5000] [--cpu-limit 600]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest.mock import patch

from shoal.api import (
    Job,
    JobState,
    Node,
    PriorityClass,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskState,
    VirtualCluster,
)
from shoal.core import Snapshot
from shoal.scheduler import Profile
from shoal.scheduler.actions.preempt import Preemption
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session

ROOT = Path(__file__).resolve().parents[1]
PHILLY = ROOT.parent / "shared" / "traces" / "philly" / "philly.csv"
SAMPLE = ROOT / "examples" / "traces" / "philly-sample.csv"
GPUS_PER_NODE = 8
CLASSES = (PriorityClass("low", 10), PriorityClass("normal", 100),
           PriorityClass("production", 1000))
PER_GPU = Resources.of(cpu=8_000, memory=64_000, gpu=1)


@contextmanager
def plain() -> Iterator[None]:
    """The preempt and reclaim actions without preemptor classes and victim index."""
    with patch.object(Preemption, "class_key", lambda self, job: None), \
            patch.object(Preemption, "victim_index", lambda self, job, policy: None):
        yield


def build(nodes: int, waiting: int, low_every: int) -> Snapshot:
    node_list = tuple(Node(f"node-{i:05d}", Resources.of(cpu=96_000, memory=1_024_000,
                                                          gpu=GPUS_PER_NODE))
                      for i in range(nodes))
    jobs: list[Job] = []
    for n, node in enumerate(node_list):
        name = f"run-{n:05d}"
        jobs.append(Job(name, (TaskGroup("w", 1, PER_GPU.scale(GPUS_PER_NODE)),),
                        queue="team", scheduler_name=SchedulerName.SHOAL,
                        priority_class="low" if n % low_every == 0 else "production",
                        submitted=-3600.0, state=JobState.RUNNING, tasks=(
                            Task(name, "w", 0, TaskState.RUNNING, node.name,
                                 tuple(range(GPUS_PER_NODE)), -3600.0),)))
    low = len(range(0, nodes, low_every))
    shapes = (low + 1, low + 2, 2 * low + 1)
    for w in range(waiting):
        tasks = shapes[w % len(shapes)]
        jobs.append(Job(f"wait-{w:05d}", (TaskGroup("w", tasks, PER_GPU.scale(GPUS_PER_NODE)),),
                        queue="team", scheduler_name=SchedulerName.SHOAL,
                        priority_class="normal", submitted=float(w)))
    return Snapshot(node_list, tuple(jobs), (VirtualCluster("team"),), CLASSES)


def run_cycles(snapshot: Snapshot, profile: Profile, cycles: int) -> tuple[list[float], int]:
    """CPU seconds of each cycle over one kept model, and the evictions decided."""
    model = SchedulerModel.from_snapshot(snapshot)
    hooks = Hooks(profile.plugins())
    actions = profile.actions()
    times: list[float] = []
    evictions = 0
    for n in range(cycles):
        model.now = snapshot.now + 60.0 * n
        start = time.process_time()
        session = Session(model, hooks)
        for action in actions:
            action.execute(session)
        decided = session.close()
        times.append(time.process_time() - start)
        evictions += len(decided.evictions)
    return times, evictions


def backlog(args: argparse.Namespace) -> None:
    snapshot = build(args.nodes, args.waiting, args.low_every)
    profile = Profile.load("elastic")
    shipped, evicted = run_cycles(snapshot, profile, args.cycles)
    with plain():
        before, evicted_before = run_cycles(snapshot, profile, args.cycles)
    steady, steady_before = statistics.median(shipped[1:]), statistics.median(before[1:])
    print(json.dumps({
        "benchmark": "preempt_backlog",
        "case": "backlog",
        "profile": profile.name,
        "nodes": args.nodes,
        "gpus": args.nodes * GPUS_PER_NODE,
        "running_jobs": args.nodes,
        "takeable_jobs": len(range(0, args.nodes, args.low_every)),
        "waiting_jobs": args.waiting,
        "cycles": args.cycles,
        "evictions": evicted,
        "evictions_plain": evicted_before,
        "first_cycle_cpu_seconds": round(shipped[0], 5),
        "steady_cycle_cpu_seconds": round(steady, 5),
        "plain_first_cycle_cpu_seconds": round(before[0], 5),
        "plain_steady_cycle_cpu_seconds": round(steady_before, 5),
        "first_cycle_plain_vs_shipped": round(before[0] / shipped[0], 2),
        "steady_cycle_plain_vs_shipped": round(steady_before / steady, 2) if steady else None,
        "python": sys.version.split()[0],
    }), flush=True)


def one_replay(path: Path, jobs: int, cluster: str, profile_name: str, baseline: bool
               ) -> dict[str, object]:
    """One replay, in this process (the child of `philly`)."""
    from shoal.cli.profiles import load_profile
    from shoal.sim.inputs import load_trace, with_trace_queues
    from shoal.sim.loaders import parse_cluster_arg
    from shoal.sim.metrics import summarize
    from shoal.sim.simulator import SimConfig, simulate

    declared = parse_cluster_arg(cluster)
    trace = load_trace(path, gpus_per_node=declared.gpus_per_node or 8, limit=jobs)
    where = with_trace_queues(declared, trace)
    profile = load_profile(profile_name)
    start, wall = time.process_time(), time.perf_counter()
    if baseline:
        with plain():
            result = simulate(trace, where, profile, SimConfig())
    else:
        result = simulate(trace, where, profile, SimConfig())
    cpu, wall = time.process_time() - start, time.perf_counter() - wall
    summary = summarize(result, points=1)
    lives = sorted((j.name, j.first_start, j.end, j.preemptions, j.gpu_seconds_lost)
                   for j in result.jobs)
    return {"jobs": len(trace.jobs), "cpu_seconds": round(cpu, 2),
            "wall_seconds": round(wall, 2), "mean_jct_s": summary.mean_jct_s,
            "preemptions": summary.preemptions,
            "lost_gpu_hours": round(summary.lost_gpu_hours, 3),
            "lives": hashlib.sha256(repr(lives).encode()).hexdigest()[:16]}


def child(path: Path, jobs: int, cluster: str, profile: str, baseline: bool, cpu_limit: int
          ) -> dict[str, object] | None:
    """A replay in a child process held to `cpu_limit` CPU seconds; None if it passed it."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit))

    command = [sys.executable, __file__, "--one", str(path), str(jobs), cluster, profile,
               "plain" if baseline else "shipped"]
    done = subprocess.run(command, capture_output=True, text=True, preexec_fn=limit,
                          check=False)
    if done.returncode != 0:
        return None
    out: dict[str, object] = json.loads(done.stdout)
    return out


def philly(args: argparse.Namespace) -> None:
    for name in (p.strip() for p in args.profiles.split(",") if p.strip()):
        shipped = child(args.trace, args.jobs, args.cluster, name, False, args.cpu_limit)
        before = child(args.trace, args.jobs, args.cluster, name, True, args.cpu_limit)
        row: dict[str, object] = {
            "benchmark": "preempt_backlog", "case": "philly", "profile": name,
            "trace": args.trace.name, "cluster": args.cluster, "jobs": args.jobs,
            "cpu_limit_seconds": args.cpu_limit,
            "shipped": shipped or {"finished": False},
            "plain": before or {"finished": False}}
        if shipped and before:
            cpu, cpu_before = float(str(shipped["cpu_seconds"])), \
                float(str(before["cpu_seconds"]))
            row["jobs_per_cpu_second"] = round(args.jobs / cpu, 1) if cpu else None
            row["plain_vs_shipped_cpu"] = round(cpu_before / cpu, 2) if cpu else None
            row["identical"] = shipped["lives"] == before["lives"]
        print(json.dumps(row), flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--one"]:
        path, jobs, cluster, profile, mode = argv[1:6]
        print(json.dumps(one_replay(Path(path), int(jobs), cluster, profile,
                                    mode == "plain")))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("backlog", "philly"), default="backlog")
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--waiting", type=int, default=2000)
    parser.add_argument("--low-every", type=int, default=10)
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--trace", type=Path, default=PHILLY if PHILLY.exists() else SAMPLE)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--cluster", default="80x8")
    parser.add_argument("--profiles", default="las")
    parser.add_argument("--cpu-limit", type=int, default=600)
    args = parser.parse_args(argv)
    if args.cycles < 2:
        parser.error("--cycles: at least 2 (the first, then steady ones)")
    if args.case == "backlog":
        backlog(args)
    else:
        philly(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
