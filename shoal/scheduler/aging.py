"""Aging and starvation (seed 002: "if a job is waiting enough long, it can finally be
scheduled to the cluster, no matter it may have very low priority").

Two rules, both off unless the priority plugin is given `agingHalfLife`:

- **Aging.** A job's effective priority doubles with every `agingHalfLife` seconds it has
  waited: `priority × 2^(waited / agingHalfLife)`. *Waited* counts from the job's submission
  (`Job.submitted`), not from its last eviction: the model keeps no eviction time, and an
  evicted job has waited at least that long for its work already. Priorities below 1 age
  as 1 (the seed's levels are 10 to 10,000; a 0 or negative class would never grow by
  doubling), the class value then breaking ties. The order is kept in log2, so it never
  overflows and needs no cap: a cap below log2 of the ratio between the highest and the
  lowest priority would let a low-priority job starve again. Since every job ages at the same
  rate, the order of two jobs never changes with the clock: a job of priority `p` ranks as if
  it had been submitted `agingHalfLife × log2(p)` seconds earlier. So a job ranks ahead of
  every job submitted more than `agingHalfLife × log2(pmax / pmin)` seconds after it.
  Aging orders jobs; it gives no right to evict: the preempt and reclaim actions rank a
  preemptor and its victims by their priority class alone (`preemption_key`), or a
  waiting job that had aged past a running one of a higher class would evict it, and the
  evicted job, aging in turn, would evict it back.

- **Starvation reservation.** Ordering alone is not enough: first in order, a large job that
  does not fit is skipped, and smaller later jobs take every half-node that frees up. So a
  job that has waited `starvationAfter` seconds (default: one `agingHalfLife`) and is the
  first waiting job of its virtual cluster that cannot be placed *holds a reservation*: the
  jobs behind it in its virtual cluster wait (`Blocked`, naming it), unless the backfill
  action can start them without delaying it — on nodes it cannot use, or (`reservation:
  estimates`) for no longer than until it could start — exactly as behind the head of a
  strictly ordered queue (`allocate.strict`, Slurm's backfill, Kueue's StrictFIFO); the
  elastic action does not grow jobs onto what it could use either. A job held back may still
  preempt (by its class, which aging does not change): a production job is not kept waiting
  behind a starving experiment job for capacity it may take by eviction. What is *free* on
  the starving job's nodes it may not take, not through preempt or reclaim either (their
  "fits without an eviction" step keeps off those nodes, as backfill does). Other
  virtual clusters are not held back: across virtual clusters the queue order (capacity,
  fair share) decides, as Kueue's StrictFIFO is per ClusterQueue. A starving job evicts
  nothing it could not evict anyway (non-preemptable jobs and services stay), so a cluster
  full of what may not be evicted keeps it waiting, the exception the seed allows.

Whether a job is starving changes with the clock alone, so with aging on the priority plugin
is `time_dependent` and its `next_change` is the next time a waiting job starts starving.

Pure: the arithmetic and the words of the reasons.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from shoal.api.decisions import PendingKind, PendingReason
from shoal.api.objects import Job


@dataclass(frozen=True, slots=True)
class Aging:
    half_life: float
    """Seconds of waiting that double a job's effective priority."""
    starvation_after: float
    """Seconds of waiting after which a job first in its order holds a reservation."""

    def waited(self, job: Job, now: float) -> float:
        """Seconds since its submission (never negative)."""
        return max(0.0, now - job.submitted)

    def aged_log2(self, priority: int, job: Job, now: float) -> float:
        """log2 of its effective priority: `log2(max(priority, 1)) + waited / half_life`."""
        return math.log2(max(priority, 1)) + self.waited(job, now) / self.half_life

    def effective_priority(self, priority: int, job: Job, now: float) -> float:
        """`max(priority, 1) × 2^(waited / half_life)`, for messages (inf once past floats)."""
        exponent = self.aged_log2(priority, job, now)
        return math.inf if exponent >= 1000 else 2.0 ** exponent

    def starving_since(self, job: Job, now: float) -> float | None:
        """When it started starving (submission + `starvation_after`), if it has by `now`."""
        since = job.submitted + self.starvation_after
        return since if since <= now else None

    def next_starving(self, waiting: Iterable[Job], now: float) -> float | None:
        """The earliest time after `now` at which one of `waiting` starts starving."""
        return min((j.submitted + self.starvation_after for j in waiting
                    if j.submitted + self.starvation_after > now), default=None)


def reservation_reason(reason: PendingReason, job: Job, since: float) -> PendingReason:
    """A starving job's reason: why it waits, and that it holds a reservation since when.
    The kind stays (the cause is still lack of room); the text changes only when the cause
    does, so a driver that rewrites reasons on change writes it once."""
    return PendingReason(
        reason.kind,
        f"{reason.message}; starving (waiting since {job.submitted:g}), it holds a "
        f"reservation since {since:g}: later jobs of its virtual cluster start only where "
        "they do not delay it",
        resource=reason.resource, queue=reason.queue, predicate=reason.predicate)


def held_back_reason(head: str, since: float, queue: str | None) -> PendingReason:
    """A job behind a starving job's reservation (in its virtual cluster, or in the one
    cluster-wide order when `queue` is None)."""
    where = "the cluster-wide order" if queue is None else f"virtual cluster {queue!r}"
    return PendingReason(
        PendingKind.BLOCKED,
        f"held back by the reservation of job {head!r}, starving since {since:g} and first "
        f"in {where}: this job may start only where it does not delay that one",
        queue=queue)
