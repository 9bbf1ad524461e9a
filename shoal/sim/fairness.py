"""The fairness figures of a simulation run: stretch, Jain's index over stretch, the worst
virtual cluster's queueing delay, and Themis's finish-time fairness ρ.

`shoal.sim.metrics` puts these in the `Summary`; this module owns their definitions. A
service-based index (GPU-seconds received ÷ demanded) reads 1.0 on any run in which every
job finishes, however long some waited; these figures are built on time instead, so a run
that makes one virtual cluster wait shows it. Every function is pure and order-independent.

Definitions (times in simulated seconds, over *finished* jobs unless said otherwise):

* **Stretch** of a job = JCT ÷ duration, its duration being the work at its requested size
  (its JCT had it started on arrival and never stopped): 1 is the best a rigid job can get.
  Undefined (None) for a job of zero duration.
* **Stretch of a group** of jobs (a virtual cluster, a user) = mean JCT ÷ mean duration over
  its finished jobs — issue 17's definition, which weighs long jobs more than the mean of
  per-job stretches would, so a virtual cluster of many tiny jobs does not drown one whose
  few long jobs waited days. None when the group has no finished job or its mean duration
  is 0.
* **jain_vc_stretch / jain_user_stretch** = Jain's index (Σx)² / (n·Σx²) over the stretches
  of the virtual clusters (users) that have a defined stretch. Unweighted: a virtual
  cluster's weight shares GPUs, it does not make a longer wait fair. 1.0 when every group
  waited in the same proportion; it tends to 1/n when one group's stretch dwarfs the rest.
  A job's user is `JobRecord.user`; jobs without one are left out of the per-user index, and
  it is None when no finished job has a user (the Philly and ITP traces record none).
* **Worst virtual cluster's mean queueing delay** = the largest, over virtual clusters with
  a started job, of the mean of first start − submit over its started jobs.
* **Finish-time fairness ρ** (Themis, Mahajan et al., NSDI'20) = JCT on the shared cluster ÷
  JCT on an independent 1/N share of it. Here:

  - N = the time-average, over the job's life [submit, end], of the number of *active* jobs
    (submitted and not finished: waiting, running or requeued after an eviction), the job
    itself included, so N ≥ 1. A job with a zero JCT takes the jobs active just after its
    submission, plus itself (its own submission and end cancel out at that instant).
  - JCT on a 1/N share = latency + duration × max(1, gpus ÷ (cluster GPUs ÷ N)): the job
    starts on its share at the driver's first scheduling cycle at or after its submission
    (latency = that cycle − submit: up to one `cycle_interval`, 0 when cycles run on every
    event or no interval is given); a share smaller than its request slows it down in
    proportion (it is time-shared), a larger one does not speed it up (it asked for `gpus`).
    A job of 0 GPUs takes its duration. Without the latency, a job that started at the very
    next cycle would count as treated unfairly: on a lightly loaded Philly replay, 94 % of
    jobs wait at most one 5-second cycle, and 79 % would have ρ > 1.

  ρ ≤ 1 means the job did at least as well as it would have on its own 1/N of the cluster;
  the summary reports the largest ρ and the fraction of finished jobs with ρ > 1 (beyond a
  relative 1e-9, so float rounding of an exact tie does not count). None when the cluster
  has no GPUs or no job finished (or finished with a positive duration).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from shoal.sim.result import JobRecord


def jain_index(xs: Sequence[float]) -> float | None:
    """Jain's fairness index (Σx)² / (n·Σx²) ∈ [1/n, 1]; None for no values.

    1.0 when all values are equal, zeros included (0/0 is read as "everyone got the same").
    """
    if not xs:
        return None
    squares = math.fsum(x * x for x in xs)
    if squares == 0:
        return 1.0
    return math.fsum(xs) ** 2 / (len(xs) * squares)


def job_stretch(job: JobRecord) -> float | None:
    """JCT ÷ duration; None if the job did not finish or has no duration."""
    if job.end is None or job.duration <= 0:
        return None
    return (job.end - job.submit) / job.duration


def group_stretch(jobs: Iterable[JobRecord]) -> float | None:
    """Mean JCT ÷ mean duration over the finished jobs among `jobs` (see the module text)."""
    done = [j for j in jobs if j.end is not None]
    durations = math.fsum(j.duration for j in done)
    if not done or durations <= 0:
        return None
    return math.fsum(j.end - j.submit for j in done if j.end is not None) / durations


def mean_queueing_delay(jobs: Iterable[JobRecord]) -> float | None:
    """Mean of first start − submit over the started jobs among `jobs`."""
    delays = [j.first_start - j.submit for j in jobs if j.first_start is not None]
    return math.fsum(delays) / len(delays) if delays else None


def by_queue(jobs: Iterable[JobRecord]) -> dict[str, list[JobRecord]]:
    """The jobs of each virtual cluster, in queue-name order."""
    groups: dict[str, list[JobRecord]] = {}
    for j in jobs:
        groups.setdefault(j.queue, []).append(j)
    return {q: groups[q] for q in sorted(groups)}


def by_user(jobs: Iterable[JobRecord]) -> dict[str, list[JobRecord]]:
    """The jobs of each user, in user-name order; jobs without a user are left out."""
    groups: dict[str, list[JobRecord]] = {}
    for j in jobs:
        if j.user is not None:
            groups.setdefault(j.user, []).append(j)
    return {u: groups[u] for u in sorted(groups)}


def jain_stretch(groups: Mapping[str, Sequence[JobRecord]]) -> float | None:
    """Jain's index over the stretches of the groups that have one."""
    stretches = [s for s in map(group_stretch, groups.values()) if s is not None]
    return jain_index(stretches)


def worst_mean(groups: Mapping[str, Sequence[JobRecord]],
               value: Callable[[JobRecord], float | None]) -> float | None:
    """The largest, over groups, of the mean of `value` over the group's jobs where it is
    defined; None when it is defined for no job. A per-job wait other than the queueing
    delay (the total wait of a preempted job, say) gets its worst group the same way."""
    means: list[float] = []
    for js in groups.values():
        xs = [x for x in map(value, js) if x is not None]
        if xs:
            means.append(math.fsum(xs) / len(xs))
    return max(means) if means else None


def worst_mean_queueing_delay(jobs: Iterable[JobRecord]) -> float | None:
    """The worst virtual cluster's mean queueing delay (see the module text)."""
    return worst_mean(by_queue(jobs), lambda j: j.queueing_delay)


class ActiveJobs:
    """The number of active jobs (submitted, not finished) as a step function of time, with
    its running integral: +1 at each submission, −1 at each end, right-continuous."""

    def __init__(self, jobs: Iterable[JobRecord]) -> None:
        deltas: dict[float, int] = {}
        for j in jobs:
            deltas[j.submit] = deltas.get(j.submit, 0) + 1
            if j.end is not None:
                deltas[j.end] = deltas.get(j.end, 0) - 1
        self._times = sorted(deltas)
        self._counts: list[int] = []
        self._cumulative: list[float] = []  # ∫ from the first time to times[i]
        count = 0
        area = 0.0
        for i, t in enumerate(self._times):
            if i > 0:
                area += count * (t - self._times[i - 1])
            count += deltas[t]
            self._counts.append(count)
            self._cumulative.append(area)

    def at(self, t: float) -> int:
        i = bisect_right(self._times, t) - 1
        return self._counts[i] if i >= 0 else 0

    def integral_to(self, t: float) -> float:
        i = bisect_right(self._times, t) - 1
        if i < 0:
            return 0.0
        return self._cumulative[i] + self._counts[i] * (t - self._times[i])

    def mean(self, t0: float, t1: float) -> float:
        """The average count over [t0, t1]; the count at t0 when t1 ≤ t0."""
        if t1 <= t0:
            return float(self.at(t0))
        return (self.integral_to(t1) - self.integral_to(t0)) / (t1 - t0)


@dataclass(frozen=True, slots=True)
class FinishTimeFairness:
    """One finished job's ρ and what it is made of."""

    contention: float
    """N: the average number of active jobs over its life (≥ 1)."""
    independent_jct: float
    """Its JCT on a 1/N share: latency + duration × max(1, gpus × N ÷ cluster GPUs)."""
    rho: float
    """JCT ÷ independent_jct."""


#: ρ above this counts as ρ > 1 (see the module text).
RHO_ABOVE_ONE = 1 + 1e-9


def first_cycle_latency(submit: float, cycle_interval: float) -> float:
    """From `submit` to the first periodic cycle at or after it (cycles at multiples of the
    interval, as `shoal.sim.simulator` runs them); 0 when `cycle_interval` ≤ 0."""
    if cycle_interval <= 0:
        return 0.0
    return max(0.0, math.ceil(submit / cycle_interval) * cycle_interval - submit)


def finish_time_fairness(jobs: Sequence[JobRecord], cluster_gpus: int,
                         cycle_interval: float = 0.0) -> dict[str, FinishTimeFairness]:
    """ρ of every finished job with a positive duration, by job name (see the module text);
    empty when the cluster has no GPUs. `cycle_interval`: the driver's periodic cycle (0:
    a cycle on every event)."""
    if cluster_gpus <= 0:
        return {}
    active = ActiveJobs(jobs)
    out: dict[str, FinishTimeFairness] = {}
    for j in jobs:
        if j.end is None or j.duration <= 0:
            continue
        if j.end > j.submit:
            n = max(1.0, active.mean(j.submit, j.end))
        else:
            n = active.at(j.submit) + 1.0
        independent = (first_cycle_latency(j.submit, cycle_interval)
                       + j.duration * max(1.0, j.gpus * n / cluster_gpus))
        out[j.name] = FinishTimeFairness(n, independent, (j.end - j.submit) / independent)
    return out


@dataclass(frozen=True, slots=True)
class Fairness:
    """The run-wide fairness figures `shoal.sim.metrics.Summary` carries."""

    jain_vc_stretch: float | None
    jain_user_stretch: float | None
    worst_vc_mean_queueing_delay_s: float | None
    max_rho: float | None
    frac_rho_gt_1: float | None


def fairness(jobs: Sequence[JobRecord], cluster_gpus: int,
             cycle_interval: float = 0.0) -> Fairness:
    """Every figure of the module text for one run's jobs."""
    rhos = [f.rho for f in finish_time_fairness(jobs, cluster_gpus, cycle_interval).values()]
    return Fairness(
        jain_vc_stretch=jain_stretch(by_queue(jobs)),
        jain_user_stretch=jain_stretch(by_user(jobs)),
        worst_vc_mean_queueing_delay_s=worst_mean_queueing_delay(jobs),
        max_rho=max(rhos) if rhos else None,
        frac_rho_gt_1=sum(1 for r in rhos if r > RHO_ABOVE_ONE) / len(rhos) if rhos else None,
    )
