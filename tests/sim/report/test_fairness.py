"""`shoal.sim.fairness`: stretch, Jain's index over stretch, the worst virtual cluster's
queueing delay and finish-time fairness ρ, each on a tiny job list computed by hand."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from shoal.api import Node, PriorityClass, Resources, VirtualCluster
from shoal.scheduler import Profile
from shoal.sim.fairness import (
    ActiveJobs,
    by_queue,
    by_user,
    fairness,
    finish_time_fairness,
    first_cycle_latency,
    group_stretch,
    jain_stretch,
    job_stretch,
    worst_mean,
    worst_mean_queueing_delay,
)
from shoal.sim.metrics import summarize
from shoal.sim.result import JobRecord, SimResult
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob


def exact(x: float | None) -> Any:
    return pytest.approx(x)


def job(name: str, queue: str, gpus: int, duration: float, submit: float,
        start: float | None, end: float | None, user: str | None = None) -> JobRecord:
    return JobRecord(name, queue, gpus, duration, submit, start, end, user=user)


# Two VCs on an 8-GPU cluster. "fast" runs both its jobs on arrival; "slow" waits 90 s for
# its one job. Every job finishes, so each got all the GPU-seconds it asked for.
FAST_A = job("a", "fast", 4, 10.0, 0.0, 0.0, 10.0, user="ann")
FAST_B = job("b", "fast", 4, 30.0, 0.0, 0.0, 30.0, user="bob")
SLOW_C = job("c", "slow", 8, 10.0, 0.0, 90.0, 100.0, user="ann")
JOBS = (FAST_A, FAST_B, SLOW_C)


def test_job_stretch() -> None:
    assert job_stretch(FAST_A) == 1.0
    assert job_stretch(SLOW_C) == 10.0  # JCT 100 ÷ duration 10
    assert job_stretch(job("u", "q", 1, 5.0, 0.0, 1.0, None)) is None  # unfinished
    assert job_stretch(job("z", "q", 1, 0.0, 0.0, 0.0, 0.0)) is None   # no duration


def test_group_stretch_is_mean_jct_over_mean_duration() -> None:
    # not the mean of per-job stretches: (10 + 40) / 2 ÷ (10 + 10) / 2 = 2.5, not (1 + 4) / 2
    late = job("d", "fast", 1, 10.0, 0.0, 30.0, 40.0)
    assert group_stretch([FAST_A, late]) == 2.5
    assert group_stretch([FAST_A, FAST_B]) == 1.0
    assert group_stretch([job("u", "q", 1, 5.0, 0.0, 1.0, None)]) is None
    assert group_stretch([]) is None
    # unfinished jobs are left out of both means
    assert group_stretch([SLOW_C, job("u", "slow", 1, 500.0, 0.0, None, None)]) == 10.0


def test_jain_over_vc_stretch_sees_the_waiting_vc() -> None:
    # stretches: fast 1, slow 10 → (11)² / (2·(1 + 100)) = 121 / 202
    assert jain_stretch(by_queue(JOBS)) == exact(121 / 202)
    s = summarize(SimResult("p", "t", 8, JOBS, (), 0))
    assert s.jain_vc_stretch == exact(121 / 202)
    # the service ratio of every VC is 1 here: a service-based index would read 1.0
    assert all(q.service_ratio in (None, 1.0) or q.gpu_seconds == 0
               for q in s.per_queue.values())


def test_jain_over_user_stretch() -> None:
    # ann: a and c, mean JCT 55 ÷ mean duration 10 = 5.5; bob: b, 1 → 6.5² / (2·(30.25 + 1))
    assert jain_stretch(by_user(JOBS)) == exact(6.5**2 / (2 * 31.25))
    assert list(by_user(JOBS)) == ["ann", "bob"]
    # jobs without a user are left out; no users at all: no index
    anonymous = tuple(job(j.name, j.queue, j.gpus, j.duration, j.submit, j.first_start, j.end)
                      for j in JOBS)
    assert by_user(anonymous) == {}
    assert fairness(anonymous, 8).jain_user_stretch is None


def test_equal_stretches_are_perfectly_fair() -> None:
    both_wait = (job("a", "x", 1, 10.0, 0.0, 10.0, 20.0), job("b", "y", 1, 40.0, 0.0, 40.0, 80.0))
    assert jain_stretch(by_queue(both_wait)) == 1.0  # both stretch 2


def test_worst_vc_mean_queueing_delay() -> None:
    # fast: (0 + 0) / 2; slow: 90
    assert worst_mean_queueing_delay(JOBS) == 90.0
    # never-started jobs do not count; a VC with none started has no mean
    waiting = job("w", "idle", 1, 1.0, 0.0, None, None)
    assert worst_mean_queueing_delay((*JOBS, waiting)) == 90.0
    assert worst_mean_queueing_delay((waiting,)) is None
    mixed = (job("p", "q", 1, 1.0, 0.0, 30.0, 31.0), job("r", "q", 1, 1.0, 0.0, 10.0, 11.0),
             job("s", "v", 1, 1.0, 5.0, 30.0, 31.0))
    assert worst_mean_queueing_delay(mixed) == 25.0  # q 20, v 25
    # any per-job wait gets its worst group the same way
    assert worst_mean(by_queue(mixed), lambda j: j.end) == 31.0


def test_active_jobs_step_function() -> None:
    active = ActiveJobs(JOBS)  # 3 on [0, 10), 2 on [10, 30), 1 on [30, 100), 0 after
    assert [active.at(t) for t in (-1.0, 0.0, 9.9, 10.0, 30.0, 100.0)] == [0, 3, 3, 2, 1, 0]
    assert active.mean(0.0, 10.0) == 3.0
    assert active.mean(0.0, 100.0) == exact((30 + 40 + 70) / 100)
    assert active.mean(10.0, 10.0) == 2.0  # zero-length: the count at that instant
    # an unfinished job stays active
    forever = ActiveJobs((job("u", "q", 1, 5.0, 2.0, None, None),))
    assert forever.mean(2.0, 1_000.0) == 1.0


def test_finish_time_fairness_by_hand() -> None:
    rho = finish_time_fairness(JOBS, 8)
    # a: N = 3 over [0, 10]; 1/N share = 8/3 GPUs < 4 → 10 × 4·3/8 = 15; ρ = 10/15
    assert rho["a"].contention == 3.0
    assert rho["a"].independent_jct == exact(15.0)
    assert rho["a"].rho == exact(2 / 3)
    # b: N = (30 + 40) / 30 over [0, 30]; 30 × 4·(7/3)/8 = 35; ρ = 30/35
    assert rho["b"].contention == exact(7 / 3)
    assert rho["b"].rho == exact(30 / 35)
    # c: N = 140/100 over [0, 100]; 10 × 8·1.4/8 = 14; ρ = 100/14
    assert rho["c"].rho == exact(100 / 14)
    f = fairness(JOBS, 8)
    assert f.max_rho == exact(100 / 14)
    assert f.frac_rho_gt_1 == exact(1 / 3)


def test_finish_time_fairness_share_larger_than_the_request_does_not_speed_up() -> None:
    alone = job("x", "q", 1, 50.0, 0.0, 0.0, 50.0)
    rho = finish_time_fairness((alone,), 8)["x"]
    assert (rho.contention, rho.independent_jct, rho.rho) == (1.0, 50.0, 1.0)
    assert fairness((alone,), 8).frac_rho_gt_1 == 0.0  # ρ = 1 is not > 1


def test_finish_time_fairness_edge_cases() -> None:
    assert finish_time_fairness(JOBS, 0) == {}
    assert fairness(JOBS, 0).max_rho is None
    unfinished = job("u", "q", 1, 5.0, 0.0, 1.0, None)
    instant = job("i", "q", 2, 3.0, 4.0, 4.0, 4.0)  # zero JCT: N at its submission
    rho = finish_time_fairness((unfinished, instant), 2)
    assert set(rho) == {"i"}
    assert rho["i"].contention == 2.0  # u and i active at t=4
    assert rho["i"].rho == 0.0
    f = fairness((), 8)
    assert (f.jain_vc_stretch, f.jain_user_stretch, f.worst_vc_mean_queueing_delay_s,
            f.max_rho, f.frac_rho_gt_1) == (None, None, None, None, None)


def test_first_cycle_latency() -> None:
    assert first_cycle_latency(1.0, 5.0) == 4.0
    assert first_cycle_latency(5.0, 5.0) == 0.0  # a cycle at the very instant
    assert first_cycle_latency(7.5, 0.0) == 0.0  # cycles on every event


def test_finish_time_fairness_allows_for_the_first_cycle() -> None:
    # submitted at 1, started at the 5-second cycle, ran 10 s: the best its own share gives
    prompt = job("p", "q", 1, 10.0, 1.0, 5.0, 15.0)
    assert finish_time_fairness((prompt,), 8)["p"].rho == exact(14 / 10)  # no latency: > 1
    with_cycles = finish_time_fairness((prompt,), 8, cycle_interval=5.0)["p"]
    assert with_cycles.independent_jct == 14.0 and with_cycles.rho == 1.0
    assert fairness((prompt,), 8, cycle_interval=5.0).frac_rho_gt_1 == 0.0
    # one more cycle of waiting is unfair: ρ = 19/14
    late = job("l", "q", 1, 10.0, 1.0, 10.0, 20.0)
    assert fairness((late,), 8, cycle_interval=5.0).frac_rho_gt_1 == 1.0
    assert fairness((late,), 8, cycle_interval=5.0).max_rho == exact(19 / 14)


@dataclass(frozen=True)
class Cluster:
    nodes: Sequence[Node]
    virtual_clusters: Sequence[VirtualCluster] = ()
    priority_classes: Sequence[PriorityClass] = ()


def one_node() -> Cluster:
    return Cluster((Node("n0", Resources.of(cpu=64_000, memory=65_536, gpu=4)),))


@pytest.mark.parametrize(("config", "interval"), [(SimConfig(), 5.0),
                                                  (SimConfig(cycle_interval=2.0), 2.0),
                                                  (SimConfig(cycle_on_events=True), 0.0)])
def test_the_simulator_records_users_and_its_cycle(config: SimConfig, interval: float) -> None:
    # 2 then 4 GPUs on 4 GPUs: "second" waits for "first"; users from the trace
    jobs = [TraceJob("first", 1.0, 10.0, 1, Resources.of(cpu=2000, gpu=2), user="ann"),
            TraceJob("second", 2.0, 10.0, 1, Resources.of(cpu=4000, gpu=4), user="bob")]
    result = simulate(Trace.of(jobs, "hand"), one_node(), Profile.load("default"), config)
    assert result.cycle_interval == interval
    assert {j.name: j.user for j in result.jobs} == {"first": "ann", "second": "bob"}
    s = summarize(result)
    # "first" starts at its first cycle and its 2 GPUs are within a half share (N < 2):
    # ρ = 1; "second" waits for it to end, longer than its half share would take: ρ > 1
    rho = finish_time_fairness(result.jobs, 4, interval)
    assert rho["first"].rho == exact(1.0)
    assert rho["second"].rho > 1 and s.frac_rho_gt_1 == 0.5
    assert s.jain_user_stretch is not None and s.jain_user_stretch < 1
