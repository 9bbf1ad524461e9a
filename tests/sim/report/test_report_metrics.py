"""`shoal.sim.metrics`: every summary number checked against a hand computation."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import pytest
from report_cases import empty, instant_job, nothing_finished, three_jobs

from shoal.sim.metrics import QueueShare, Summary, jain_index, percentile, summarize
from shoal.sim.result import JobRecord, Sample, SimResult


def exact(x: float | None) -> Any:
    """Equal up to float rounding (relative 1e-6: far below the 3 decimals reported)."""
    return pytest.approx(x)


# --- percentiles and Jain's index -----------------------------------------------------------

def test_percentile_is_linear_interpolation() -> None:
    xs = [4.0, 1.0, 3.0, 2.0]  # sorted: 1 2 3 4
    assert percentile(xs, 0) == 1.0
    assert percentile(xs, 100) == 4.0
    assert percentile(xs, 50) == 2.5          # h = 3·0.5 = 1.5 → 2 + 0.5·(3 − 2)
    assert percentile(xs, 25) == 1.75         # h = 0.75 → 1 + 0.75·(2 − 1)
    assert percentile(xs, 95) == exact(3.85)  # h = 2.85 → 3 + 0.85·(4 − 3)
    assert percentile([7.0], 99) == 7.0


def test_percentile_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_jain_index_by_hand() -> None:
    assert jain_index([]) is None
    assert jain_index([3.0]) == 1.0
    assert jain_index([2.0, 2.0, 2.0]) == 1.0
    assert jain_index([1.0, 0.0]) == 0.5       # (1)² / (2·1)
    assert jain_index([1.0, 0.0, 0.0, 0.0]) == 0.25
    assert jain_index([1.0, 2.0]) == exact(0.9)  # 9 / (2·5)
    assert jain_index([0.0, 0.0]) == 1.0       # everyone got the same (nothing)


# --- the three-job run ----------------------------------------------------------------------

def test_three_jobs_counts_and_jct_statistics() -> None:
    s = summarize(three_jobs())
    assert (s.profile, s.trace, s.jobs, s.finished, s.unfinished) == ("fifo", "tiny", 3, 3, 0)
    # JCTs sorted: 6 (c), 10 (a), 27 (b)
    assert s.mean_jct_s == exact(43 / 3)
    assert s.median_jct_s == 10.0
    assert s.p95_jct_s == exact(10 + 0.9 * 17)   # h = 2·0.95 = 1.9
    assert s.p99_jct_s == exact(10 + 0.98 * 17)  # h = 1.98
    assert s.mean_queueing_delay_s == exact(1 / 3)  # (0 + 0 + 1) / 3
    assert s.makespan_s == 27.0
    assert s.lower_bound_mean_jct_s == exact(35 / 3)  # (10 + 20 + 5) / 3
    assert s.preemptions == 1
    assert s.lost_gpu_hours == exact(4 / 3600)
    assert s.events == 11


def test_three_jobs_utilisation_integral() -> None:
    s = summarize(three_jobs())
    # busy 4 on [0, 10), 2 on [10, 27): 40 + 34 = 74 GPU-s over 4 GPUs × 27 s
    assert s.avg_utilization == exact(74 / 108)


def test_three_jobs_series_are_bucket_averages() -> None:
    s = summarize(three_jobs(), points=3)  # buckets [0, 9) [9, 18) [18, 27]
    assert s.utilization_series == (
        (0.0, 1.0),
        (9.0, exact((1 * 4 + 8 * 2) / (9 * 4))),  # 9–10 busy 4, 10–18 busy 2
        (18.0, 0.5),
    )
    # one job queued on [1, 7): 6 s of the first bucket
    assert s.queue_series == ((0.0, exact(6 / 9)), (9.0, 0.0), (18.0, 0.0))


def test_default_series_has_200_points_and_averages_to_the_utilisation() -> None:
    s = summarize(three_jobs())
    assert len(s.utilization_series) == len(s.queue_series) == 200
    assert s.utilization_series[0] == (0.0, 1.0)
    assert s.utilization_series[-1] == (exact(27 - 27 / 200), 0.5)
    times = [t for t, _ in s.utilization_series]
    assert times == sorted(times)
    mean = sum(v for _, v in s.utilization_series) / 200
    assert mean == exact(s.avg_utilization)


def test_three_jobs_per_queue_shares() -> None:
    s = summarize(three_jobs())
    assert list(s.per_queue) == ["q1", "q2"]
    q1, q2 = s.per_queue["q1"], s.per_queue["q2"]
    # No VC has a min: everything used is borrowed, and there is no min to utilise.
    assert q1 == QueueShare(gpu_seconds=64.0, share=exact(64 / 74), demand_gpu_seconds=60.0,
                            service_ratio=exact(64 / 60), mean_jct_s=18.5,
                            min_gpus=0, borrowed_gpu_seconds=64.0, borrowed_share=1.0,
                            min_utilization=None,
                            stretch=exact(18.5 / 15),  # mean JCT (10, 27) ÷ mean (10, 20)
                            mean_queueing_delay_s=0.0)
    assert q2 == QueueShare(gpu_seconds=10.0, share=exact(10 / 74), demand_gpu_seconds=10.0,
                            service_ratio=1.0, mean_jct_s=6.0,
                            min_gpus=0, borrowed_gpu_seconds=10.0, borrowed_share=1.0,
                            min_utilization=None, stretch=exact(6 / 5),
                            mean_queueing_delay_s=1.0)


def test_three_jobs_jain_over_vc_stretch() -> None:
    # stretches q1 = 18.5 / 15 = 37/30, q2 = 6/5 = 36/30: 73² / (2·(37² + 36²)) = 5329 / 5330
    s = summarize(three_jobs())
    assert s.jain_vc_stretch == exact(5329 / 5330)
    assert s.jain_user_stretch is None  # no job has a user
    assert s.worst_vc_mean_queueing_delay_s == 1.0  # q1 waits 0, q2 waits 1


def test_three_jobs_jain_over_vc_stretch_ignores_weights() -> None:
    # A weight shares GPUs; it does not make a longer wait fair (shoal.sim.fairness).
    for weights in ((("q1", 2), ("q2", 1)), (("q1", 1),), (("q1", 0),)):
        assert summarize(three_jobs(queue_weights=weights)).jain_vc_stretch == exact(5329 / 5330)


def test_three_jobs_jain_over_user_stretch() -> None:
    # u1 = a, c: mean JCT 8 ÷ mean duration 7.5 = 64/60; u2 = b: 27/20 = 81/60
    r = three_jobs()
    users = {"a": "u1", "b": "u2", "c": "u1"}
    r = replace(r, jobs=tuple(replace(j, user=users[j.name]) for j in r.jobs))
    assert summarize(r).jain_user_stretch == exact(145**2 / (2 * (64**2 + 81**2)))


def test_three_jobs_finish_time_fairness() -> None:
    # active jobs: 2 on [0, 1), 3 on [1, 7), 2 on [7, 10), 1 on [10, 27); cluster 4 GPUs
    # a: N = 26/10, 1/N-share JCT = 10 × 2·2.6/4 = 13, ρ = 10/13
    # b: N = 43/27, 2·N/4 < 1 so 20, ρ = 27/20;  c: N = 3, 5 × 1.5 = 7.5, ρ = 6/7.5
    s = summarize(three_jobs())
    assert s.max_rho == exact(27 / 20)
    assert s.frac_rho_gt_1 == exact(1 / 3)


def test_to_dict_keys_rounding_and_series() -> None:
    d = summarize(three_jobs(), points=3).to_dict()
    assert list(d) == [f.name for f in fields(Summary)]
    assert d == {
        "profile": "fifo", "trace": "tiny", "jobs": 3, "finished": 3, "unfinished": 0,
        "mean_jct_s": 14.333, "median_jct_s": 10.0, "p95_jct_s": 25.3, "p99_jct_s": 26.66,
        "mean_queueing_delay_s": 0.333, "makespan_s": 27.0, "avg_utilization": 0.685,
        "utilization_series": [[0.0, 1.0], [9.0, 0.556], [18.0, 0.5]],
        "queue_series": [[0.0, 0.667], [9.0, 0.0], [18.0, 0.0]],
        "per_queue": {
            "q1": {"gpu_seconds": 64.0, "share": 0.865, "demand_gpu_seconds": 60.0,
                   "service_ratio": 1.067, "mean_jct_s": 18.5, "min_gpus": 0,
                   "borrowed_gpu_seconds": 64.0, "borrowed_share": 1.0,
                   "min_utilization": None, "stretch": 1.233, "mean_queueing_delay_s": 0.0},
            "q2": {"gpu_seconds": 10.0, "share": 0.135, "demand_gpu_seconds": 10.0,
                   "service_ratio": 1.0, "mean_jct_s": 6.0, "min_gpus": 0,
                   "borrowed_gpu_seconds": 10.0, "borrowed_share": 1.0,
                   "min_utilization": None, "stretch": 1.2, "mean_queueing_delay_s": 1.0},
        },
        "jain_vc_stretch": 1.0, "jain_user_stretch": None,
        "worst_vc_mean_queueing_delay_s": 1.0, "max_rho": 1.35, "frac_rho_gt_1": 0.333,
        "preemptions": 1, "lost_gpu_hours": 0.001,
        "lower_bound_mean_jct_s": 11.667, "events": 11, "total_wait": None,
    }


def test_summary_is_deterministic() -> None:
    assert summarize(three_jobs()) == summarize(three_jobs())
    assert summarize(three_jobs()).to_dict() == summarize(three_jobs()).to_dict()


# --- the step-function reading of samples ---------------------------------------------------

def late_samples() -> SimResult:
    # Submitted at 0, first sample at 2: the cluster counts as idle (and the queue empty)
    # before it. Samples given out of order.
    return SimResult(
        profile="p", trace="t", cluster_gpus=2,
        jobs=(JobRecord("j", "q", 2, 2.0, 0.0, 2.0, 4.0, 0, 4.0, 0.0),),
        samples=(Sample(4.0, 0, 0, 0), Sample(2.0, 2, 0, 1)),
        events=2,
    )


def test_idle_before_the_first_sample_and_unsorted_samples() -> None:
    s = summarize(late_samples(), points=2)
    assert s.avg_utilization == 0.5  # 2 GPUs × 2 s / (2 GPUs × 4 s)
    assert s.utilization_series == ((0.0, 0.0), (2.0, 1.0))


def test_last_sample_at_an_instant_wins() -> None:
    r = late_samples()
    r = replace(r, samples=(Sample(2.0, 1, 0, 1), Sample(2.0, 2, 0, 1), Sample(4.0, 0, 0, 0)))
    assert summarize(r).avg_utilization == 0.5


def test_last_sample_holds_to_the_makespan_end() -> None:
    r = replace(late_samples(), samples=(Sample(2.0, 2, 0, 1),))
    assert summarize(r).avg_utilization == 0.5


def test_points_must_be_positive() -> None:
    with pytest.raises(ValueError):
        summarize(three_jobs(), points=0)


# --- edge cases ------------------------------------------------------------------------------

def test_no_finished_job() -> None:
    s = summarize(nothing_finished())
    assert (s.jobs, s.finished, s.unfinished) == (2, 0, 2)
    assert s.mean_jct_s is s.median_jct_s is s.p95_jct_s is s.p99_jct_s is None
    assert s.mean_queueing_delay_s == 5.0  # only "long" started
    assert s.makespan_s is None
    assert s.avg_utilization is None
    assert s.utilization_series == s.queue_series == ()
    assert s.per_queue == {"q1": QueueShare(gpu_seconds=20.0, share=1.0,
                                            demand_gpu_seconds=4200.0,  # 4·1000 + 4·50
                                            service_ratio=exact(20 / 4200), mean_jct_s=None,
                                            borrowed_gpu_seconds=20.0, borrowed_share=1.0,
                                            mean_queueing_delay_s=5.0)}
    assert s.jain_vc_stretch is None  # no finished job: no stretch
    assert s.worst_vc_mean_queueing_delay_s == 5.0  # only "long" started
    assert s.max_rho is None and s.frac_rho_gt_1 is None
    assert s.lower_bound_mean_jct_s == 525.0
    d = s.to_dict()
    assert d["mean_jct_s"] is None and d["utilization_series"] == []


def test_zero_length_makespan() -> None:
    s = summarize(instant_job())
    assert s.makespan_s == 0.0
    assert s.mean_jct_s == s.median_jct_s == s.p99_jct_s == 0.0
    assert s.mean_queueing_delay_s == 0.0
    assert s.avg_utilization is None  # no window to average over
    assert s.utilization_series == s.queue_series == ()
    assert s.per_queue == {"only": QueueShare(gpu_seconds=0.0, share=None,
                                              demand_gpu_seconds=0.0, service_ratio=None,
                                              mean_jct_s=0.0, mean_queueing_delay_s=0.0)}
    assert s.jain_vc_stretch is None  # a zero duration has no stretch
    assert s.max_rho is None  # nor a finish-time fairness
    assert s.worst_vc_mean_queueing_delay_s == 0.0
    assert s.lower_bound_mean_jct_s == 0.0


def test_single_queue_is_perfectly_fair() -> None:
    r = three_jobs()
    r = replace(r, jobs=tuple(replace(j, queue="only") for j in r.jobs))
    s = summarize(r)
    assert list(s.per_queue) == ["only"]
    assert s.per_queue["only"].share == 1.0
    assert s.per_queue["only"].service_ratio == exact(74 / 70)
    assert s.per_queue["only"].stretch == exact(43 / 35)
    assert s.jain_vc_stretch == 1.0


def test_no_jobs_at_all() -> None:
    s = summarize(empty())
    assert (s.jobs, s.finished, s.unfinished, s.preemptions) == (0, 0, 0, 0)
    assert s.mean_jct_s is None and s.mean_queueing_delay_s is None
    assert s.makespan_s is None and s.avg_utilization is None
    assert s.per_queue == {} and s.jain_vc_stretch is None and s.jain_user_stretch is None
    assert s.worst_vc_mean_queueing_delay_s is None and s.max_rho is None
    assert s.lower_bound_mean_jct_s is None
    assert s.lost_gpu_hours == 0.0


def test_unfinished_jobs_count_in_makespan_start_but_not_its_end() -> None:
    r = three_jobs()
    early = JobRecord("early", "q2", 1, 100.0, -3.0, None, None)
    s = summarize(replace(r, jobs=(*r.jobs, early)))
    assert s.makespan_s == 30.0  # from the first submit (−3) to the last end (27)
    assert s.finished == 3 and s.unfinished == 1
    assert s.mean_jct_s == exact(43 / 3)
    assert s.lower_bound_mean_jct_s == exact(135 / 4)
