"""The preempt and reclaim actions' listing of running jobs per virtual cluster, worst first:
by rank, then latest start, then the session's job order, each descending.

The job order only breaks ties of rank and latest start, and under backlog almost no two
running jobs tie on both: where every job-order plugin gives a job's keys the same whenever
they are first asked (`Preemption.looks` is False), the order key is asked for only within
a tie. Elsewhere (fair share computes a job's score when first asked) it is asked for every
job, as before, so every key is computed when it always was.

Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from operator import itemgetter
from typing import Any

from shoal.scheduler.jobs import JobInfo

_RANK_AND_START = itemgetter(0, 1)


def latest_start(job: JobInfo, now: float) -> float:
    """`JobInfo.latest_start`, without a generator for the one-task job."""
    running = job.running
    if len(running) == 1:
        started = running[0].started
        return now if started is None else started
    return job.latest_start(now)


def worst_first(jobs: Iterable[JobInfo], fresh: Container[str], now: float,
                rank: Callable[[JobInfo], tuple[Any, ...]],
                order: Callable[[JobInfo], tuple[Any, ...]], every_key: bool
                ) -> dict[str, list[JobInfo]]:
    """Per virtual cluster, its jobs that hold tasks and are not in `fresh`, worst first.
    `every_key`: ask `order` for every job, not only within ties."""
    by_queue: dict[str, list[tuple[Any, ...]]] = {}
    for job in jobs:
        if not job.running or job.job.name in fresh:
            continue
        entry = (rank(job), latest_start(job, now), order(job), job) if every_key else \
            (rank(job), latest_start(job, now), job)
        listed = by_queue.get(job.queue)
        if listed is None:
            by_queue[job.queue] = [entry]
        else:
            listed.append(entry)
    out: dict[str, list[JobInfo]] = {}
    for queue, entries in by_queue.items():
        if every_key:
            entries.sort(key=lambda e: e[:3], reverse=True)
            out[queue] = [e[3] for e in entries]
            continue
        entries.sort(key=_RANK_AND_START, reverse=True)
        listing = [e[2] for e in entries]
        keys = [e[:2] for e in entries]
        # Runs of equal (rank, latest start), each sorted by `order`; under backlog few.
        ties = [i for i in range(1, len(keys)) if keys[i] == keys[i - 1]]
        end = 0
        for i in ties:
            if i <= end:
                continue  # inside the run sorted already
            start = i - 1
            end = i + 1
            while end < len(keys) and keys[end] == keys[start]:
                end += 1
            listing[start:end] = sorted(listing[start:end], key=order, reverse=True)
        out[queue] = listing
    return out
