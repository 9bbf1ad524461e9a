"""Imported job documents in a native trace (`shoal.sim.loaders.native`): a Volcano Job, a
Kubernetes Job and a Sedna learning job with `arrivalTime` and `duration` in their
`metadata` replay like native jobs; every job one document becomes arrives with it, and the
learning job's phases run one after the other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from shoal.api import Node, Resources
from shoal.api.objects import NODE_ROLE_LABEL
from shoal.scheduler import Profile
from shoal.sim.loaders.native import load_native as load_trace
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import TraceError

EXAMPLES = Path(__file__).parents[3] / "examples"


def timed(path: Path, arrival: float, duration: float) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    data["metadata"] = {**data["metadata"], "arrivalTime": arrival, "duration": duration}
    return data


class Cluster:
    def __init__(self) -> None:
        self.nodes = (
            Node("cloud-0", Resources.of(cpu=8000, memory=16384),
                 labels={NODE_ROLE_LABEL: "cloud"}),
            Node("edge-0", Resources.of(cpu=1000, memory=1024),
                 labels={NODE_ROLE_LABEL: "edge"}))
        self.virtual_clusters = ()
        self.priority_classes = ()


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    docs = [timed(EXAMPLES / "imports" / "kueue-job.yaml", 0, 100),
            timed(EXAMPLES / "sedna" / "incremental-learning.yaml", 10, 50)]
    path = tmp_path / "trace.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def test_imported_jobs_load_with_their_arrival_and_duration(trace_file: Path) -> None:
    trace = load_trace(trace_file)
    jobs = {j.name: j for j in trace.jobs}
    assert set(jobs) == {"sample-kueue", "incremental-train", "incremental-eval",
                         "incremental-deploy"}
    kueue = jobs["sample-kueue"]
    assert (kueue.submit_time, kueue.duration, kueue.replicas) == (0.0, 100.0, 2)
    assert kueue.priority_class == "production"
    for phase in ("train", "eval"):
        assert (jobs[f"incremental-{phase}"].submit_time,
                jobs[f"incremental-{phase}"].duration) == (10.0, 50.0)
    assert jobs["incremental-eval"].depends_on == ("incremental-train",)
    assert jobs["incremental-deploy"].depends_on == ("incremental-eval",)
    assert jobs["incremental-deploy"].service is not None  # serves until the trace ends


def test_the_phases_replay_in_order(trace_file: Path) -> None:
    result = simulate(load_trace(trace_file), Cluster(), Profile.default(),  # type: ignore[arg-type]
                      SimConfig(check_invariants=True, cycle_on_events=True))
    records = {j.name: j for j in result.jobs}
    train, evaluate = records["incremental-train"], records["incremental-eval"]
    assert train.first_start == pytest.approx(10) and train.end == pytest.approx(60)
    assert evaluate.first_start == pytest.approx(60) and evaluate.end == pytest.approx(110)
    assert records["sample-kueue"].end == pytest.approx(100)


def test_an_imported_document_without_its_trace_fields_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "trace.yaml"
    data = timed(EXAMPLES / "imports" / "volcano-job.yaml", 0, 10)
    del data["metadata"]["duration"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(TraceError, match=r"metadata\.duration"):
        load_trace(path)


def test_an_imported_job_of_several_task_groups_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "trace.yaml"
    path.write_text(yaml.safe_dump(timed(EXAMPLES / "imports" / "volcano-job.yaml", 0, 10),
                                   sort_keys=False))
    with pytest.raises(TraceError, match="exactly one task group"):
        load_trace(path)
