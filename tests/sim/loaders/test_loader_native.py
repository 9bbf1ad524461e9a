"""The native YAML trace loader: the bundled sample, and errors that name file, line and
field (its own fields, and the spec layer's)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from shoal.api import Resources
from shoal.sim.loaders import load_native
from shoal.sim.trace import TraceError


def _yaml(text: str) -> str:
    return textwrap.dedent(text).lstrip()


JOB = _yaml("""
    apiVersion: shoal/v1
    kind: Job
    metadata:
      name: a
      arrivalTime: 10
      duration: 60
    spec:
      taskGroups:
        - {name: worker, replicas: 2, resources: {cpu: 4, memory: 8Gi, gpu: 1}}
    """)


def test_sample(examples: Path) -> None:
    trace = load_native(examples / "native-trace.yaml")
    assert [j.name for j in trace.jobs] == ["resnet-a", "bert-b", "cifar-c", "ncf-d",
                                            "preprocess-e"]
    first = trace.jobs[0]
    assert first.submit_time == 0.0
    assert first.duration == 3600.0
    assert first.replicas == 2
    assert first.per_task == Resources(cpu=8000, memory=65536, gpu=4)
    assert (first.queue, first.user, first.priority_class, first.model) == (
        "vision", "alice", "production", "resnet50")
    assert first.node_selector == {"gpu-type": "V100"}
    assert trace.queues() == {"vision", "nlp", "default"}
    cifar = trace.jobs[2]
    assert (cifar.submit_time, cifar.duration, cifar.priority_class) == (300.0, 900.5,
                                                                         "experiment")
    last = trace.jobs[-1]
    assert (last.gpus, last.model, last.replicas) == (0, None, 4)
    assert load_native(examples / "native-trace.yaml", limit=2).jobs == trace.jobs[:2]
    job = first.to_job()
    assert job.groups[0].node_selector == {"gpu-type": "V100"}


def test_shift_and_sort(write: Callable[[str, str], Path]) -> None:
    text = JOB + "---\n" + JOB.replace("name: a", "name: b").replace("arrivalTime: 10",
                                                                      "arrivalTime: 5")
    trace = load_native(write("t.yaml", text))
    assert [(j.name, j.submit_time) for j in trace.jobs] == [("b", 0.0), ("a", 5.0)]


@pytest.mark.parametrize(("old", "new", "line", "field", "message"), [
    ("  arrivalTime: 10\n", "", 4, "metadata.arrivalTime", "is required in a trace"),
    ("  duration: 60\n", "", 4, "metadata.duration", "is required in a trace"),
    ("duration: 60", "duration: -60", 6, "metadata.duration",
     "must be a positive number of seconds, got -60"),
    ("duration: 60", "duration: '60'", 6, "metadata.duration",
     "must be a positive number of seconds, got '60'"),
    ("arrivalTime: 10", "arrivalTime: -1", 5, "metadata.arrivalTime",
     "must be a number of seconds >= 0, got -1"),
    ("arrivalTime: 10", "arrivalTime: true", 5, "metadata.arrivalTime", "got True"),
    ("duration: 60", "duration: 60\n  creationTimestamp: 3", 7,
     "metadata.creationTimestamp", "submission time is metadata.arrivalTime"),
    ("duration: 60", "duration: 60\n  model: 3", 7, "metadata.model", "must be a string"),
    ("kind: Job", "kind: Node", 2, "kind", "a trace holds job documents only"),
    # The spec layer's own checks, placed at their field's line.
    ("replicas: 2", "replicas: 0", 9, "spec.taskGroups[0].replicas",
     "must be at least 1, got 0"),
    ("gpu: 1", "gpu: lots", 9, "spec.taskGroups[0].resources.gpu",
     "must be a quantity like '2', '500m' or '4Gi', got 'lots'"),
    ("name: a", "name: a b", 4, "metadata.name", "letters, digits"),
    ("spec:\n", "spec:\n  colour: blue\n", 8, "spec.colour", "unknown field 'colour'"),
])
def test_malformed_job_names_file_line_and_field(
        write: Callable[[str, str], Path], old: str, new: str, line: int, field: str,
        message: str) -> None:
    assert old in JOB
    path = write("trace.yaml", JOB.replace(old, new, 1))
    with pytest.raises(TraceError) as caught:
        load_native(path)
    error = caught.value
    assert (error.source, error.line, error.column) == (str(path), line, field)
    assert str(error).startswith(f"{path}:{line}: field '{field}': ")
    assert message in str(error)


def test_errors_in_a_later_document_point_at_its_lines(
        write: Callable[[str, str], Path]) -> None:
    second = JOB.replace("name: a", "name: b").replace("replicas: 2", "replicas: -1")
    path = write("trace.yaml", JOB + "---\n" + second)
    with pytest.raises(TraceError) as caught:
        load_native(path)
    assert (caught.value.line, caught.value.column) == (11 + 8, "spec.taskGroups[0].replicas")


def test_multi_group_min_available_status_and_duplicates(
        write: Callable[[str, str], Path]) -> None:
    two = JOB + "    - {name: ps, replicas: 1, resources: {cpu: 1}}\n"
    with pytest.raises(TraceError, match="exactly one task group") as caught:
        load_native(write("t.yaml", two))
    assert (caught.value.line, caught.value.column) == (9, "spec.taskGroups")
    gang = JOB.replace("spec:\n", "spec:\n  schedulerName: shoal\n  minAvailable: 1\n")
    with pytest.raises(TraceError, match="runs with all its tasks") as caught:
        load_native(write("t.yaml", gang))
    assert caught.value.line == 9
    ran = JOB + "status: {tasks: []}\n"
    with pytest.raises(TraceError, match="a trace job has not run yet"):
        load_native(write("t.yaml", ran))
    with pytest.raises(TraceError, match="declared"):
        load_native(write("t.yaml", JOB + "---\n" + JOB))


def test_unknown_queue_and_priority_class_are_left_to_the_cluster(
        write: Callable[[str, str], Path]) -> None:
    text = JOB.replace("spec:\n", "spec:\n  queue: research\n  priorityClassName: urgent\n")
    (job,) = load_native(write("t.yaml", text)).jobs
    assert (job.queue, job.priority_class) == ("research", "urgent")


def test_a_jobs_checkpoint_interval_and_freezing_window_are_kept(
        write: Callable[[str, str], Path]) -> None:
    text = JOB.replace("spec:\n", "spec:\n  checkpointInterval: 300\n  freezingWindow: 10m\n")
    (job,) = load_native(write("t.yaml", text)).jobs
    assert (job.checkpoint_interval, job.freezing_window) == (300.0, 600.0)
    (plain,) = load_native(write("u.yaml", JOB)).jobs
    assert (plain.checkpoint_interval, plain.freezing_window) == (None, None)


def test_file_level_errors(write: Callable[[str, str], Path], tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such file"):
        load_native(tmp_path / "absent.yaml")
    with pytest.raises(TraceError, match="contains no Job documents"):
        load_native(write("t.yaml", "# nothing\n"))
    with pytest.raises(TraceError, match="invalid YAML") as caught:
        load_native(write("t.yaml", JOB + "  bad: [\n"))
    assert caught.value.line is not None
    with pytest.raises(TraceError, match="duplicate key") as caught:
        load_native(write("t.yaml", JOB.replace("  duration: 60\n",
                                                "  duration: 60\n  duration: 70\n")))
    assert caught.value.line == 7
    with pytest.raises(TraceError, match="must be a mapping"):
        load_native(write("t.yaml", "- a\n- b\n"))
