"""The Philly loader on the bundled sample, on malformed files, and on the full trace when
the workspace has it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from shoal.api import DEFAULT_QUEUE, Resources
from shoal.sim.loaders import load_philly
from shoal.sim.trace import TraceError

HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"
FULL_PHILLY = Path(__file__).resolve().parents[4] / "shared" / "traces" / "philly" / "philly.csv"


def test_sample_counts_queues_and_first_job(examples: Path) -> None:
    trace = load_philly(examples / "philly-sample.csv")
    assert len(trace) == 200
    assert trace.skipped == 0
    assert trace.source == str(examples / "philly-sample.csv")
    assert Counter(j.queue for j in trace.jobs) == {
        "6214e9": 188, "11cb48": 7, "ee9e8c": 2, "103959": 2, "6c71a0": 1}
    first = trace.jobs[0]
    # The file is not in time order: its earliest job is on line 4 (2017-09-29 07:58:32).
    assert first.name == "philly-4"
    assert first.submit_time == 0.0
    assert first.duration == 860662.0
    assert first.replicas == 1
    assert first.per_task == Resources(cpu=4000, memory=16384, gpu=1)
    assert first.queue == "6c71a0"
    assert (first.user, first.priority_class, first.model) == (None, None, None)
    # Line 2, 2017-10-09 07:01:55, is 860,603 s (9 d 23 h 3 min 23 s) after it.
    line2 = next(j for j in trace.jobs if j.name == "philly-2")
    assert line2.submit_time == 860603.0
    assert line2.duration == 66.0


def test_sample_is_sorted_and_limit_takes_the_earliest(examples: Path) -> None:
    trace = load_philly(examples / "philly-sample.csv")
    keys = [(j.submit_time, j.name) for j in trace.jobs]
    assert keys == sorted(keys)
    first_ten = load_philly(examples / "philly-sample.csv", limit=10)
    assert first_ten.jobs == trace.jobs[:10]
    assert load_philly(examples / "philly-sample.csv", limit=0).jobs == ()


def test_gang_shape_follows_gpus_per_node(examples: Path) -> None:
    by_name = {j.name: j for j in load_philly(examples / "philly-sample.csv").jobs}
    assert (by_name["philly-55"].replicas, by_name["philly-55"].per_task.gpu) == (1, 8)
    assert (by_name["philly-96"].replicas, by_name["philly-96"].per_task.gpu) == (1, 4)
    small = {j.name: j for j in load_philly(examples / "philly-sample.csv", gpus_per_node=4,
                                            cpu_per_gpu=2000, memory_per_gpu=8192).jobs}
    assert small["philly-55"].replicas == 2
    assert small["philly-55"].per_task == Resources(cpu=8000, memory=32768, gpu=4)
    odd = {j.name: j for j in load_philly(examples / "philly-sample.csv", gpus_per_node=3).jobs}
    assert (odd["philly-96"].replicas, odd["philly-96"].per_task.gpu) == (4, 1)


def test_without_queue_column(write: Callable[[str, str], Path]) -> None:
    path = write("p.csv", "timestamp,duration,num_gpus\n2017-10-09 07:01:55,66,1\n")
    trace = load_philly(path, queue_column=False)
    assert [j.queue for j in trace.jobs] == [DEFAULT_QUEUE]
    with pytest.raises(TraceError, match="column 'cluster': missing from the header"):
        load_philly(path)


def test_zero_gpu_job_and_blank_lines(write: Callable[[str, str], Path]) -> None:
    path = write("p.csv", HEADER + "2017-10-09 07:01:55,66.0,0,0.0,vc1\n\n"
                 "2017-10-09 07:01:50,10,16,160,vc2\n\n")
    trace = load_philly(path)
    assert [(j.name, j.submit_time, j.replicas, j.per_task.gpu) for j in trace.jobs] == [
        ("philly-4", 0.0, 2, 8), ("philly-2", 5.0, 1, 0)]
    assert trace.jobs[1].per_task == Resources(cpu=1000, memory=1024)


@pytest.mark.parametrize(("row", "column", "message"), [
    ("2017-10-09 07:01:55,abc,1,66.0,vc", "duration",
     "must be a positive number, got 'abc'"),
    ("2017-10-09 07:01:55,-66,1,66.0,vc", "duration", "must be a positive number, got '-66'"),
    ("2017-10-09 07:01:55,0,1,66.0,vc", "duration", "must be a positive number, got '0'"),
    ("2017-10-09 07:01:55,,1,66.0,vc", "duration",
     "must be a positive number, got an empty field"),
    ("2017-10-09 07:01:55,nan,1,66.0,vc", "duration", "must be a positive number"),
    ("2017-10-09 07:01:55,66,1.5,66.0,vc", "num_gpus", "must be a whole number, got '1.5'"),
    ("2017-10-09 07:01:55,66,-2,66.0,vc", "num_gpus", "must be at least 0, got -2"),
    ("2017/10/09 07:01:55,66,1,66.0,vc", "timestamp",
     "must be a time like '2017-10-09 07:01:55', got '2017/10/09 07:01:55'"),
    ("2017-02-30 07:01:55,66,1,66.0,vc", "timestamp", "is not a valid date"),
    ("2017-10-09 25:01:55,66,1,66.0,vc", "timestamp", "is not a valid time of day"),
    ("2017-10-09 07:01:55,66,1,66.0,", "cluster", "must be a name"),
    ("2017-10-09 07:01:55,66,1,66.0,no such vc", "cluster", "must be a name"),
    ("2017-10-09 07:01:55,66,1", "gpu_time", "the row has 3 fields but the header has 5"),
])
def test_malformed_row_names_file_line_and_column(
        write: Callable[[str, str], Path], row: str, column: str, message: str) -> None:
    good = "2017-10-09 07:01:54,66.0,1,66.0,11cb48\n"
    path = write("philly.csv", HEADER + good + good + row + "\n" + good)
    with pytest.raises(TraceError) as caught:
        load_philly(path)
    error = caught.value
    assert (error.source, error.line, error.column) == (str(path), 4, column)
    assert str(error).startswith(f"{path}:4: column '{column}': ")
    assert message in str(error)


def test_missing_column_empty_file_and_missing_file(write: Callable[[str, str], Path],
                                                    tmp_path: Path) -> None:
    path = write("philly.csv", "timestamp,num_gpus,cluster\n2017-10-09 07:01:55,1,vc\n")
    with pytest.raises(TraceError) as caught:
        load_philly(path)
    assert str(caught.value).startswith(f"{path}:1: column 'duration': missing from the header")
    assert "found timestamp, num_gpus, cluster" in str(caught.value)
    with pytest.raises(TraceError, match="the file is empty"):
        load_philly(write("empty.csv", ""))
    missing = tmp_path / "nope.csv"
    with pytest.raises(TraceError) as caught:
        load_philly(missing)
    assert str(caught.value) == f"{missing}: no such file"


def test_unusual_but_valid_values_read_the_same(write: Callable[[str, str], Path]) -> None:
    # "2.0" GPUs is not what the column-at-a-time reader expects, so the row-by-row reader
    # takes over; both must give the same trace.
    rows = "2017-10-09 07:01:55,66.0,{},132.0,vc1\n2017-10-09 07:00:00,5,1,5,vc2\n"
    plain = load_philly(write("a.csv", HEADER + rows.format("2")))
    unusual = load_philly(write("b.csv", HEADER + rows.format("2.0")))
    assert plain.jobs == unusual.jobs
    assert [(j.name, j.submit_time, j.gpus) for j in plain.jobs] == [
        ("philly-3", 0.0, 1), ("philly-2", 115.0, 2)]


def test_extra_columns_and_order_are_free(write: Callable[[str, str], Path]) -> None:
    path = write("p.csv", "cluster,extra,num_gpus,duration,timestamp\n"
                 "vc1,x,2,30,2017-10-09 07:01:55\n")
    (job,) = load_philly(path).jobs
    assert (job.queue, job.per_task.gpu, job.duration) == ("vc1", 2, 30.0)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="limit"):
        load_philly("unused.csv", limit=-1)
    with pytest.raises(ValueError, match="gpus_per_node"):
        load_philly("unused.csv", gpus_per_node=0)


@pytest.mark.skipif(not FULL_PHILLY.exists(), reason="the full trace lives in the Shoal "
                    "workspace's ../shared/traces, not in a clone")
def test_full_philly_trace() -> None:
    trace = load_philly(FULL_PHILLY)
    assert len(trace) == 82247
    assert trace.skipped == 0
    assert len(trace.queues()) == 15
    assert trace.jobs[0].submit_time == 0.0
    # 2017-09-04 10:30:41 → 2017-12-22 08:02:11.
    assert trace.jobs[-1].submit_time == 9408690.0
    assert Counter(j.gpus for j in trace.jobs)[1] == 76627
    assert sum(j.gpus for j in trace.jobs) == 76627 + 2 * 1818 + 4 * 1870 + 8 * 1643 + \
        16 * 199 + 32 * 67 + 12 * 7 + 24 * 7 + 64 * 6 + 128 * 3
    assert load_philly(FULL_PHILLY, limit=100).jobs == trace.jobs[:100]
