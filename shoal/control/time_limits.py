"""Enforcing time limits on the live cluster (`shoal.api.time_limits` states the rule): which
jobs have a limit, when the next run reaches its own, and which have reached it.

The control loop keeps a `TimeLimits` of the jobs in its model that have a limit (added at
admission, rebuilt from the store with the model, dropped when they end). Deadlines are
not stored: they are computed from the start times of the tasks that hold resources
(`Task.started`, stored with each bind), so a restart finds them again from the store. The
loop waits no longer than until the earliest deadline (`next_deadline`) and stops the jobs
that are due (`due`) as a cancel would, with FAILED as their end.
"""

from __future__ import annotations

from collections.abc import Iterable

from shoal.api import Job
from shoal.api.time_limits import deadline
from shoal.scheduler.model import SchedulerModel


class TimeLimits:
    def __init__(self) -> None:
        self._limited: set[str] = set()

    def reset(self, jobs: Iterable[Job]) -> None:
        """The model was rebuilt from these jobs."""
        self._limited = {j.name for j in jobs if j.time_limit is not None}

    def watch(self, job: Job) -> None:
        if job.time_limit is not None:
            self._limited.add(job.name)

    def forget(self, name: str) -> None:
        self._limited.discard(name)

    def deadlines(self, model: SchedulerModel) -> dict[str, float]:
        """Each running job with a limit → when its current run reaches it."""
        out: dict[str, float] = {}
        for name in self._limited:
            info = model.jobs.get(name)
            if info is None or not info.running:
                continue
            due = deadline(info.job, (t.started for t in info.running
                                      if t.started is not None))
            if due is not None:
                out[name] = due
        return out

    def next_deadline(self, model: SchedulerModel) -> float | None:
        return min(self.deadlines(model).values(), default=None)

    def due(self, model: SchedulerModel, now: float) -> list[str]:
        """The jobs whose run has reached its limit at `now`, by name."""
        return sorted(n for n, at in self.deadlines(model).items() if at <= now)
