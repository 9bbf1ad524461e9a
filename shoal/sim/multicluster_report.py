"""The numbers of a multi-cluster what-if (`McResult` → `McSummary`): queueing delay, JCT,
the share of jobs kept on a most-preferred member and the GPU-seconds wasted by copies
cancelled after they started — the figures issue 19 asks of `bench/multicluster.py` and
`shoal mc sim`."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from shoal.sim.multicluster import McResult


@dataclass(frozen=True, slots=True)
class McSummary:
    policy: str
    jobs: int
    finished: int
    """Jobs whose kept copy ended (the others never ran or were still running)."""
    mean_queueing_delay_s: float | None
    p95_queueing_delay_s: float | None
    mean_jct_s: float | None
    preferred_cluster_share: float | None
    """Of the jobs that ran, those kept on a member of the highest priority."""
    wasted_gpu_seconds_fraction: float
    gpu_seconds: float
    wasted_gpu_seconds: float
    cancels: int
    cancelled_after_start: int
    polls: int
    by_cluster: dict[str, int]
    """Jobs kept on each member."""

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _p95(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    # Nearest rank: the smallest value with at least 95 % of the values at or below it.
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def summarize(result: McResult) -> McSummary:
    top = max((m.priority for m in result.members), default=0)
    preferred = {m.alias for m in result.members if m.priority == top}
    ran = [r for r in result.records if r.start is not None and r.cluster is not None]
    done = [r for r in ran if r.end is not None]
    delays = [r.start - r.submit_time for r in ran if r.start is not None]
    jcts = [r.end - r.submit_time for r in done if r.end is not None]
    by_cluster = {m.alias: 0 for m in result.members}
    for r in ran:
        if r.cluster is not None:
            by_cluster[r.cluster] += 1
    share = sum(1 for r in ran if r.cluster in preferred) / len(ran) if ran else None
    p95 = _p95(delays)
    return McSummary(
        policy=result.policy.value, jobs=len(result.records), finished=len(done),
        mean_queueing_delay_s=_mean(delays),
        p95_queueing_delay_s=None if p95 is None else round(p95, 3),
        mean_jct_s=_mean(jcts),
        preferred_cluster_share=None if share is None else round(share, 4),
        wasted_gpu_seconds_fraction=round(result.wasted_gpu_seconds / result.gpu_seconds, 6)
        if result.gpu_seconds > 0 else 0.0,
        gpu_seconds=round(result.gpu_seconds, 1),
        wasted_gpu_seconds=round(result.wasted_gpu_seconds, 1),
        cancels=result.cancels,
        cancelled_after_start=sum(r.copies_started - 1 for r in result.records
                                  if r.copies_started > 1),
        polls=result.polls, by_cluster=by_cluster)
