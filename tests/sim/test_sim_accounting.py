"""The simulator's usage report (issue 21): computed by the same accounting code as the
server's, from the simulated jobs' GPU intervals. As a property over random traces with
preemption and time limits, the report's GPU-seconds equal the integral of the cluster's
busy GPUs over time (read from the run's samples, not from the job records); a preempted
task's GPUs count as wasted (preempted), a timed-out job's as wasted (failed); and
`shoal sim run --usage-report` writes the report as JSON or CSV."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from shoal.api import Node, PriorityClass, Resources
from shoal.api.accounting import GroupBy, Outcome, Step
from shoal.cli.main import app
from shoal.scheduler import Profile
from shoal.sim.result import SimResult
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob
from shoal.sim.usage_report import result_attempts, sim_usage_report

PREEMPTING = Profile.from_dict({"actions": "enqueue, allocate, preempt", "tiers": [
    {"plugins": [{"name": "priority"}, {"name": "gang"}]},
    {"plugins": [{"name": "predicates"}, {"name": "capacity"}, {"name": "placement"}]}]},
    "test.profileSpec")
CLASSES = (PriorityClass("low", 10), PriorityClass("high", 1000))


class Cluster:
    nodes = (Node("n0", Resources.of(cpu=64_000, memory=65_536, gpu=8)),
             Node("n1", Resources.of(cpu=64_000, memory=65_536, gpu=4)))
    virtual_clusters = ()
    priority_classes = CLASSES


def run(jobs: list[TraceJob], profile: Profile = PREEMPTING) -> SimResult:
    return simulate(Trace.of(jobs, "hand"), Cluster(), profile,
                    SimConfig(cycle_on_events=True, check_invariants=True))


def busy_integral(result: SimResult) -> float:
    """∫ busy GPUs dt over the run, from its samples (a sample is taken at every change;
    the cluster is idle after the last one once every job has ended)."""
    samples = result.samples
    return sum(a.busy_gpus * (b.time - a.time) for a, b in itertools.pairwise(samples))


@st.composite
def traces(draw: st.DrawFn) -> list[TraceJob]:
    jobs = []
    for i in range(draw(st.integers(1, 10))):
        replicas = draw(st.integers(1, 3))
        gpus = draw(st.integers(1, 4))
        jobs.append(TraceJob(
            f"j{i}", float(draw(st.integers(0, 300))), float(draw(st.integers(1, 400))),
            replicas, Resources.of(cpu=1000, gpu=gpus),
            priority_class=draw(st.sampled_from(["low", "high"])),
            gang=draw(st.booleans()), user=draw(st.sampled_from(["ann", "bob"])),
            time_limit=draw(st.none() | st.integers(50, 500).map(float))))
    return jobs


@settings(max_examples=40, deadline=None)
@given(traces())
def test_recorded_gpu_seconds_equal_the_integral_of_allocations(trace: list[TraceJob]
                                                                 ) -> None:
    result = run(trace)
    report = sim_usage_report(result, GroupBy.USER, Step.HOUR)
    assert report.total.gpu_seconds == pytest.approx(busy_integral(result), abs=1e-6)
    assert sum(r.gpu_seconds for r in report.rows) == pytest.approx(report.total.gpu_seconds)
    assert sum(p.gpu_seconds for p in report.total.series) == \
        pytest.approx(report.total.gpu_seconds)
    # Nothing is wasted by preemption where nothing was preempted.
    if not any(r.preemptions for r in result.jobs):
        assert report.total.wasted[Outcome.PREEMPTED] == 0
    if not any(r.timed_out for r in result.jobs):
        assert report.total.wasted[Outcome.FAILED] == 0


def test_a_preempted_task_is_wasted_and_a_timed_out_job_failed() -> None:
    low = TraceJob("low", 0.0, 1000.0, 1, Resources.of(cpu=1000, gpu=8),
                   priority_class="low")
    high = TraceJob("high", 100.0, 200.0, 1, Resources.of(cpu=1000, gpu=8),
                    priority_class="high")
    capped = TraceJob("capped", 0.0, 1000.0, 1, Resources.of(cpu=1000, gpu=4),
                      priority_class="high", time_limit=50.0)
    result = run([low, high, capped])
    attempts = {(a.job, a.outcome): a for a in result_attempts(result)}
    evicted = attempts["low", Outcome.PREEMPTED]
    assert (evicted.start, evicted.end, evicted.gpus) == (0.0, 100.0, 8)
    assert attempts["capped", Outcome.FAILED].end == 50.0
    report = sim_usage_report(result, GroupBy.JOB)
    rows = {r.key: r for r in report.rows}
    assert rows["low"].wasted[Outcome.PREEMPTED] == 800.0
    assert rows["capped"].wasted == {Outcome.PREEMPTED: 0.0, Outcome.FAILED: 200.0}
    assert rows["high"].gpu_seconds == 1600.0 and rows["high"].wasted[Outcome.FAILED] == 0


def test_sim_run_writes_the_usage_report(tmp_path: Path) -> None:
    trace = Path(__file__).parents[2] / "examples" / "traces" / "philly-sample.csv"
    runner = CliRunner()
    written = tmp_path / "usage.json"
    result = runner.invoke(app, ["sim", "run", "-t", str(trace), "-c", "4x8", "-p", "fifo",
                                 "-n", "20", "--usage-report", str(written),
                                 "--usage-step", "day"])
    assert result.exit_code == 0, result.output
    data = json.loads(written.read_text())
    assert data["by"] == "queue" and data["step"] == "day"
    assert data["total"]["gpuSeconds"] > 0
    assert sum(p["gpuSeconds"] for p in data["total"]["series"]) == \
        pytest.approx(data["total"]["gpuSeconds"])
    as_csv = tmp_path / "usage.csv"
    result = runner.invoke(app, ["sim", "run", "-t", str(trace), "-c", "4x8", "-p", "fifo",
                                 "-n", "20", "--usage-report", str(as_csv), "--usage-by",
                                 "user"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(as_csv.read_text().splitlines()))
    assert rows[-1]["key"] == "total"
    assert float(rows[-1]["gpu_seconds"]) == pytest.approx(data["total"]["gpuSeconds"])
