"""The numbers a simulation run is judged by: `summarize` turns a `SimResult` into a `Summary`.

This module owns every metric definition (JCT statistics, queueing delay, makespan,
utilisation, per-queue shares, what each virtual cluster used of its guarantee and borrowed
above it, the no-queueing lower bound) so that the CSV/JSON/HTML
reports (`shoal.sim.report`) and `shoal sim compare` all agree. Everything is a pure function
of the `SimResult`: no clock, no randomness, no dict-order dependence, so the same result
always gives the same summary.

Definitions (times in simulated seconds):

* JCT = end − submit, over *finished* jobs (``end`` is not None). Percentiles use the
  **linear** method (NumPy's default, Hyndman–Fan type 7): for sorted values x₀ ≤ … ≤ xₙ₋₁ the
  q-th percentile is at rank h = (n − 1)·q/100, interpolated between x⌊h⌋ and x⌊h⌋₊₁. The median
  is the 50th percentile (the mean of the two middle values for even n).
* Queueing delay = first start − submit, over *started* jobs.
* Total wait (`shoal.sim.waiting`) = time between submit and end not running, waits after
  evictions included, over *finished* jobs: its mean, and the worst VC's mean.
* Makespan = last end (over finished jobs) − first submit (over all jobs).
* Utilisation: the samples are a step function (a sample holds until the next one; before the
  first sample the cluster is idle; samples at the same instant: the last one wins). The average
  is ∫ busy_gpus dt / (cluster_gpus × makespan) over the makespan window [first submit, last
  end]. The series split the same window into equal buckets and give each bucket's
  time-average, stamped with the bucket's start, so the mean of ``utilization_series`` is
  ``avg_utilization``. Both are None / empty when the window has zero length.
* Per virtual cluster (VC, a job's queue), from the intervals in which its jobs held GPUs
  (`JobRecord.held`: every run of a preempted job counts), in_use(t) = Σ GPUs its jobs hold
  at t, exactly; min = its guaranteed GPUs (`SimResult.queue_min_gpus`, 0 when not listed):

  - borrowed GPU-seconds = ∫ max(0, in_use(t) − min) dt over the whole run (all of the used
    GPU-seconds when min is 0);
  - borrowed share = borrowed GPU-seconds / GPU-seconds used (None when it used nothing);
  - min utilisation = ∫ min(in_use(t), min) dt / (min × makespan), the integral over the
    makespan window: how much of its guarantee it used (None when min is 0 or the window
    has zero length).

  A record with no intervals but GPU-seconds used (one built by hand) is read as one
  interval of `gpus` GPUs from `first_start`, `gpu_seconds_used / gpus` seconds long. Only the
  jobs submitted to a VC count, not those of its child VCs.
* Fairness: each VC's stretch (mean JCT ÷ mean duration), Jain's index over the VCs' and the
  users' stretches, the worst VC's mean queueing delay and Themis's finish-time fairness ρ
  are defined in `shoal.sim.fairness`. They replace a service-based Jain index (GPU-seconds
  used ÷ demanded), which read 1.0 on every run in which all jobs finished.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from itertools import pairwise
from typing import Any

from shoal.sim.fairness import fairness, group_stretch, jain_index, mean_queueing_delay
from shoal.sim.result import HeldInterval, JobRecord, Sample, SimResult
from shoal.sim.waiting import TotalWait, total_wait

__all__ = ["DECIMALS", "SERIES_POINTS", "QueueShare", "Series", "Summary", "held_intervals",
           "jain_index", "percentile", "summarize"]

#: Most points in `Summary.utilization_series` and `Summary.queue_series`.
SERIES_POINTS = 200

#: Decimals that `Summary.to_dict` keeps for floats.
DECIMALS = 3

Series = tuple[tuple[float, float], ...]


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 ≤ q ≤ 100) of `values` by linear interpolation (type 7).

    h = (n − 1)·q/100; result = x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]) over the sorted values.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside [0, 100]")
    xs = sorted(values)
    h = (len(xs) - 1) * q / 100
    lo = math.floor(h)
    if lo + 1 >= len(xs):
        return xs[-1]
    return xs[lo] + (h - lo) * (xs[lo + 1] - xs[lo])


@dataclass(frozen=True)
class QueueShare:
    """What one queue (virtual cluster) got in a run: its GPU-seconds, its share, and how
    they split between its guarantee and borrowing (see the module docstring).

    ``service_ratio`` = GPU-seconds used / GPU-seconds demanded. Used GPU-seconds include work
    lost to evictions, so the ratio can exceed 1 for a queue whose jobs were preempted; it is
    below 1 for a queue whose jobs did not all finish. None when the queue demanded nothing.
    """

    gpu_seconds: float
    """GPU-seconds its jobs held (lost work included)."""
    share: float | None
    """Its fraction of all GPU-seconds used in the run; None if nothing ran."""
    demand_gpu_seconds: float
    """Σ gpus × duration over its jobs (finished or not)."""
    service_ratio: float | None
    mean_jct_s: float | None
    """Mean JCT of its finished jobs."""
    min_gpus: int = 0
    """GPUs guaranteed to it (its `min`), 0 when it has none."""
    borrowed_gpu_seconds: float = 0.0
    """∫ max(0, in_use(t) − min_gpus) dt: what it used above its guarantee."""
    borrowed_share: float | None = None
    """borrowed_gpu_seconds / gpu_seconds; None if it used nothing."""
    min_utilization: float | None = None
    """∫ min(in_use(t), min_gpus) dt / (min_gpus × makespan) over the makespan window; None
    when min_gpus is 0 or the makespan is zero or undefined."""
    stretch: float | None = None
    """Mean JCT ÷ mean duration of its finished jobs (`shoal.sim.fairness.group_stretch`)."""
    mean_queueing_delay_s: float | None = None
    """Mean first start − submit of its started jobs."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _json_value(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class Summary:
    """One run's metrics (see the module docstring for the exact definitions, and
    `shoal.sim.fairness` for the fairness figures)."""

    profile: str
    trace: str
    jobs: int
    finished: int
    unfinished: int
    mean_jct_s: float | None
    median_jct_s: float | None
    p95_jct_s: float | None
    p99_jct_s: float | None
    mean_queueing_delay_s: float | None
    makespan_s: float | None
    avg_utilization: float | None
    """Busy GPUs / cluster GPUs, time-averaged over the makespan window."""
    utilization_series: Series
    """(bucket start, average utilisation in the bucket), at most `SERIES_POINTS` buckets."""
    queue_series: Series
    """(bucket start, average number of queued jobs in the bucket), same buckets."""
    per_queue: dict[str, QueueShare]
    """Per queue, in queue-name order."""
    jain_vc_stretch: float | None
    """Jain's index over the virtual clusters' stretches (mean JCT ÷ mean duration)."""
    jain_user_stretch: float | None
    """Jain's index over the users' stretches; None when no finished job has a user."""
    worst_vc_mean_queueing_delay_s: float | None
    max_rho: float | None
    """The largest finish-time fairness ρ (JCT ÷ JCT on a 1/N share) of a finished job."""
    frac_rho_gt_1: float | None
    """The fraction of finished jobs with ρ > 1."""
    preemptions: int
    lost_gpu_hours: float
    lower_bound_mean_jct_s: float | None
    """Mean duration over all jobs: the mean JCT if every job ran at once, with no queueing."""
    events: int
    total_wait: TotalWait | None = None
    """Total waiting time, evictions' waits included (`shoal.sim.waiting`); None when no
    job finished."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: keys are the field names; floats rounded to `DECIMALS`; series as
        lists of [t, v]; `per_queue` as {queue: {field: value}}."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "per_queue":
                out[f.name] = {q: share.to_dict() for q, share in value.items()}
            elif f.name.endswith("_series"):
                out[f.name] = [[_round(t), _round(v)] for t, v in value]
            elif isinstance(value, TotalWait):
                out[f.name] = value.to_dict()
            else:
                out[f.name] = _json_value(value)
        return out


def summarize(result: SimResult, *, points: int = SERIES_POINTS) -> Summary:
    """Compute every metric of one run. `points` caps the length of the two series."""
    if points < 1:
        raise ValueError("points must be at least 1")
    jobs = result.jobs
    finished = [j for j in jobs if j.end is not None]
    jcts = [j.end - j.submit for j in finished if j.end is not None]
    delays = [j.first_start - j.submit for j in jobs if j.first_start is not None]

    makespan: float | None = None
    window: tuple[float, float] | None = None
    if finished:
        start = min(j.submit for j in jobs)
        end = max(j.end for j in finished if j.end is not None)
        makespan = end - start
        if makespan > 0:
            window = (start, end)

    busy = _StepFunction(result.samples, lambda s: s.busy_gpus)
    queued = _StepFunction(result.samples, lambda s: s.queued_jobs)
    avg_util: float | None = None
    util_series: Series = ()
    queue_series: Series = ()
    if window is not None and result.cluster_gpus > 0:
        t0, t1 = window
        avg_util = busy.mean(t0, t1) / result.cluster_gpus
        util_series = tuple((t, v / result.cluster_gpus)
                            for t, v in busy.bucket_means(t0, t1, points))
    if window is not None:
        queue_series = queued.bucket_means(window[0], window[1], points)

    per_queue = _per_queue(jobs, dict(result.queue_min_gpus), window)
    fair = fairness(jobs, result.cluster_gpus, result.cycle_interval)

    return Summary(
        profile=result.profile,
        trace=result.trace,
        jobs=len(jobs),
        finished=len(finished),
        unfinished=len(jobs) - len(finished),
        mean_jct_s=_mean(jcts),
        median_jct_s=percentile(jcts, 50) if jcts else None,
        p95_jct_s=percentile(jcts, 95) if jcts else None,
        p99_jct_s=percentile(jcts, 99) if jcts else None,
        mean_queueing_delay_s=_mean(delays),
        makespan_s=makespan,
        avg_utilization=avg_util,
        utilization_series=util_series,
        queue_series=queue_series,
        per_queue=per_queue,
        jain_vc_stretch=fair.jain_vc_stretch,
        jain_user_stretch=fair.jain_user_stretch,
        worst_vc_mean_queueing_delay_s=fair.worst_vc_mean_queueing_delay_s,
        max_rho=fair.max_rho,
        frac_rho_gt_1=fair.frac_rho_gt_1,
        preemptions=sum(j.preemptions for j in jobs),
        lost_gpu_hours=math.fsum(j.gpu_seconds_lost for j in jobs) / 3600,
        lower_bound_mean_jct_s=_mean([j.duration for j in jobs]),
        events=result.events,
        total_wait=total_wait(jobs),
    )


def _per_queue(jobs: Iterable[JobRecord], mins: dict[str, int],
               window: tuple[float, float] | None) -> dict[str, QueueShare]:
    by_queue: dict[str, list[JobRecord]] = {}
    for j in jobs:
        by_queue.setdefault(j.queue, []).append(j)
    total = math.fsum(j.gpu_seconds_used for js in by_queue.values() for j in js)
    out: dict[str, QueueShare] = {}
    for q in sorted(by_queue):
        js = by_queue[q]
        used = math.fsum(j.gpu_seconds_used for j in js)
        demand = math.fsum(j.gpus * j.duration for j in js)
        min_gpus = max(0, mins.get(q, 0))
        borrowed, within = _split_usage([iv for j in js for iv in held_intervals(j)],
                                        min_gpus, window)
        out[q] = QueueShare(
            gpu_seconds=used,
            share=used / total if total > 0 else None,
            demand_gpu_seconds=demand,
            service_ratio=used / demand if demand > 0 else None,
            mean_jct_s=_mean([j.end - j.submit for j in js if j.end is not None]),
            min_gpus=min_gpus,
            borrowed_gpu_seconds=borrowed,
            borrowed_share=borrowed / used if used > 0 else None,
            min_utilization=(within / (min_gpus * (window[1] - window[0]))
                             if min_gpus > 0 and window is not None else None),
            stretch=group_stretch(js),
            mean_queueing_delay_s=mean_queueing_delay(js),
        )
    return out


def held_intervals(job: JobRecord) -> tuple[HeldInterval, ...]:
    """When `job` held GPUs: `job.held`, or for a record without intervals that used
    GPU-seconds, one interval of `gpus` GPUs from `first_start`, `gpu_seconds_used / gpus` long."""
    if job.held:
        return job.held
    if job.first_start is None or job.gpus <= 0 or job.gpu_seconds_used <= 0:
        return ()
    return (HeldInterval(job.first_start, job.first_start + job.gpu_seconds_used / job.gpus,
                         job.gpus),)


def _split_usage(intervals: Iterable[HeldInterval], min_gpus: int,
                 window: tuple[float, float] | None) -> tuple[float, float]:
    """(∫ max(0, in_use − min_gpus) dt over all time, ∫ min(in_use, min_gpus) dt over
    `window`), where in_use(t) is the total GPUs of the intervals covering t."""
    deltas: dict[float, int] = {}
    for iv in intervals:
        if iv.end > iv.start and iv.gpus > 0:
            deltas[iv.start] = deltas.get(iv.start, 0) + iv.gpus
            deltas[iv.end] = deltas.get(iv.end, 0) - iv.gpus
    times = sorted(deltas)
    borrowed: list[float] = []
    within: list[float] = []
    in_use = 0
    for t, t_next in pairwise(times):
        in_use += deltas[t]
        if in_use <= 0:
            continue
        if in_use > min_gpus:
            borrowed.append((in_use - min_gpus) * (t_next - t))
        if window is not None and min_gpus > 0:
            overlap = min(t_next, window[1]) - max(t, window[0])
            if overlap > 0:
                within.append(min(in_use, min_gpus) * overlap)
    return math.fsum(borrowed), math.fsum(within)


class _StepFunction:
    """A sampled quantity as a right-continuous step function with a running integral.

    Value 0 before the first sample; each sample holds until the next; the last one forever.
    """

    def __init__(self, samples: Sequence[Sample], value: Callable[[Sample], int]) -> None:
        times: list[float] = []
        values: list[float] = []
        for s in sorted(samples, key=lambda s: s.time):  # stable: same-time order kept
            if times and times[-1] == s.time:
                values[-1] = value(s)  # the last sample at an instant wins
            else:
                times.append(s.time)
                values.append(value(s))
        # cumulative[i] = ∫ from times[0] to times[i]
        cumulative = [0.0]
        for i in range(1, len(times)):
            cumulative.append(cumulative[-1] + values[i - 1] * (times[i] - times[i - 1]))
        self._times = times
        self._values = values
        self._cumulative = cumulative

    def integral_to(self, t: float) -> float:
        """∫ from −∞ to t."""
        i = bisect_right(self._times, t) - 1
        if i < 0:
            return 0.0
        return self._cumulative[i] + self._values[i] * (t - self._times[i])

    def mean(self, t0: float, t1: float) -> float:
        return (self.integral_to(t1) - self.integral_to(t0)) / (t1 - t0)

    def bucket_means(self, t0: float, t1: float, points: int) -> Series:
        """`points` equal buckets over [t0, t1] (t1 > t0): (bucket start, mean in bucket)."""
        width = (t1 - t0) / points
        edges = [t0 + k * width for k in range(points)] + [t1]
        integrals = [self.integral_to(e) for e in edges]
        return tuple((edges[k], (integrals[k + 1] - integrals[k]) / (edges[k + 1] - edges[k]))
                     for k in range(points))


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _round(x: float) -> float:
    return round(x, DECIMALS) + 0.0  # + 0.0 turns -0.0 into 0.0


def _json_value(value: Any) -> Any:
    if isinstance(value, float):
        return _round(value)
    return value
