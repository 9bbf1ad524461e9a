"""Benchmark: one scheduling cycle on a large synthetic cluster.

Builds `--nodes` nodes × 8 GPUs and `--jobs` pending gang jobs of 1–64 GPUs (powers of two;
jobs above 8 GPUs are gangs of 8-GPU tasks) spread over four team virtual clusters with
guaranteed minimums and the default one, then times `run_cycle` on it.

Prints one JSON object. Because these machines are shared and noisy, the same process also
times a fixed pure-Python calibration loop and a cycle at a tenth of the size; the ratios
(`cycle_vs_calibration`, `scaling_ratio`) are what to compare across runs and machines.

`--case backlog` (issue 18) keeps one scheduler model between cycles, as the control loop
and the simulator do: 10,000 nodes × 8 GPUs, half of them (the `H100` ones) fully running,
and 100,000 waiting jobs that all ask for `H100` nodes, so none fits. It reports the process
CPU seconds of a cycle when nothing changed since the last one, and of the cycle after one
node frees (its job finishes; one waiting job then starts), each for the decisions a driver
applies (`decide`: what the simulator reads), with every waiting job's reason written out
(`close`: what `shoal schedule` reads), and for the control loop's table of every waiting
job's reason: every reason put in it (`replace`, what the loop did before) or only those that
changed (`report`: `Session.report` and `WaitingReasons.apply`, what it does now; the
same-run ratio `*_replace_vs_report`; `report_*_jobs_visited`: how many jobs the last
such report looked at). Goals: < 10 ms and < 50 ms. Under `fifo` a freed node lets the
line's head start: every job behind it then waits behind a new head, which the report gives
the table as one new reason for the line (`ReasonLedger.line`), not one per job. Under
`fifo-backfill` EASY backfill walks the line by job class and leaves it unwritten
(`shoal.scheduler.actions.easy_walk`): none of these jobs ends before the shadow time (none
has an estimate), so no class is tried, and the report reads the line as under `fifo`.

    uv run python bench/cycle.py [--nodes 1000] [--jobs 10000] [--seed 1] [--repeat 3]
    uv run python bench/cycle.py --case backlog [--profile default] [--nodes 10000]
                                 [--jobs 100000]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup, VirtualCluster
from shoal.api.lifecycle import TaskState
from shoal.api.objects import Task
from shoal.cli.profiles import load_profile
from shoal.control.waiting import WaitingReasons
from shoal.core import Snapshot
from shoal.scheduler import Profile, run_cycle
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session

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


def backlog_model(nodes: int, jobs: int, seed: int) -> SchedulerModel:
    """Half the nodes (`H100`, even-numbered) each run one 8-GPU task; every waiting job asks
    for `H100` nodes (1–4 tasks of 1, 2, 4 or 8 GPUs), so none fits."""
    rng = random.Random(seed)
    per_node = Resources.of(cpu=96_000, memory=1_024_000, gpu=GPUS_PER_NODE)
    node_list = [Node(f"node-{i:05d}", per_node, {"gpu-type": "A100" if i % 2 else "H100"})
                 for i in range(nodes)]
    vcs = [VirtualCluster(t) for t in TEAMS]
    queues = (*TEAMS, "default")
    model = SchedulerModel(node_list, vcs)
    full = TaskGroup("worker", 1, Resources.of(cpu=8_000, memory=64_000, gpu=GPUS_PER_NODE))
    running = [Job(f"run-{i:05d}", (full,), queue=rng.choice(queues),
                   scheduler_name=SchedulerName.SHOAL, submitted=-1.0,
                   tasks=(Task(f"run-{i:05d}", "worker", 0, TaskState.RUNNING, node.name,
                               tuple(range(GPUS_PER_NODE)), 0.0),))
               for i, node in enumerate(node_list) if i % 2 == 0]
    waiting = []
    for j in range(jobs):
        gpus = 2 ** rng.randint(0, 3)
        group = TaskGroup("worker", rng.randint(1, 4),
                          Resources.of(cpu=1_000 * gpus, memory=8_000 * gpus, gpu=gpus),
                          node_selector={"gpu-type": "H100"})
        waiting.append(Job(f"job-{j:06d}", (group,), queue=rng.choice(queues),
                           scheduler_name=SchedulerName.SHOAL, submitted=float(j)))
    model.add_jobs([*running, *waiting])
    return model


def cpu_cycle(model: SchedulerModel, hooks: Hooks, profile: Profile, mode: str,
              reasons: WaitingReasons | None = None) -> tuple[float, int, int]:
    """One cycle over the kept model: (process CPU seconds, binds, jobs the report visited
    (0 but for `report`)). `mode`: `decide`, `close`, `replace` (what the control loop did
    before: `close`, and every reason put in its table, `reasons`) or `report` (what it does
    now: the reasons that changed, applied to that table)."""
    start = time.process_time()
    session = Session(model, hooks)
    for action in profile.actions():
        action.execute(session)
    visited = 0
    if mode == "report":
        assert reasons is not None
        changes = session.report(reasons.ledger)
        visited = changes.visited
        reasons.apply(changes, model.now)
    decisions = session.close() if mode in ("close", "replace") else session.decide()
    if mode == "replace":
        assert reasons is not None
        reasons.replace(decisions.pending_by_job(), model.now)
    return time.process_time() - start, len(decisions.binds), visited


def backlog(args: argparse.Namespace) -> dict[str, object]:
    profile = load_profile(args.profile)
    out: dict[str, object] = {"benchmark": "cycle", "case": "backlog",
                              "profile": profile.name, "nodes": args.nodes,
                              "running_nodes": (args.nodes + 1) // 2,
                              "waiting_jobs": args.jobs}
    for mode in ("decide", "close", "replace", "report"):
        model = backlog_model(args.nodes, args.jobs, args.seed)
        hooks = Hooks(profile.plugins())
        reasons = WaitingReasons()
        first, _, _ = cpu_cycle(model, hooks, profile, mode, reasons)
        quiet = []
        quiet_visits = []
        for _ in range(args.repeat):
            seconds, _, visited = cpu_cycle(model, hooks, profile, mode, reasons)
            quiet.append(seconds)
            quiet_visits.append(visited)
        freed = []
        freed_visits = []
        binds = 0
        for k in range(args.repeat):
            model.remove_job(f"run-{2 * k:05d}")  # the job on node 2k finishes
            seconds, placed, visited = cpu_cycle(model, hooks, profile, mode, reasons)
            freed.append(seconds)
            freed_visits.append(visited)
            binds += placed
        if mode in ("replace", "report"):
            assert len(reasons.all()) == len(model.waiting), "every waiting job has a reason"
        out[f"{mode}_first_cycle_cpu_seconds"] = round(first, 4)
        out[f"{mode}_unchanged_cycle_cpu_seconds"] = round(min(quiet), 5)
        out[f"{mode}_one_node_freed_cycle_cpu_seconds"] = round(min(freed), 5)
        out[f"{mode}_binds_after_frees"] = binds
        if mode == "report":
            # Jobs the last report of each kind looked at (of `waiting_jobs`).
            out["report_unchanged_jobs_visited"] = quiet_visits[-1]
            out["report_one_node_freed_jobs_visited"] = freed_visits[-1]
    for case in ("unchanged", "one_node_freed"):
        report_s = float(str(out[f"report_{case}_cycle_cpu_seconds"]))
        out[f"{case}_replace_vs_report"] = round(
            float(str(out[f"replace_{case}_cycle_cpu_seconds"])) / report_s, 1) \
            if report_s else None
    calibration_s = min(calibration() for _ in range(args.repeat))
    out["calibration_seconds"] = round(calibration_s, 4)
    out["unchanged_vs_calibration"] = round(
        float(str(out["decide_unchanged_cycle_cpu_seconds"])) / calibration_s, 4)
    out["python"] = sys.version.split()[0]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("random", "backlog"), default="random")
    parser.add_argument("--nodes", type=int, default=None,
                        help="default 1000 (backlog: 10000)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="default 10000 (backlog: 100000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", default="default")
    args = parser.parse_args(argv)
    if args.case == "backlog":
        args.nodes = args.nodes or 10_000
        args.jobs = args.jobs or 100_000
        print(json.dumps(backlog(args)))
        return 0
    args.nodes = args.nodes or 1000
    args.jobs = args.jobs or 10_000

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
