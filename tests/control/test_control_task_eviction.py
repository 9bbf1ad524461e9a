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

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from control_support import PY, finished, state_of, step_until

from shoal.api import (
    Job,
    JobState,
    PriorityClass,
    Resources,
    SchedulerName,
    TaskGroup,
    TaskState,
)
from shoal.control import ControlPlane
from shoal.scheduler.profile import Profile

CLASSES = (PriorityClass("high", 1000), PriorityClass("low", 10))

#: Records when it started, runs until `release` exists; on SIGTERM takes 0.3 s (a
#: checkpoint), records when it stopped, and exits 143.
WORKER = """
import json, os, signal, sys, time
out = sys.argv[1]
me = f"{os.environ['SHOAL_JOB']}-{os.environ['SHOAL_TASK_INDEX']}-{os.environ['SHOAL_ATTEMPT']}"
def stop(*_):
    time.sleep(0.3)
    open(os.path.join(out, me + '.stopped'), 'w').write(repr(time.time()))
    sys.exit(143)
signal.signal(signal.SIGTERM, stop)
json.dump({'started': time.time()}, open(os.path.join(out, me + '.started'), 'w'))
while not os.path.exists(os.path.join(out, 'release')):
    time.sleep(0.05)
"""


@pytest.fixture
def out(tmp_path: Path) -> Path:
    made = tmp_path / "out"
    made.mkdir()
    return made


def worker_job(name: str, out: Path, *, replicas: int, priority: str,
               scheduler: SchedulerName) -> Job:
    group = TaskGroup("worker", replicas, Resources.of(cpu=500, memory=128, gpu=1),
                      command=(PY, "-c", WORKER, str(out)))
    return Job(name, (group,), scheduler_name=scheduler, priority_class=priority,
               submitted=time.time())


def started(out: Path, name: str, index: int, attempt: int = 1) -> float | None:
    path = out / f"{name}-{index}-{attempt}.started"
    try:
        return float(json.loads(path.read_text())["started"])
    except (FileNotFoundError, json.JSONDecodeError):  # not yet, or being written
        return None


def task_states(plane: ControlPlane, name: str) -> list[TaskState]:
    stored = plane.repository.get_job(name)
    assert stored is not None
    return [t.state for t in sorted(stored.tasks, key=lambda t: t.index)]


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
    assert (started(out, "urgent", 0) or 0.0) >= float((out / "pods-3-1.stopped").read_text())
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
