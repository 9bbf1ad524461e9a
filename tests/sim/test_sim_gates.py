"""Gates in the simulator (`shoal.scheduler.gates`, driven as the control loop drives them):
a job with `dependsOn` enters the model at the instant its last dependency finishes, a held
job never runs, and a native trace's dependencies must name jobs of the trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoal.api import Node, Resources
from shoal.scheduler import Profile
from shoal.sim.inputs import load_trace
from shoal.sim.result import JobRecord, SimResult
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceError, TraceJob

EXAMPLE = Path(__file__).parents[2] / "examples" / "gates" / "pipeline-trace.yaml"


class Cluster:
    def __init__(self, gpus: int = 8) -> None:
        self.nodes = (Node("n0", Resources.of(cpu=64_000, memory=262_144, gpu=gpus)),)
        self.virtual_clusters = ()
        self.priority_classes = ()


def run(trace: Trace, **config: object) -> dict[str, JobRecord]:
    result: SimResult = simulate(trace, Cluster(), Profile.default(),
                                 SimConfig(check_invariants=True, **config))  # type: ignore[arg-type]
    return {j.name: j for j in result.jobs}


def job(name: str, at: float, duration: float, *deps: str, gpus: int = 1,
        held: bool = False) -> TraceJob:
    return TraceJob(name, at, duration, 1, Resources.of(cpu=1000, gpu=gpus),
                    depends_on=deps, held=held)


@pytest.mark.parametrize("on_events", [True, False])
def test_a_dependent_starts_at_the_instant_its_dependencies_finished(on_events: bool) -> None:
    jobs = run(Trace.of([job("a", 0, 100), job("b", 0, 300), job("c", 0, 50, "a", "b"),
                         job("d", 10, 20, "c")], "hand"), cycle_on_events=on_events)
    a, b, c, d = (jobs[n] for n in "abcd")
    assert a.end is not None and b.end is not None and c.end is not None
    assert c.first_start is not None and c.first_start >= max(a.end, b.end)
    assert d.first_start is not None and d.first_start >= c.end
    if on_events:  # a cycle at the completion: it starts at that very instant
        assert c.first_start == pytest.approx(300)
        assert d.first_start == pytest.approx(350)


def test_a_held_job_and_its_dependents_never_run_and_the_run_still_ends() -> None:
    jobs = run(Trace.of([job("a", 0, 100), job("h", 0, 10, held=True),
                         job("after-h", 0, 10, "h")], "hand"), cycle_on_events=True)
    assert jobs["a"].end == pytest.approx(100)
    assert jobs["h"].first_start is None and jobs["h"].end is None
    assert jobs["after-h"].first_start is None


def test_a_dependency_arriving_later_is_waited_for() -> None:
    jobs = run(Trace.of([job("early", 0, 10, "late"), job("late", 500, 100)], "hand"),
               cycle_on_events=True)
    assert jobs["early"].first_start == pytest.approx(600)


def test_the_example_pipeline_runs_its_stages_in_order() -> None:
    trace = load_trace(EXAMPLE, gpus_per_node=8)
    jobs = run(trace, cycle_on_events=True)
    pre, train, evaluate = jobs["preprocess"], jobs["train"], jobs["evaluate"]
    assert train.first_start == pytest.approx(pre.end)
    assert evaluate.first_start == pytest.approx(train.end)
    assert jobs["other"].first_start == pytest.approx(100)  # nothing holds it back
    assert jobs["parked"].first_start is None


def test_a_trace_dependency_on_no_job_of_the_trace_is_an_error(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace("dependsOn: [train]", "dependsOn: [trian]")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(TraceError) as caught:
        load_trace(bad, gpus_per_node=8)
    message = str(caught.value)
    assert "spec.dependsOn[0]" in message and "no job 'trian' in the trace" in message
    assert f"bad.yaml:{text.splitlines().index('  dependsOn: [trian]') + 1}" in message
