"""Total waiting time (issue 17): what a job waited in all, not only before it first started.

A job's queueing delay (first start − submit) hides every wait after an eviction: under a
preempting profile a job may start at once and then wait for hours between its runs. Its
total waiting time (`JobRecord.total_wait`, recorded by the simulator) is all the time
between submission and finish in which it was not running. This module summarises it over
a run's finished jobs: the mean, and the worst virtual cluster's mean (the one whose jobs
waited longest on average; ties go to the first name).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from shoal.sim.result import JobRecord


@dataclass(frozen=True, slots=True)
class TotalWait:
    """Total waiting time over a run's finished jobs (seconds)."""

    mean_s: float
    worst_queue: str
    """The virtual cluster whose finished jobs waited longest on average."""
    worst_queue_mean_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"mean_s": round(self.mean_s, 3) + 0.0, "worst_queue": self.worst_queue,
                "worst_queue_mean_s": round(self.worst_queue_mean_s, 3) + 0.0}


def total_wait(jobs: Iterable[JobRecord]) -> TotalWait | None:
    """The summary of the jobs' total waits; None when no job finished (or none recorded
    one: records built by hand)."""
    by_queue: dict[str, list[float]] = {}
    for job in jobs:
        if job.total_wait is not None:
            by_queue.setdefault(job.queue, []).append(job.total_wait)
    if not by_queue:
        return None
    waits = [w for ws in by_queue.values() for w in ws]
    means = {q: math.fsum(ws) / len(ws) for q, ws in by_queue.items()}
    worst = min(means, key=lambda q: (-means[q], q))
    return TotalWait(math.fsum(waits) / len(waits), worst, means[worst])
