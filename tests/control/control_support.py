"""Helpers for the control-loop tests: jobs that run `python -c`, stepping a plane until a
condition holds, a task's log through the executor contract, and `BOTH_ENGINES`. A module of
its own (not conftest) under a name no other test directory uses."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shoal.api import Job, JobState, Resources, SchedulerName, TaskGroup
from shoal.control import ControlPlane
from shoal.executors.contract import Executor
from shoal.executors.local import LocalExecutor
from shoal.scheduler.profile import Profile
from shoal.store import Repository

PY = sys.executable
#: A safety net only: on a loaded machine (and on Ray, where each attempt starts a worker
#: process) a task can take many seconds to start; every wait is on a condition.
DEADLINE = 120.0
#: A task's code that runs until it is stopped: it waits for a signal, so however long a
#: loaded machine takes, it never ends by itself.
RUNS_UNTIL_STOPPED = "import signal; signal.pause()"
#: `pytestmark = BOTH_ENGINES`: every test of the module runs on the local executor and on
#: the Ray engine (the conftest's `engine` fixture).
BOTH_ENGINES = pytest.mark.parametrize("engine", ["local", "ray"], indirect=True)
#: The conftest's `make_executor`: a new instance of the engine under test over the same
#: root (its argument: the grace period).
ExecutorFactory = Callable[..., Executor]


def job(name: str, code: str, *, replicas: int = 1, gpu: int = 0, groups: int = 1,
        task_retry_count: int = 0, min_succeeded: int | None = None,
        min_failed: int | None = None, job_retry_count: int = 0) -> Job:
    """A gang job whose tasks run `python -c code`; `groups` splits it into roles; the
    keywords are its completion policy (`taskRetryCount` for every group)."""
    made = tuple(TaskGroup(f"g{i}" if groups > 1 else "worker", replicas,
                           Resources.of(cpu=max(500, 1000 * gpu), memory=128, gpu=gpu),
                           command=(PY, "-c", code), task_retry_count=task_retry_count)
                 for i in range(groups))
    return Job(name, made, scheduler_name=SchedulerName.SHOAL, min_succeeded=min_succeeded,
               min_failed=min_failed, job_retry_count=job_retry_count)


def until_exists(path: Path) -> str:
    """A task's `python -c` code that runs until `path` exists: the test ends it by writing
    the file, never after a guessed time."""
    return f"import os, time\nwhile not os.path.exists({str(path)!r}): time.sleep(0.05)"


def running_plane(repo: Repository, node: Any, tmp_path: Path, profile: Profile,
                  grace: float, **options: Any) -> Iterator[ControlPlane]:
    """A started control plane over `repo` and one `node` on the local executor, for a
    fixture to `yield from`; afterwards, what still runs is stopped."""
    repo.put_node(node)
    made = ControlPlane(repo, LocalExecutor(tmp_path / "shoal", grace_period=grace), [node],
                        profile, interval=0.1, grace_period=grace, **options)
    made.start()
    yield made
    for tracked in list(made._tasks.values()):
        made.executor.stop(tracked.handle, grace_period=0.1)


def wait_for(condition: Callable[[], bool], timeout: float = DEADLINE) -> None:
    """Wait until `condition` holds (the loop runs on its own thread); the deadline is only
    a safety net."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def step_until(plane: ControlPlane, done: Callable[[], bool],
               timeout: float = DEADLINE) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        plane.step()
        time.sleep(0.05)


def state_of(plane: ControlPlane, name: str) -> JobState:
    found = plane.repository.get_job(name)
    assert found is not None
    return found.state


def finished(plane: ControlPlane, name: str) -> Callable[[], bool]:
    return lambda: state_of(plane, name).terminal


def launch_code(d: Path, body: str, noted: str = "SHOAL_ATTEMPT") -> str:
    """A task's `python -c` code: append the environment variable `noted` to
    `d/launch-<rank>` (a line per launch), then run `body` with `rank`, `n` (this task's launch
    count) and `launches(r)` (rank r's) in scope."""
    return (f"import os, sys, time, signal, pathlib\n"
            f"d = pathlib.Path({str(d)!r}); rank = int(os.environ['SHOAL_RANK'])\n"
            "def launches(r):\n"
            "    p = d / f'launch-{r}'\n"
            "    return len(p.read_text().splitlines()) if p.exists() else 0\n"
            "with open(d / f'launch-{rank}', 'a') as h:\n"
            f"    h.write(os.environ[{noted!r}] + '\\n')\n"
            "n = launches(rank)\n"
            f"{body}\n")


def launches(d: Path, rank: int) -> int:
    """How many times rank `rank` was launched (`launch_code`)."""
    path = d / f"launch-{rank}"
    return len(path.read_text().splitlines()) if path.exists() else 0


def stdout_of(plane: ControlPlane, name: str, group: str = "worker", index: int = 0) -> str:
    """A task's stdout (all its attempts), read through the executor contract."""
    return plane.executor.read_log(name, group, index, "stdout", 0, 1 << 20).data.decode()
