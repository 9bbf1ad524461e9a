"""The multi-cluster what-if on hand-computed races: two one-node members (hi, priority 90;
lo, priority 10), a blocker that holds hi for 50 s, and a job from lo that arrives at 10 s.
Cycles every 5 s; the dispatcher polls every 10 s. Also: the steppable member decides
exactly what `Simulator.run` decides."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from shoal.api import Node, PriorityClass, Resources, VirtualCluster
from shoal.api.federation import ClusterKind, MemberCluster
from shoal.scheduler import Profile
from shoal.sim.multicluster import (
    McConfig,
    McJob,
    McPolicy,
    MultiClusterSim,
    SimMember,
    simulate_multicluster,
)
from shoal.sim.multicluster_member import MemberSimulator
from shoal.sim.multicluster_report import summarize
from shoal.sim.simulator import simulate
from shoal.sim.trace import Trace, TraceJob


@dataclass(frozen=True)
class Cluster:
    nodes: Sequence[Node]
    virtual_clusters: Sequence[VirtualCluster] = ()
    priority_classes: Sequence[PriorityClass] = ()


def nodes(count: int = 1, gpus: int = 4) -> Cluster:
    return Cluster(tuple(Node(f"n{i}", Resources.of(cpu=64_000, memory=65_536, gpu=gpus))
                         for i in range(count)))


def job(name: str, at: float, gpus: int, duration: float) -> TraceJob:
    return TraceJob(name, at, duration, 1, Resources.of(cpu=1000 * gpus, gpu=gpus))


def member(alias: str, priority: int, speed: float = 1.0) -> SimMember:
    return SimMember(MemberCluster(alias, f"sim://{alias}", ClusterKind.SHOAL,
                                   priority=priority), nodes(), speed)


MEMBERS = (member("hi", 90), member("lo", 10))
JOBS = (McJob(job("blocker", 0, 4, 50), "hi"), McJob(job("j", 10, 4, 100), "lo"))
FIFO = Profile.load("fifo")


def run(policy: McPolicy, *, guard: float = 30, scale: float = 1.0, poll: float = 10,
        members: tuple[SimMember, ...] = MEMBERS) -> dict[str, tuple[str | None, float | None,
                                                                     float | None, float]]:
    result = simulate_multicluster(JOBS, members, FIFO,
                                   McConfig(policy, guard_time_running=guard, time_scale=scale,
                                            poll_interval=poll))
    return {r.name: (r.cluster, r.start, r.end, r.wasted_gpu_seconds) for r in result.records}


# name -> (kept on, start, end, wasted GPU-seconds of its other copies)
TABLE = [
    pytest.param(McPolicy.SINGLE, {}, {"blocker": ("hi", 0, 50, 0), "j": ("lo", 10, 110, 0)},
                 id="single-each-job-stays-home"),
    # blocker: both copies start at 0, tie goes to hi at its guard end (30): lo's copy ran
    # 30 s × 4 GPUs. j: its lo copy starts at 30 when that frees lo, its hi copy at 50;
    # lo's started first and wins at 60: hi's copy ran 10 s × 4 GPUs.
    pytest.param(McPolicy.FAC, {}, {"blocker": ("hi", 0, 50, 120), "j": ("lo", 30, 130, 40)},
                 id="fac-earliest-running-after-guard"),
    # blocker: hi runs at 0, lo's copy is cancelled at once (0 GPU-seconds). j: lo's copy
    # runs at 10; hi's survives (90 - 10) × 1 s = 80 s, runs at 50 and wins: lo's copy is
    # cancelled at once after 40 s × 4 GPUs.
    pytest.param(McPolicy.FAC_PRIORITY, {}, {"blocker": ("hi", 0, 50, 0),
                                             "j": ("hi", 50, 150, 160)},
                 id="fac-priority-higher-runs-inside-its-window-and-wins"),
    # Polled every 30 s, the cancel of lo's copy of j waits for the poll at 60: 50 s × 4.
    pytest.param(McPolicy.FAC_PRIORITY, {"poll": 30}, {"blocker": ("hi", 0, 50, 0),
                                                       "j": ("hi", 50, 150, 200)},
                 id="fac-priority-cancels-act-at-the-next-poll"),
    # The same with a window of 80 × 0.25 = 20 s: hi's copy of j is cancelled at 30
    # (before it started), j stays on lo and wins after its guard.
    pytest.param(McPolicy.FAC_PRIORITY, {"scale": 0.25},
                 {"blocker": ("hi", 0, 50, 0), "j": ("lo", 10, 110, 0)},
                 id="fac-priority-window-runs-out-before-hi-frees"),
]


@pytest.mark.parametrize(("policy", "knobs", "want"), TABLE)
def test_hand_computed_races(policy: McPolicy, knobs: dict[str, float],
                             want: dict[str, tuple[str, float, float, float]]) -> None:
    assert run(policy, **knobs) == want


def test_summary_counts_queueing_waste_and_preference() -> None:
    result = simulate_multicluster(JOBS, MEMBERS, FIFO,
                                   McConfig(McPolicy.FAC_PRIORITY, guard_time_running=30,
                                            time_scale=1.0, poll_interval=10))
    s = summarize(result)
    assert (s.jobs, s.finished) == (2, 2)
    assert s.mean_queueing_delay_s == (0 + 40) / 2
    assert s.mean_jct_s == (50 + 140) / 2
    assert s.preferred_cluster_share == 1.0
    # 200 + 400 kept, 160 of j's lo copy wasted.
    assert (s.gpu_seconds, s.wasted_gpu_seconds) == (760.0, 160.0)
    assert s.wasted_gpu_seconds_fraction == round(160 / 760, 6)
    assert s.by_cluster == {"hi": 2, "lo": 0}
    assert s.cancels == 2 and s.cancelled_after_start == 2


def test_a_copy_works_at_its_members_speed() -> None:
    fast = (member("hi", 90, speed=2.0), member("lo", 10))
    got = run(McPolicy.SINGLE, members=fast)
    # blocker's home is hi (speed 2): its 50 s at home stay 50 s there.
    assert got["blocker"] == ("hi", 0, 50, 0)
    got = run(McPolicy.FAC_PRIORITY, members=fast)
    # j came from lo (speed 1): on hi (speed 2) its 100 s take 50 s.
    assert got["j"] == ("hi", 50, 100, 160)


def test_bad_inputs_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"jobs\[j\]\.home: 'nowhere' is not a member"):
        MultiClusterSim((McJob(job("j", 0, 1, 1), "nowhere"),), MEMBERS, FIFO,
                        McConfig(McPolicy.FAC))
    with pytest.raises(ValueError, match="poll_interval: must be a positive number"):
        McConfig(McPolicy.FAC, poll_interval=0)
    with pytest.raises(ValueError, match=r"members\[x\]\.speed: must be a positive number"):
        member("x", 1, speed=0)


def test_stepping_a_member_decides_what_a_whole_run_decides() -> None:
    trace = Trace(tuple(job(f"j{i}", i * 7.0, 1 + i % 4, 30.0 + 11 * (i % 5))
                        for i in range(40)), "stepped")
    whole = simulate(trace, nodes(2), FIFO)
    stepped = MemberSimulator(trace, nodes(2), FIFO)
    for j in trace.jobs:
        stepped.submit(j.name, j.submit_time)
    t = 0.0
    while stepped.next_event() is not None:
        t += 13.0
        stepped.advance(t)
    by_name = {r.name: (r.first_start, r.end) for r in whole.jobs}
    assert {n: (r.first_start, r.end) for n, r in stepped.runs.items()} == by_name


def test_cancelling_a_running_copy_frees_its_gpus_at_once() -> None:
    trace = Trace((job("a", 0, 4, 100), job("b", 0, 4, 10)), "cancel")
    sim = MemberSimulator(trace, nodes(), FIFO)
    sim.submit("a", 0)
    sim.submit("b", 0)
    sim.advance(20)
    assert sim.copy("a").state.value == "RUNNING" and sim.copy("b").started is None
    sim.cancel("a", 20)
    sim.advance(40)
    a, b = sim.copy("a"), sim.copy("b")
    assert (a.state.value, a.ended, a.gpu_seconds) == ("STOPPED", 20, 80)
    assert (b.state.value, b.started, b.ended) == ("SUCCEEDED", 20, 30)
