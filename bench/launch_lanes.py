"""Benchmark: what the server's launch lanes spend per task (issue 18, burst).

Launches N one-CPU `/bin/true` tasks through a `LocalExecutor` as `shoal up` makes it (as
root: one OS user per Shoal user, working directories under a work root, cgroups where the
machine has them; otherwise as its own user), in chunks of 32 (`inflight.CHUNK`), one
`launch_many` call each, from one thread, and counts that thread's CPU time — the Python a
launch lane runs while it holds the server's GIL — and the launcher process's. Waits for
every task's `status.json`. Prints one JSON object: `lane_cpu_ms_per_task`,
`launcher_cpu_ms_per_task`, `wall_s` (medians over the rounds).

    PYTHONPATH=. .venv/bin/python bench/launch_lanes.py [--tasks 500] [--rounds 3]

Run it with another checkout's `PYTHONPATH` and interpreter for the code before a change.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from shoal.executors import cgroups
from shoal.executors.cgroups import TaskLimits
from shoal.executors.isolation import check_work_root, decide
from shoal.executors.local import Isolation, LocalExecutor
from shoal.executors.task import TaskLaunch

CHUNK = 32
ROUND_TIMEOUT = 600.0


def _isolation(root: Path) -> Isolation:
    policy = decide(os.geteuid(), insecure_same_user=os.geteuid() != 0, task_user=None)
    work = check_work_root(root / "work") if policy.switches_user else None
    tag = hashlib.sha256(str(root).encode()).hexdigest()[:12]
    found = cgroups.detect(tag)
    return Isolation(policy, work, None if isinstance(found, cgroups.Unavailable) else found)


def _round(tasks: int, root: Path, isolation: Isolation) -> dict[str, float]:
    executor = LocalExecutor(root / "data", isolation=isolation,
                             base_env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    try:
        warm = executor.launch(_spec("warm", 0))
        while not warm.status_path.exists():
            time.sleep(0.01)
        assert executor.launcher is not None and executor.launcher.pid is not None
        launcher = psutil.Process(executor.launcher.pid)
        specs = [_spec(f"job-{i}", i) for i in range(tasks)]
        before = launcher.cpu_times()
        started = time.perf_counter()
        lane = time.thread_time()
        handles = []
        for first in range(0, tasks, CHUNK):
            handles += executor.launch_many(specs[first:first + CHUNK])
        lane = time.thread_time() - lane
        after = launcher.cpu_times()
        deadline = time.monotonic() + ROUND_TIMEOUT
        for handle in handles:
            assert not isinstance(handle, BaseException), handle
            while not handle.status_path.exists():
                if time.monotonic() > deadline:
                    raise SystemExit("the tasks did not all end in time")
                time.sleep(0.005)
        wall = time.perf_counter() - started
        for handle in handles:
            executor.poll(handle)  # releases what is left of its cgroups
        return {"lane_cpu_ms_per_task": lane * 1000 / tasks,
                "launcher_cpu_ms_per_task":
                    (after.user + after.system - before.user - before.system) * 1000 / tasks,
                "wall_s": wall}
    finally:
        executor.close()


def _spec(job: str, i: int) -> TaskLaunch:
    return TaskLaunch(job, "main", 0, 1, 0, "127.0.0.1", 29500, (), ("/bin/true",),
                      env={"X": str(i)}, attempt=1, shoal_env={"SHOAL_TOKEN": "t" * 40},
                      user="bench", limits=TaskLimits(1000, 256), node="local")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="shoal-bench-lanes-") as tmp:
        os.chmod(tmp, 0o755)
        isolation = _isolation(Path(tmp))
        for r in range(args.rounds):
            runs.append(_round(args.tasks, Path(tmp) / f"r{r}", isolation))
        if isolation.cgroups is not None:
            isolation.cgroups.release()
    result: dict[str, object] = {"benchmark": "launch_lanes", "tasks": args.tasks,
                                 "rounds": args.rounds,
                                 "isolation": isolation.policy.mode.value,
                                 "cgroups": isolation.cgroups is not None}
    for key in runs[0]:
        result[key] = round(statistics.median(r[key] for r in runs), 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
