"""The trace model: the gang shape rule, TraceJob → Job, Trace invariants, TraceError."""

from __future__ import annotations

import pickle

import pytest

from shoal.api import Resources, SchedulerName
from shoal.sim.trace import (
    CPU_ONLY_TASK,
    Trace,
    TraceError,
    TraceJob,
    gang_shape,
    prechecked_job,
)


@pytest.mark.parametrize(("gpus", "per_node", "replicas", "per_task_gpus"), [
    (1, 8, 1, 1),
    (4, 8, 1, 4),
    (8, 8, 1, 8),
    (16, 8, 2, 8),
    (64, 8, 8, 8),
    (12, 8, 12, 1),   # 8 does not divide 12: spread as single GPUs
    (24, 8, 3, 8),
    (6, 4, 6, 1),
    (8, 4, 2, 4),
    (3, 1, 3, 1),
])
def test_gang_shape_rule(gpus: int, per_node: int, replicas: int, per_task_gpus: int) -> None:
    n, per_task = gang_shape(gpus, per_node)
    assert (n, per_task.gpu) == (replicas, per_task_gpus)
    assert per_task.cpu == 4000 * per_task_gpus
    assert per_task.memory == 16384 * per_task_gpus
    assert n * per_task.gpu == gpus


def test_gang_shape_custom_cpu_and_memory_and_zero_gpus() -> None:
    assert gang_shape(2, 8, cpu_per_gpu=6000, memory_per_gpu=32768) == (
        1, Resources(cpu=12000, memory=65536, gpu=2))
    assert gang_shape(0, 8) == (1, CPU_ONLY_TASK)
    assert Resources(cpu=1000, memory=1024) == CPU_ONLY_TASK


@pytest.mark.parametrize(("gpus", "per_node"), [(-1, 8), (1, 0)])
def test_gang_shape_refuses_bad_arguments(gpus: int, per_node: int) -> None:
    with pytest.raises(ValueError, match="must"):
        gang_shape(gpus, per_node)


def test_trace_job_to_job_is_a_whole_gang() -> None:
    job = TraceJob("a", 12.5, 100.0, 2, Resources(cpu=32000, memory=131072, gpu=8),
                   queue="vision", user="alice", priority_class="production",
                   node_selector={"gpu-type": "V100"})
    assert job.gpus == 16
    assert job.resources == Resources(cpu=64000, memory=262144, gpu=16)
    api = job.to_job()
    assert api.name == "a"
    assert api.queue == "vision"
    assert api.user == "alice"
    assert api.priority_class == "production"
    assert api.submitted == 12.5
    assert api.scheduler_name is SchedulerName.SHOAL
    assert api.gang and api.gang_minimum == 2
    (group,) = api.groups
    assert (group.name, group.replicas, group.resources) == ("worker", 2, job.per_task)
    assert group.node_selector == {"gpu-type": "V100"}
    assert hash(job) == hash(TraceJob("a", 12.5, 100.0, 2, job.per_task, queue="vision",
                                      user="alice", priority_class="production"))


def test_prechecked_job_equals_the_checked_one() -> None:
    fast = prechecked_job("a", 1.0, 2.0, 3, Resources(gpu=1), "q")
    slow = TraceJob("a", 1.0, 2.0, 3, Resources(gpu=1), "q")
    assert fast == slow
    assert hash(fast) == hash(slow)
    assert repr(fast) == repr(slow)


@pytest.mark.parametrize(("duration", "replicas"), [(0.0, 1), (-5.0, 1), (10.0, 0),
                                                    (float("inf"), 1), (float("nan"), 1)])
def test_trace_job_refuses_no_work_or_no_tasks(duration: float, replicas: int) -> None:
    with pytest.raises(ValueError):
        TraceJob("a", 0.0, duration, replicas, Resources(gpu=1))


def _job(name: str, at: float) -> TraceJob:
    return TraceJob(name, at, 10.0, 1, Resources(gpu=1), queue=f"q-{name}")


def test_trace_of_sorts_by_time_then_name() -> None:
    trace = Trace.of([_job("b", 5.0), _job("c", 1.0), _job("a", 5.0)], "x.csv")
    assert [j.name for j in trace.jobs] == ["c", "a", "b"]
    assert len(trace) == 3
    assert trace.queues() == {"q-a", "q-b", "q-c"}
    assert [j.name for j in trace.to_jobs()] == ["c", "a", "b"]
    assert trace.skipped == 0 and trace.skip_reasons == {}


def test_trace_refuses_unsorted_duplicate_or_miscounted() -> None:
    with pytest.raises(ValueError, match="sorted"):
        Trace((_job("b", 5.0), _job("a", 1.0)), "x.csv")
    with pytest.raises(ValueError, match="unique; repeated: a"):
        Trace((_job("a", 1.0), _job("a", 2.0)), "x.csv")
    with pytest.raises(ValueError, match="add up"):
        Trace((), "x.csv", skipped=2, skip_reasons={"why": 1})


def test_trace_error_message_names_file_line_and_column() -> None:
    error = TraceError("philly.csv", 17, "duration", "must be a positive number, got 'abc'")
    assert str(error) == "philly.csv:17: column 'duration': must be a positive number, got 'abc'"
    assert (error.source, error.line, error.column) == ("philly.csv", 17, "duration")
    assert isinstance(error, ValueError)
    assert str(TraceError("t.csv", None, None, "no such file")) == "t.csv: no such file"
    assert str(TraceError("t.yaml", 3, "spec.queue", "bad", what="field")) == \
        "t.yaml:3: field 'spec.queue': bad"
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error)
