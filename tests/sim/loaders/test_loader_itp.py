"""The ITP loader on the bundled sample and on malformed files."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from shoal.api import DEFAULT_QUEUE, Resources
from shoal.sim.loaders import load_itp
from shoal.sim.trace import TraceError

HEADER = "job_id,submission_time,duration,num_gpu\n"


def test_sample_counts_shift_and_first_job(examples: Path) -> None:
    trace = load_itp(examples / "itp-cluster01-sample.csv")
    assert len(trace) == 100
    assert trace.queues() == {DEFAULT_QUEUE}
    assert Counter(j.gpus for j in trace.jobs) == {1: 79, 64: 17, 8: 3, 4: 1}
    first = trace.jobs[0]
    assert first.name == "965d744f-0445-c1a8-12af-97e4c536c66e"
    # Raw submission_time 1932025 is the trace's zero.
    assert first.submit_time == 0.0
    assert first.duration == 2429.0
    # 64 GPUs on 8-GPU nodes: a gang of 8 whole nodes.
    assert (first.replicas, first.per_task) == (8, Resources(cpu=32000, memory=131072, gpu=8))
    second = trace.jobs[1]
    assert (second.name, second.submit_time) == ("fb10987f-20ac-3703-eb67-146a77a6e17c",
                                                 2000581.0 - 1932025.0)
    keys = [(j.submit_time, j.name) for j in trace.jobs]
    assert keys == sorted(keys)


def test_limit_and_gang_shape(examples: Path) -> None:
    trace = load_itp(examples / "itp-cluster01-sample.csv", limit=5, gpus_per_node=16)
    assert len(trace) == 5
    assert (trace.jobs[0].replicas, trace.jobs[0].per_task.gpu) == (4, 16)


def test_unsorted_file_is_sorted_and_shifted(write: Callable[[str, str], Path]) -> None:
    path = write("itp.csv", HEADER + "b,500,10,1\na,100,20,12\nc,100,30,3\n")
    trace = load_itp(path)
    assert [(j.name, j.submit_time) for j in trace.jobs] == [
        ("a", 0.0), ("c", 0.0), ("b", 400.0)]
    # 12 GPUs on 8-GPU nodes: 8 does not divide 12, so 12 single-GPU tasks.
    assert (trace.jobs[0].replicas, trace.jobs[0].per_task.gpu) == (12, 1)
    assert (trace.jobs[1].replicas, trace.jobs[1].per_task.gpu) == (1, 3)


@pytest.mark.parametrize(("row", "column", "message"), [
    ("x,100,abc,1", "duration", "must be a positive number, got 'abc'"),
    ("x,100,-5,1", "duration", "must be a positive number, got '-5'"),
    ("x,-100,5,1", "submission_time", "must be a non-negative number, got '-100'"),
    ("x,,5,1", "submission_time", "must be a non-negative number, got an empty field"),
    ("x,100,5,two", "num_gpu", "must be a whole number, got 'two'"),
    ("bad id!,100,5,1", "job_id", "must be a job name"),
    ("a,100,5,1", "job_id", "job 'a' is already given on line 2"),
    ("x,100,5,1,extra", None, "the row has 5 fields but the header has 4"),
])
def test_malformed_row_names_file_line_and_column(
        write: Callable[[str, str], Path], row: str, column: str | None, message: str) -> None:
    path = write("cluster01.csv", HEADER + "a,1,1,1\n" + row + "\n")
    with pytest.raises(TraceError) as caught:
        load_itp(path)
    error = caught.value
    assert (error.source, error.line, error.column) == (str(path), 3, column)
    where = f"{path}:3: " + ("" if column is None else f"column '{column}': ")
    assert str(error).startswith(where)
    assert message in str(error)


def test_missing_column_and_missing_file(write: Callable[[str, str], Path],
                                         tmp_path: Path) -> None:
    path = write("cluster01.csv", "job_id,submission_time,duration\na,1,1\n")
    with pytest.raises(TraceError) as caught:
        load_itp(path)
    assert (caught.value.line, caught.value.column) == (1, "num_gpu")
    assert "missing from the header" in str(caught.value)
    with pytest.raises(TraceError, match="no such file"):
        load_itp(tmp_path / "absent.csv")
    with pytest.raises(TraceError, match="appears twice in the header"):
        load_itp(write("dup.csv", "job_id,job_id,submission_time,duration,num_gpu\n"))
