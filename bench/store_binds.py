"""Benchmark: one cycle's binds in the store (`Repository.record_binds`), as one batch of
Core statements against the unit of work that moves tasks one by one
(`Repository._record_binds_one_by_one`, what evictions and partial admissions still use).

A burst's cycle binds one task of each of many jobs; here `--jobs` one-task jobs are
submitted, then bound in one call, alternating the two paths in each of `--rounds` rounds
on the same SQLite store (a temporary file, the server's default backend). Prints one JSON
object: per path the median `cpu_ms` (process CPU seconds of the call) beside `wall_ms`,
and `batch_vs_one_by_one_cpu`, the same-run ratio.

    uv run python bench/store_binds.py [--jobs 500] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from shoal.api import Bind, Job, Resources, SchedulerName, TaskGroup, TaskRef
from shoal.store import Repository
from shoal.store.engine import open_store
from shoal.store.repository import TaskRecord

Record = Callable[[list[Bind], str], dict[TaskRef, TaskRecord]]


def _job(name: str) -> Job:
    return Job(name=name, groups=(TaskGroup("main", 1, Resources.of(cpu=1),
                                            command=("true",)),),
               scheduler_name=SchedulerName.DEFAULT, user="alice")


def run(jobs: int, rounds: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as scratch:
        store = open_store(f"sqlite:///{Path(scratch) / 'shoal.db'}")
        store.migrate()
        repo = Repository(store)
        paths: dict[str, Record] = {"batch": repo.record_binds,
                                    "one_by_one": repo._record_binds_one_by_one}
        timed: dict[str, list[tuple[float, float]]] = {how: [] for how in paths}
        for r in range(rounds):
            for how, record in paths.items():
                names = [f"{how}-{r}-{i}" for i in range(jobs)]
                for name in names:
                    repo.submit_job(_job(name))
                binds = [Bind(TaskRef(name, "main", 0), "n1", (), Resources.of(cpu=1))
                         for name in names]
                cpu, wall = time.process_time(), time.perf_counter()
                record(binds, "placed")
                timed[how].append((time.process_time() - cpu, time.perf_counter() - wall))
        store.close()
    out: dict[str, object] = {"jobs": jobs, "rounds": rounds}
    cpu_ms: dict[str, float] = {}
    for how, samples in timed.items():
        cpu_ms[how] = 1000 * statistics.median(c for c, _ in samples)
        out[how] = {"cpu_ms": round(cpu_ms[how], 2),
                    "wall_ms": round(1000 * statistics.median(w for _, w in samples), 2)}
    out["batch_vs_one_by_one_cpu"] = round(cpu_ms["batch"] / cpu_ms["one_by_one"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(json.dumps(run(args.jobs, args.rounds)))


if __name__ == "__main__":
    main()
