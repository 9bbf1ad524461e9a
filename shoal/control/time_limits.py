"""Enforcing time limits on the live cluster (`shoal.api.time_limits` states the rule): which
jobs have a limit, when the next run reaches its own, and which have reached it.

The control loop (`TimeLimiting`, a base class of `ControlPlane`) keeps a `TimeLimits` of
the jobs in its model that have a limit (added at
admission, rebuilt from the store with the model, dropped when they end). Deadlines are
not stored: they are computed from the start times of the tasks that hold resources
(`Task.started`, stored with each bind), so a restart finds them again from the store. The
loop waits no longer than until the earliest deadline (`next_deadline`) and stops the jobs
that are due (`due`) as a cancel would, with FAILED as their end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from shoal.api import Job, JobState
from shoal.api.time_limits import deadline, time_limit_cause
from shoal.scheduler.model import SchedulerModel

log = logging.getLogger(__name__)


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


class TimeLimiting:
    """The control loop's half that stops what ran out of time: a base class of
    `ControlPlane`, which supplies the clock, the model, the jobs being stopped and how a
    job is stopped."""

    clock: Callable[[], float]
    _limits: TimeLimits
    _ending: dict[str, tuple[JobState, str]]

    @property
    def model(self) -> SchedulerModel:
        raise NotImplementedError

    def _teardown(self, name: str, final: JobState, cause: str) -> None:
        raise NotImplementedError

    def _enforce_time_limits(self) -> float | None:
        """Stop the jobs whose run has reached its time limit (they end FAILED, never
        retried); returns when the next run will reach its own (the loop's clock)."""
        now = self.clock()
        deadlines = self._limits.deadlines(self.model)
        for name, at in sorted(deadlines.items()):
            info = self.model.jobs.get(name)
            if at <= now and info is not None and name not in self._ending:
                cause = time_limit_cause(info.job.time_limit or 0.0)
                log.info("job %s: %s", name, cause)
                self._teardown(name, JobState.FAILED, cause)
        return min((at for at in deadlines.values() if at > now), default=None)
