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
from typing import Any

from shoal.scheduler.jobs import JobInfo


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
        entries.sort(key=lambda e: (e[0], e[1]), reverse=True)
        listing: list[JobInfo] = []
        start = 0
        while start < len(entries):
            end = start + 1
            head = entries[start]
            while end < len(entries) and entries[end][0] == head[0] \
                    and entries[end][1] == head[1]:
                end += 1
            if end - start == 1:
                listing.append(head[2])
            else:
                listing.extend(sorted((e[2] for e in entries[start:end]), key=order,
                                      reverse=True))
            start = end
        out[queue] = listing
    return out
