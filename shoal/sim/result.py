"""What a simulation run produces: one record per job and a time series of the cluster.

The engine fills these; metrics and reports read them. Nothing here depends on the wall
clock, so the same trace, cluster and profile give byte-identical results.

A job record keeps the intervals in which the job held GPUs (every run of a preempted job,
and each size of a resized one), so the metrics can rebuild any virtual cluster's GPUs in use
at every instant; the result keeps each virtual cluster's fair-share weight and guaranteed
GPUs (its `min`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HeldInterval:
    """The job held `gpus` GPUs from `start` to `end` (simulated seconds, start < end)."""

    start: float
    end: float
    gpus: int


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One job's life in a run (times in simulated seconds since the trace's start)."""

    name: str
    queue: str
    gpus: int
    """GPUs requested (the gang's size at submission)."""
    duration: float
    """Work at the requested size: the job's JCT if it started on arrival and never stopped."""
    submit: float
    first_start: float | None
    """None if the job never started."""
    end: float | None
    """None if the job did not finish within the run."""
    preemptions: int = 0
    """Times the job was evicted and requeued."""
    gpu_seconds_used: float = 0.0
    """GPU-seconds the job held, lost work included."""
    gpu_seconds_lost: float = 0.0
    """GPU-seconds of work thrown away by evictions (since the last checkpoint)."""
    held: tuple[HeldInterval, ...] = ()
    """When the job held GPUs, in time order, not overlapping; Σ gpus × (end − start) is
    `gpu_seconds_used`. Empty for a job that never held any (and in records built by hand,
    which the metrics then read as one interval from `first_start`, see
    `shoal.sim.metrics`)."""
    total_wait: float | None = None
    """Seconds between submission and finish in which it was not running: its queueing
    delay plus every wait after an eviction (issue 17); None if it did not finish. At least
    `queueing_delay`, equal to it for a job never evicted."""
    user: str | None = None
    """Who submitted it, when the trace says (the per-user fairness figures group by it)."""
    timed_out: bool = False
    """It was stopped at its time limit (`spec.timeLimit`) with work left: it failed, at
    `end`."""

    @property
    def jct(self) -> float | None:
        return None if self.end is None else self.end - self.submit

    @property
    def queueing_delay(self) -> float | None:
        return None if self.first_start is None else self.first_start - self.submit


@dataclass(frozen=True, slots=True)
class Sample:
    """The cluster at one instant; a sample is taken whenever one of these changes."""

    time: float
    busy_gpus: int
    queued_jobs: int
    running_jobs: int


@dataclass(frozen=True)
class SimResult:
    profile: str
    trace: str
    cluster_gpus: int
    jobs: tuple[JobRecord, ...]
    samples: tuple[Sample, ...]
    events: int
    """Events the engine processed (arrivals, completions, cycles, node changes)."""
    queue_weights: tuple[tuple[str, int], ...] = ()
    """Fair-share weight of each virtual cluster that jobs ran in."""
    queue_min_gpus: tuple[tuple[str, int], ...] = ()
    """Guaranteed GPUs (the `min`) of each virtual cluster, by name; a virtual cluster not
    listed has none."""
    cycle_interval: float = 0.0
    """Seconds between the driver's periodic cycles (0: a cycle on every event): the latency
    a job has at best before it starts, which finish-time fairness allows for."""
