"""Helpers for the executor tests: real subprocesses, polled with short timeouts.

A module of its own (not conftest) so that tests import it by a name no other test
directory uses."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from shoal.executors.contract import Executor, RecordedAttempt
from shoal.executors.task import RunningTask, TaskLaunch, TaskStatus

PY = sys.executable


def gated(gate: Path, mark: Path | None = None) -> str:
    """Python that appends a line to `mark` (if given), then runs until `gate` exists: a
    task the test ends by writing `gate`, not after a guessed time."""
    touch = "" if mark is None else \
        f"open({str(mark)!r}, 'a').write('ran\\n')\n"
    return (f"import pathlib, time\n{touch}"
            f"while not pathlib.Path({str(gate)!r}).exists():\n    time.sleep(0.02)\n")


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def wait_exit(executor: Executor, task: RunningTask, timeout: float = 10.0) -> TaskStatus:
    deadline = time.monotonic() + timeout
    status = executor.poll(task)
    while status.running:
        if time.monotonic() > deadline:
            executor.stop(task, grace_period=0.1)
            raise AssertionError(f"task {task} still running after {timeout}s")
        time.sleep(0.02)
        status = executor.poll(task)
    return status


def recorded(task: RunningTask, *, pid_start_time: float | None = None) -> RecordedAttempt:
    """What the store records of a launched attempt (`pid_start_time`: another one)."""
    start = task.pid_start_time if pid_start_time is None else pid_start_time
    return RecordedAttempt(task.job, task.group, task.index, task.attempt, task.pid, start)


def spec(code: str, *, job: str = "job1", group: str = "worker", index: int = 0,
         gpus: tuple[int, ...] = (), attempt: int = 0, **kw: object) -> TaskLaunch:
    """A task that runs `python -c code`."""
    fields: dict[str, object] = {"world_size": 1, "rank": index, "master_addr": "127.0.0.1",
                                 "master_port": 29500}
    fields.update(kw)
    return TaskLaunch(job=job, group=group, index=index, gpus=gpus, attempt=attempt,
                      command=(PY, "-c", code), **fields)  # type: ignore[arg-type]


