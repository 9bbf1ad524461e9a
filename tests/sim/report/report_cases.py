"""Small SimResults whose every metric is computed by hand in the tests.

`three_jobs()` — 4 GPUs, queues q1 (a, b) and q2 (c):

    t=0   a (2 GPUs, 10 s) and b (2 GPUs, 20 s) arrive and start          busy 4, queued 0
    t=1   c (q2, 2 GPUs, 5 s) arrives and waits                             busy 4, queued 1
    t=2   c starts by evicting b (b loses 2 s × 2 GPUs = 4 GPU-s)            busy 4, queued 1
    t=7   c ends; b restarts from scratch                                   busy 4, queued 0
    t=10  a ends                                                            busy 2, queued 0
    t=27  b ends                                                            busy 0, queued 0

JCT: a 10, b 27, c 6. Queueing delay: a 0, b 0, c 1.
GPU-seconds used: a 20, b 2×2 + 2×20 = 44, c 10 (total 74 = ∫ busy dt).
"""

from __future__ import annotations

from shoal.sim.result import JobRecord, Sample, SimResult


def three_jobs(profile: str = "fifo",
               queue_weights: tuple[tuple[str, int], ...] = ()) -> SimResult:
    return SimResult(
        profile=profile,
        trace="tiny",
        cluster_gpus=4,
        jobs=(
            JobRecord("a", "q1", 2, 10.0, 0.0, 0.0, 10.0, 0, 20.0, 0.0),
            JobRecord("b", "q1", 2, 20.0, 0.0, 0.0, 27.0, 1, 44.0, 4.0),
            JobRecord("c", "q2", 2, 5.0, 1.0, 2.0, 7.0, 0, 10.0, 0.0),
        ),
        samples=(
            Sample(0.0, 4, 0, 2),
            Sample(1.0, 4, 1, 2),
            Sample(2.0, 4, 1, 2),
            Sample(7.0, 4, 0, 2),
            Sample(10.0, 2, 0, 1),
            Sample(27.0, 0, 0, 0),
        ),
        events=11,
        queue_weights=queue_weights,
    )


def nothing_finished() -> SimResult:
    """One job that starts at 5 and is still running when the run stops; one never starts."""
    return SimResult(
        profile="stuck",
        trace="tiny",
        cluster_gpus=4,
        jobs=(
            JobRecord("long", "q1", 4, 1000.0, 0.0, 5.0, None, 0, 20.0, 0.0),
            JobRecord("never", "q1", 4, 50.0, 1.0, None, None),
        ),
        samples=(Sample(0.0, 0, 1, 0), Sample(1.0, 0, 2, 0), Sample(5.0, 4, 1, 1)),
        events=3,
    )


def instant_job() -> SimResult:
    """A zero-duration job that arrives, starts and ends at t=5: zero-length makespan."""
    return SimResult(
        profile="instant",
        trace="tiny",
        cluster_gpus=2,
        jobs=(JobRecord("z", "only", 1, 0.0, 5.0, 5.0, 5.0),),
        samples=(Sample(5.0, 1, 0, 1), Sample(5.0, 0, 0, 0)),
        events=2,
    )


def empty() -> SimResult:
    return SimResult(profile="empty", trace="none", cluster_gpus=8, jobs=(), samples=(),
                     events=0)
