"""A default-scheduler job that loses single tasks to preemption under the live control loop
(issue 16's task-level eviction), with real processes.

A job placed task by task (no gang) gives up only the task a higher-priority job needs: that
task gets SIGTERM and its grace, the preemptor's task starts once it has exited, and the
victim runs on — RUNNING, its other tasks untouched. The evicted task goes back to PENDING
without a failure and, once the GPU is free again, starts as a new attempt; the job then
succeeds as usual. Local engine only: the stop and the new attempt are the paths the elastic
tests already run on Ray (`test_control_elastic`); what is new here is the loop's and the
store's handling of a running job that keeps going without one of its tasks. Every wait is
on a condition (a task's file written, a state stored)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from checkpointing_worker import started, started_at, stopped_at, task_states, worker_job
from control_support import finished, state_of, step_until

from shoal.api import JobState, PriorityClass, SchedulerName, TaskState
from shoal.control import ControlPlane
from shoal.scheduler.profile import Profile

CLASSES = (PriorityClass("high", 1000), PriorityClass("low", 10))


def test_a_default_scheduler_job_loses_one_task_and_runs_on(
        make_plane: Callable[..., ControlPlane], out: Path) -> None:
    plane = make_plane(Profile.load("elastic"), CLASSES, 5.0)
    plane.start()
    # The node's 4 GPUs, one task each: the cluster is full.
    plane.submit(worker_job("pods", out, replicas=4, priority="low",
                            scheduler=SchedulerName.DEFAULT))
    step_until(plane, lambda: all(started(out, "pods", i) for i in range(4)))
    plane.submit(worker_job("urgent", out, replicas=1, priority="high",
                            scheduler=SchedulerName.SHOAL))
    plane.step()
    # Only the newest task (all started in one cycle: the highest index) is being stopped;
    # the job keeps running on the other three.
    assert task_states(plane, "pods") == [TaskState.RUNNING] * 3 + [TaskState.RELEASING]
    assert state_of(plane, "pods") is JobState.RUNNING
    assert task_states(plane, "urgent") == [TaskState.BOUND]
    step_until(plane, lambda: started(out, "urgent", 0) is not None)
    assert started_at(out, "urgent", 0) >= stopped_at(out, "pods", 3)
    stored = plane.repository.get_job("pods")
    assert stored is not None and stored.state is JobState.RUNNING
    tasks = sorted(stored.tasks, key=lambda t: t.index)
    assert [(t.state, t.retries) for t in tasks] == \
        [(TaskState.RUNNING, 0)] * 3 + [(TaskState.PENDING, 0)]
    assert not any((out / f"pods-{i}-1.stopped").exists() for i in range(3))
    # The GPU comes back: the evicted task starts again, as a new attempt.
    plane.cancel("urgent")
    step_until(plane, lambda: started(out, "pods", 3, attempt=2) is not None)
    assert task_states(plane, "pods") == [TaskState.RUNNING] * 4
    (out / "release").touch()
    step_until(plane, finished(plane, "pods"))
    assert state_of(plane, "pods") is JobState.SUCCEEDED
