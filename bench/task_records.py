"""Benchmark: the store's side of a burst's task lifecycle, as the control loop writes it —
one cycle's binds (`Repository.record_binds`), the starts of the launch worker's chunks
(`Repository.record_starts`, CHUNK tasks each) and the successes seen by the polls
(`Repository.record_exits`, CHUNK tasks each, every job ending in its batch).

`--jobs` one-task jobs are submitted into a migrated SQLite store (a temporary file, the
server's default backend), then bound, started and ended; each of `--rounds` rounds on a
fresh store. Prints one JSON object: per stage the median CPU milliseconds per task (the
process's CPU time: the writes run on this thread) and `cpu_ms_per_task` over all three.
Compare two checkouts in the same window, alternating runs:

    uv run python bench/task_records.py [--jobs 1000] [--rounds 5]
    cd OTHER && PYTHONPATH=OTHER python /path/to/bench/task_records.py --jobs 1000
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from shoal.api import Bind, Job, JobState, Resources, SchedulerName, TaskGroup, TaskRef
from shoal.store import Repository
from shoal.store.engine import open_store
from shoal.store.task_batches import JobEnd, TaskExit, TaskStart

#: Tasks per starts batch and per exits batch: the launch worker's chunk
#: (`shoal.control.inflight.CHUNK`), about what one poll sees end in a burst.
CHUNK = 32
STAGES = ("binds", "starts", "exits")


def _job(name: str) -> Job:
    return Job(name=name, groups=(TaskGroup("main", 1, Resources.of(cpu=1, memory=16),
                                            command=("/bin/true",)),),
               scheduler_name=SchedulerName.DEFAULT, user="alice")


def _succeeded(job: Job) -> JobEnd | None:
    return JobEnd(JobState.SUCCEEDED, "every task succeeded")


def one_round(jobs: int) -> dict[str, float]:
    """CPU seconds per stage over `jobs` one-task jobs, on a fresh store."""
    with tempfile.TemporaryDirectory() as scratch:
        store = open_store(f"sqlite:///{Path(scratch) / 'shoal.db'}")
        store.migrate()
        repo = Repository(store)
        refs = [TaskRef(f"burst-{i:05d}", "main", 0) for i in range(jobs)]
        for ref in refs:
            repo.submit_job(_job(ref.job))
        spent: dict[str, float] = {}
        started = time.process_time()
        repo.record_binds([Bind(ref, "local", (), Resources.of(cpu=1, memory=16))
                           for ref in refs], "placed by scheduling cycle 1")
        spent["binds"] = time.process_time() - started
        started = time.process_time()
        for first in range(0, jobs, CHUNK):
            refused = repo.record_starts([
                TaskStart(ref, 1, 10_000 + i, 1.0, f"process {10_000 + i} started on node "
                                                   "local")
                for i, ref in enumerate(refs[first:first + CHUNK], start=first)])
            if refused:
                raise SystemExit(f"starts refused: {refused[:3]}")
        spent["starts"] = time.process_time() - started
        started = time.process_time()
        ended = 0
        for first in range(0, jobs, CHUNK):
            recorded = repo.record_exits([TaskExit(ref, "process exited with code 0", 0, 2.0)
                                          for ref in refs[first:first + CHUNK]], _succeeded)
            ended += len(recorded.ended)
        spent["exits"] = time.process_time() - started
        if ended != jobs:
            raise SystemExit(f"{ended} of {jobs} jobs ended")
        store.close()
    return spent


def run(jobs: int, rounds: int) -> dict[str, object]:
    samples = [one_round(jobs) for _ in range(rounds)]
    per_task = {stage: round(1000 * statistics.median(s[stage] for s in samples) / jobs, 4)
                for stage in STAGES}
    return {"benchmark": "task_records", "jobs": jobs, "rounds": rounds, "chunk": CHUNK,
            "cpu_ms_per_task": round(sum(per_task.values()), 4),
            **{f"{stage}_cpu_ms_per_task": value for stage, value in per_task.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(run(args.jobs, args.rounds)))


if __name__ == "__main__":
    main()
