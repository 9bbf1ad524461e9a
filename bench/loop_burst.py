"""Benchmark: the control loop's own CPU in a burst (issue 18), in process, without the API.

`bench/api.py --burst` measures the whole `shoal up` process; there the control loop's
thread (`shoal-control`) shares one GIL with the API's and the launch lanes', and on a busy
machine its share is hard to read. Here the same burst — N one-CPU `/bin/true` jobs, all of
which fit, as the API stores them (`ControlPlane.submit_batch`, a few jobs per
transaction, at `--rate` jobs per second) — runs against a `ControlPlane` over a SQLite
store and the local executor, as `shoal up` builds them (job tokens issued: a server URL is
set), until every job has succeeded. What each thread spent is read from its own CPU clock
(`pthread_getcpuclockid`): the loop's, the launch lanes' (`shoal-launch_*`), and the
submitting thread's (the API's store writes, for scale).

Prints one JSON object: `loop_cpu_ms_per_job` (the median of `--rounds`), the lanes' and
the submitter's, `wall_s`, `cycles`. Run from a checkout (`PYTHONPATH=.`); to compare two
checkouts in one window run it from each, alternating.

    PYTHONPATH=. .venv/bin/python bench/loop_burst.py [--jobs 1000] [--rate 150] [--rounds 3]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from shoal.api import Job, JobState, Node, Resources, SchedulerName, TaskGroup
from shoal.control.loop import ControlPlane
from shoal.executors.local import LocalExecutor
from shoal.scheduler.profile import Profile
from shoal.store import Repository
from shoal.store.engine import open_store

#: Jobs per stored batch: about what the API's submission batching gathers under a burst.
BATCH = 8
DEADLINE = 600.0


def _job(name: str) -> Job:
    return Job(name=name, groups=(TaskGroup("main", 1, Resources.of(cpu=1000, memory=16 << 20),
                                            command=("/bin/true",)),),
               scheduler_name=SchedulerName.DEFAULT, user="alice")


def _cpu(thread: threading.Thread) -> float:
    assert thread.ident is not None
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def _threads(prefix: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(prefix)]


def one_round(jobs: int, rate: float, profile: str | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        store = open_store(f"sqlite:///{root / 'shoal.db'}")
        store.migrate()
        repo = Repository(store)
        repo.create_user("alice")
        node = Node("local", Resources.of(cpu=1000 * jobs, memory=(64 << 20) * jobs))
        repo.put_node(node)
        executor = LocalExecutor(root / "executor", grace_period=1.0, node_names=["local"])
        plane = ControlPlane(repo, executor, [node], Profile.default(), interval=5.0,
                             grace_period=1.0, server_url="http://127.0.0.1:9")
        plane.start()
        stop = threading.Event()
        profiler = cProfile.Profile(time.thread_time) if profile else None
        run = plane.run_forever if profiler is None else functools.partial(
            profiler.runcall, plane.run_forever)
        loop = threading.Thread(target=run, args=(stop,), name="shoal-control", daemon=True)
        loop.start()
        names = [f"burst-{i}" for i in range(jobs)]
        submitter = time.thread_time()
        began = time.monotonic()
        for first in range(0, jobs, BATCH):
            due = began + first / rate
            if (wait := due - time.monotonic()) > 0:
                time.sleep(wait)
            plane.submit_batch([(_job(name), None) for name in names[first:first + BATCH]])
            plane.wake_up()
        submitter = time.thread_time() - submitter
        while time.monotonic() - began < DEADLINE:
            lanes = _threads("shoal-launch")
            loop_cpu, lane_cpu = _cpu(loop), sum(_cpu(t) for t in lanes)
            # The loop forgets each job that ends; the store has the last word.
            if plane._commands.empty() and not plane.model.jobs \
                    and len(repo.list_jobs(state=JobState.SUCCEEDED, limit=jobs)) >= jobs:
                break
            time.sleep(0.25)
        else:
            raise SystemExit("the burst did not finish")
        wall = time.monotonic() - began
        cycles = plane.cycles
        stop.set()
        loop.join(timeout=30)
        store.close()
        if profiler is not None and profile:
            profiler.dump_stats(profile)
    return {"loop_cpu_ms_per_job": 1000 * loop_cpu / jobs,
            "lanes_cpu_ms_per_job": 1000 * lane_cpu / jobs,
            "submitter_cpu_ms_per_job": 1000 * submitter / jobs,
            "wall_s": wall, "cycles": cycles}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=150.0,
                        help="submissions per second")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", help="write the loop thread's cProfile stats here "
                        "(its CPU figures then include the profiler's cost)")
    args = parser.parse_args()
    runs = [one_round(args.jobs, args.rate, args.profile) for _ in range(args.rounds)]
    out: dict[str, object] = {"case": "loop_burst", "jobs": args.jobs, "rate": args.rate,
                              "rounds": args.rounds}
    for key in runs[0]:
        out[key] = round(statistics.median(r[key] for r in runs), 3)
    out["loop_cpu_ms_per_job_all"] = [round(r["loop_cpu_ms_per_job"], 3) for r in runs]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
