"""The simulator's executor-side records: one `JobRun` per trace job (work left, GPUs
held and when, waits, preemptions), the jobs handed to the scheduler built when first asked
for (`DrivenJobs`), and the tasks a cycle evicted from one job (`LostTasks`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from shoal.api.objects import Job, TaskRef
from shoal.sim.trace import TraceJob


@dataclass(slots=True)
class JobRun:
    """The executor's view of one job."""

    spec: TraceJob
    remaining: float
    """Work left, in seconds at the requested size."""
    first_start: float | None = None
    end: float | None = None
    preemptions: int = 0
    gpu_seconds_used: float = 0.0
    gpu_seconds_lost: float = 0.0
    held_gpus: int = 0
    running: bool = False
    run_start: float = 0.0
    run_progress: float = 0.0
    run_used_at_start: float = 0.0
    """`gpu_seconds_used` when the current run started."""
    rate: float = 0.0
    last: float = 0.0
    version: int = 0
    held: list[tuple[float, float, int]] = field(default_factory=list)
    """(start, end, GPUs) intervals in which the job held GPUs, up to `last`."""
    started: dict[TaskRef, float] = field(default_factory=dict)
    """When each of its tasks holding resources now was bound."""
    waited: float = 0.0
    """Seconds it waited, up to its current run's start (its total waiting time)."""
    stopped: float | None = None
    """When its last run was stopped; None: it has not run yet (it waits since submission)."""
    timed_out: bool = False
    """Its pending completion is its time limit's, with work left (`_restart_clock`)."""

    def advance(self, now: float) -> None:
        """Account for the time since the last change at the current rate (callers advance
        a job before they change what it holds, so `held` gets every interval)."""
        elapsed = now - self.last
        if self.running and elapsed > 0:
            done = min(self.remaining, elapsed * self.rate)
            self.remaining -= done
            self.run_progress += done
        self.gpu_seconds_used += elapsed * self.held_gpus
        if self.held_gpus > 0 and elapsed > 0:
            held = self.held
            if held and held[-1][1] == self.last and held[-1][2] == self.held_gpus:
                held[-1] = (held[-1][0], now, self.held_gpus)  # same size: extend
            else:
                held.append((self.last, now, self.held_gpus))
        self.last = now


class DrivenJobs(dict[str, Job]):
    """The jobs handed to the scheduler by name, each built when first asked for (at its
    arrival, mostly): building all 82,247 of the Philly trace's up front took seconds before
    the first cycle."""

    def __init__(self, build: Callable[[TraceJob], Job], runs: dict[str, JobRun]) -> None:
        super().__init__()
        self._build = build
        self._runs = runs

    def __missing__(self, name: str) -> Job:
        job = self[name] = self._build(self._runs[name].spec)
        return job


@dataclass(slots=True)
class LostTasks:
    """Tasks evicted from one job in one cycle: the GPUs it held and its rate before, and
    each task's (GPUs, bind time)."""

    held: int
    rate: float
    tasks: list[tuple[int, float]] = field(default_factory=list)
