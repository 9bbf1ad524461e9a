"""Per virtual cluster: guaranteed GPUs, GPU-seconds borrowed above them, and how much of them
was used — every number worked out by hand from the jobs' run intervals."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from shoal.api import Node, PriorityClass, Resources, VirtualCluster
from shoal.scheduler import Profile
from shoal.sim.metrics import QueueShare, held_intervals, summarize
from shoal.sim.report import QUEUE_COLUMNS, queue_table, summary_json, write_html_report
from shoal.sim.result import HeldInterval, JobRecord, Sample, SimResult
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob

EXACT = SimConfig(cycle_on_events=True, check_invariants=True)
NEW_KEYS = {"min_gpus", "borrowed_gpu_seconds", "borrowed_share", "min_utilization"}
OLD_KEYS = {"gpu_seconds", "share", "demand_gpu_seconds", "service_ratio", "mean_jct_s"}
#: Issue 17's per-VC fairness figures (shoal.sim.fairness).
FAIRNESS_KEYS = {"stretch", "mean_queueing_delay_s"}


@dataclass(frozen=True)
class Cluster:
    nodes: Sequence[Node]
    virtual_clusters: Sequence[VirtualCluster] = ()
    priority_classes: Sequence[PriorityClass] = ()


def nodes(count: int, gpus: int) -> tuple[Node, ...]:
    return tuple(Node(f"n{i}", Resources.of(cpu=64_000, memory=65_536, gpu=gpus))
                 for i in range(count))


def vc(name: str, min_gpus: int) -> VirtualCluster:
    return VirtualCluster(name, min=Resources.of(gpu=min_gpus))


def job(name: str, queue: str, at: float, gpus: int, duration: float) -> TraceJob:
    return TraceJob(name, at, duration, 1, Resources.of(cpu=1000 * gpus, gpu=gpus),
                    queue=queue)


def simulated(jobs: list[TraceJob], cluster: Cluster, profile: str) -> SimResult:
    return simulate(Trace.of(jobs, "hand"), cluster, Profile.load(profile), EXACT)


def approx(x: float) -> Any:
    return pytest.approx(x, rel=1e-9, abs=1e-9)


# --- two teams with guarantees on 2 × 8 GPUs, and one without ------------------------------

def two_teams() -> SimResult:
    """2 nodes × 8 GPUs. VC `a` is guaranteed 8 GPUs, `b` 4, `c` none.

    t=0   a1 (a, 8 GPUs, 100 s), a2 (a, 4 GPUs, 50 s), b1 (b, 4 GPUs, 200 s) start: a holds
          12 (4 above its min: b's idle 4 are reserved for b, the other 4 are free to borrow)
    t=50  a2 ends: a holds 8
    t=60  c1 (c, 4 GPUs, 30 s) starts on the 4 idle GPUs
    t=90  c1 ends; t=100 a1 ends; t=200 b1 ends. Makespan window [0, 200].
    """
    cluster = Cluster(nodes(2, 8), (vc("a", 8), vc("b", 4), vc("c", 0)))
    return simulated([job("a1", "a", 0, 8, 100), job("a2", "a", 0, 4, 50),
                      job("b1", "b", 0, 4, 200), job("c1", "c", 60, 4, 30)],
                     cluster, "default")


def test_the_two_team_run_goes_as_planned() -> None:
    result = two_teams()
    runs = {j.name: (j.first_start, j.end, j.preemptions) for j in result.jobs}
    assert runs == {"a1": (0.0, 100.0, 0), "a2": (0.0, 50.0, 0), "b1": (0.0, 200.0, 0),
                    "c1": (60.0, 90.0, 0)}
    held = {j.name: j.held for j in result.jobs}
    assert held == {"a1": (HeldInterval(0.0, 100.0, 8),), "a2": (HeldInterval(0.0, 50.0, 4),),
                    "b1": (HeldInterval(0.0, 200.0, 4),), "c1": (HeldInterval(60.0, 90.0, 4),)}
    # The mins reach the result the way the weights do: one entry per VC below root.
    mins = dict(result.queue_min_gpus)
    assert (mins["a"], mins["b"], mins["c"]) == (8, 4, 0)


def test_borrowing_above_the_min() -> None:
    a = summarize(two_teams()).per_queue["a"]
    # in_use(a) = 12 on [0, 50), 8 on [50, 100): 4 above the min for 50 s.
    assert a.min_gpus == 8
    assert a.gpu_seconds == 8 * 100 + 4 * 50
    assert a.borrowed_gpu_seconds == approx(4 * 50)
    assert a.borrowed_share == approx(200 / 1000)
    # min(in_use, 8) = 8 on [0, 100), 0 after: 800 of 8 GPUs × 200 s.
    assert a.min_utilization == approx(8 * 100 / (8 * 200))


def test_a_vc_that_stays_within_its_min_borrows_nothing() -> None:
    b = summarize(two_teams()).per_queue["b"]
    assert b.min_gpus == 4
    assert b.borrowed_gpu_seconds == 0.0
    assert b.borrowed_share == 0.0
    assert b.min_utilization == approx(1.0)  # 4 GPUs for the whole 200 s window


def test_a_vc_without_a_min_borrows_all_it_uses() -> None:
    c = summarize(two_teams()).per_queue["c"]
    assert c.min_gpus == 0
    assert c.min_utilization is None
    assert c.gpu_seconds == 4 * 30
    assert c.borrowed_gpu_seconds == approx(c.gpu_seconds)
    assert c.borrowed_share == approx(1.0)


def test_a_trace_queue_the_cluster_does_not_declare_has_min_zero() -> None:
    shares = summarize(replace(two_teams(), queue_min_gpus=(("a", 8),))).per_queue
    assert shares["b"].min_gpus == 0 and shares["b"].min_utilization is None
    assert shares["b"].borrowed_gpu_seconds == approx(shares["b"].gpu_seconds)


# --- a preempted job: every run interval counts --------------------------------------------

def preempted() -> SimResult:
    """One 8-GPU node, profile `las` (thresholds 1 and 10 GPU-hours; it preempts within a
    VC). VC `x` (min 6) runs a (8 GPUs, 2,000 s) from 0; at 1,000 a has attained 8,000 GPU-s
    > 3,600 and b (also `x`, 4 GPUs, 100 s) preempts it. a loses its work and runs again
    1,100–3,100. in_use(x) = 8 on [0, 1000), 4 on [1000, 1100), 8 on [1100, 3100)."""
    cluster = Cluster(nodes(1, 8), (vc("x", 6),))
    return simulated([job("a", "x", 0, 8, 2000), job("b", "x", 1000, 4, 100)], cluster, "las")


def test_a_preempted_job_keeps_both_intervals() -> None:
    result = preempted()
    a = next(j for j in result.jobs if j.name == "a")
    assert (a.preemptions, a.end) == (1, 3100.0)
    assert a.held == (HeldInterval(0.0, 1000.0, 8), HeldInterval(1100.0, 3100.0, 8))
    assert a.gpu_seconds_used == approx(sum(h.gpus * (h.end - h.start) for h in a.held))


def test_borrowing_and_min_utilisation_across_a_preemption() -> None:
    s = summarize(preempted())
    x = s.per_queue["x"]
    assert s.makespan_s == 3100.0
    assert x.gpu_seconds == approx(8 * 1000 + 4 * 100 + 8 * 2000)
    # 2 above the min of 6 for 1,000 s and 2,000 s; below it while b runs.
    assert x.borrowed_gpu_seconds == approx(2 * 1000 + 2 * 2000)
    assert x.borrowed_share == approx(6000 / 24400)
    # min(in_use, 6) = 6, 4, 6 on the three intervals, over 6 GPUs × 3,100 s.
    assert x.min_utilization == approx((6 * 1000 + 4 * 100 + 6 * 2000) / (6 * 3100))


# --- hand-built records ---------------------------------------------------------------------

def hand_built(mins: tuple[tuple[str, int], ...]) -> SimResult:
    """Queue q: p holds 2 GPUs on [0, 10) and 6 on [10, 20) (resized), r holds 4 on [5, 30)
    after an eviction-free start; window [0, 30]. in_use = 2, 6, 10, 4 on [0,5) [5,10)
    [10,20) [20,30)."""
    p = JobRecord("p", "q", 6, 15.0, 0.0, 0.0, 20.0, 0, 2 * 10 + 6 * 10, 0.0,
                  (HeldInterval(0.0, 10.0, 2), HeldInterval(10.0, 20.0, 6)))
    r = JobRecord("r", "q", 4, 25.0, 0.0, 5.0, 30.0, 0, 4 * 25, 0.0,
                  (HeldInterval(5.0, 30.0, 4),))
    return SimResult("hand", "hand", 16, (p, r), (Sample(0.0, 0, 0, 0),), 4,
                     queue_min_gpus=mins)


@pytest.mark.parametrize(("min_gpus", "borrowed", "within"), [
    # Σ max(0, in_use − m) × dt and Σ min(in_use, m) × dt over [0,5) [5,10) [10,20) [20,30)
    (0, 2 * 5 + 6 * 5 + 10 * 10 + 4 * 10, 0),
    (4, 0 + 2 * 5 + 6 * 10 + 0, 2 * 5 + 4 * 5 + 4 * 10 + 4 * 10),
    (8, 0 + 0 + 2 * 10 + 0, 2 * 5 + 6 * 5 + 8 * 10 + 4 * 10),
    (16, 0, 2 * 5 + 6 * 5 + 10 * 10 + 4 * 10),
])
def test_overlapping_and_resized_intervals(min_gpus: int, borrowed: float,
                                           within: float) -> None:
    q = summarize(hand_built((("q", min_gpus),))).per_queue["q"]
    assert q.gpu_seconds == 180
    assert q.borrowed_gpu_seconds == approx(borrowed)
    assert q.borrowed_share == approx(borrowed / 180)
    if min_gpus == 0:
        assert q.min_utilization is None
    else:
        assert q.min_utilization == approx(within / (min_gpus * 30))


def test_a_record_without_intervals_is_one_run_from_its_first_start() -> None:
    bare = JobRecord("j", "q", 4, 10.0, 0.0, 3.0, 13.0, 0, 40.0, 0.0)
    assert held_intervals(bare) == (HeldInterval(3.0, 13.0, 4),)
    assert held_intervals(JobRecord("n", "q", 4, 10.0, 0.0, None, None)) == ()


def test_nothing_used_gives_no_borrowed_share() -> None:
    never = JobRecord("n", "q", 4, 10.0, 0.0, None, None)
    done = JobRecord("d", "other", 1, 10.0, 0.0, 0.0, 10.0, 0, 10.0, 0.0,
                     (HeldInterval(0.0, 10.0, 1),))
    s = summarize(SimResult("p", "t", 4, (never, done), (Sample(0.0, 1, 1, 1),), 2,
                            queue_min_gpus=(("q", 2),)))
    q = s.per_queue["q"]
    assert (q.gpu_seconds, q.borrowed_gpu_seconds, q.borrowed_share) == (0.0, 0.0, None)
    assert q.min_utilization == 0.0  # guaranteed 2 GPUs for 10 s, used none of them


# --- outputs ---------------------------------------------------------------------------------

def test_json_per_queue_has_old_and_new_keys() -> None:
    doc = json.loads(summary_json(summarize(two_teams())))
    assert set(doc["per_queue"]) == {"a", "b", "c"}
    for q in doc["per_queue"].values():
        assert set(q) == OLD_KEYS | NEW_KEYS | FAIRNESS_KEYS
        # every job of the two-team run starts on arrival and runs through
        assert (q["stretch"], q["mean_queueing_delay_s"]) == (1.0, 0.0)
    a, c = doc["per_queue"]["a"], doc["per_queue"]["c"]
    assert (a["min_gpus"], a["borrowed_gpu_seconds"], a["borrowed_share"],
            a["min_utilization"]) == (8, 200.0, 0.2, 0.5)
    assert c["min_utilization"] is None and c["borrowed_gpu_seconds"] == c["gpu_seconds"]
    assert set(NEW_KEYS) <= {f.name for f in fields(QueueShare)}


def test_text_and_html_per_queue_tables_show_the_new_columns(tmp_path: Path) -> None:
    summary = summarize(two_teams())
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(queue_table(summary))
    text = console.export_text()
    for column in ("min GPUs", "borrowed share", "min utilisation"):
        assert column in QUEUE_COLUMNS and column in text
    row_a = next(line for line in text.splitlines() if line.strip("│ ").startswith("a "))
    assert "20.0 %" in row_a and "50.0 %" in row_a
    page = write_html_report([two_teams()], tmp_path / "report.html").read_text()
    assert "<th>borrowed GPU-hours</th>" in page and "0.06 GPU-h" in page  # 200 GPU-s
    assert "<th>borrowed share</th>" in page and "<th>min utilisation</th>" in page


# --- a flexible part kept for its virtual cluster's idle time -------------------------------

@pytest.mark.parametrize(("timeout", "starts"), [
    # tune's first trial ends at 100. Without an idle timeout `other` starts then, and tune's
    # second trial (150) waits for it; with 600 s the 8 GPUs stay tune's: its second trial
    # starts at once, and `other` only 600 s after they last fell idle (250 + 600).
    (0.0, {"trial-1": 0.0, "other": 100.0, "trial-2": 200.0}),
    (600.0, {"trial-1": 0.0, "trial-2": 150.0, "other": 850.0}),
])
def test_a_kept_flexible_part_serves_its_vcs_next_job_first(
        timeout: float, starts: dict[str, float]) -> None:
    tune = VirtualCluster("tune", idle_timeout=timeout)
    result = simulated([job("trial-1", "tune", 0.0, 8, 100.0),
                        job("other", "default", 10.0, 8, 100.0),
                        job("trial-2", "tune", 150.0, 8, 100.0)],
                       Cluster(nodes(1, 8), [tune]), "default")
    assert {r.name: r.first_start for r in result.jobs} == starts


def test_tasks_on_fixed_size_nodes_count_as_busy_gpus() -> None:
    # tune's 4 fixed GPUs hold its trial; the quota tree does not see it, the samples must.
    from shoal.api import FixedSizeNode, FixedSizeNodes

    tune = VirtualCluster("tune", fixed_size_nodes=(FixedSizeNodes(
        (FixedSizeNode(Resources.of(cpu=4000, gpu=4)),)),))
    result = simulated([job("trial", "tune", 0.0, 4, 100.0),
                        job("other", "default", 0.0, 4, 100.0)],
                       Cluster(nodes(1, 8), [tune]), "default")  # invariants checked
    assert {r.name: r.first_start for r in result.jobs} == {"trial": 0.0, "other": 0.0}
    assert max(s.busy_gpus for s in result.samples) == 8
