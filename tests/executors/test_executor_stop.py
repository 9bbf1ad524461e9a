"""Stopping tasks: SIGTERM to the group, a grace period, then SIGKILL; never blocking forever."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psutil
from executor_support import spec, wait_exit, wait_until

from shoal.executors.local import LocalExecutor
from shoal.executors.task import RunningTask, TaskPhase

TRAPS_SIGTERM = """
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))
print('ready', flush=True)
time.sleep(60)
"""

IGNORES_SIGTERM = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print('ready', flush=True)
time.sleep(60)
"""


def _ready(task: RunningTask) -> bool:
    return task.stdout_path.exists() and "ready" in task.stdout_path.read_text()


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_task_that_handles_sigterm_exits_within_grace(executor: LocalExecutor) -> None:
    task = executor.launch(spec(TRAPS_SIGTERM))
    wait_until(lambda: _ready(task))
    started = time.monotonic()
    status = executor.stop(task, grace_period=5.0)
    assert time.monotonic() - started < 3.0  # did not sit out the grace period
    assert (status.phase, status.exit_code, status.signal) == (TaskPhase.EXITED, 7, None)


def test_task_that_ignores_sigterm_is_killed_after_grace(executor: LocalExecutor) -> None:
    task = executor.launch(spec(IGNORES_SIGTERM))
    wait_until(lambda: _ready(task))
    started = time.monotonic()
    status = executor.stop(task, grace_period=0.5)
    elapsed = time.monotonic() - started
    assert 0.5 <= elapsed < 4.0
    assert (status.phase, status.signal) == (TaskPhase.EXITED, signal.SIGKILL)
    assert _gone(task.pid)
    # The outcome is recorded on disk, so a restarted control plane sees it too.
    assert LocalExecutor(executor.root).poll(task) == status


def test_the_whole_process_group_dies(executor: LocalExecutor, tmp_path: Path) -> None:
    child_pid_file = tmp_path / "child.pid"
    code = f"""
import subprocess, time
child = subprocess.Popen(['sleep', '60'])
open({str(child_pid_file)!r}, 'w').write(str(child.pid))
print('ready', flush=True)
time.sleep(60)
"""
    task = executor.launch(spec(code))
    wait_until(lambda: _ready(task) and child_pid_file.exists()
               and child_pid_file.read_text() != "")
    child_pid = int(child_pid_file.read_text())
    assert not _gone(child_pid)
    status = executor.stop(task, grace_period=2.0)
    assert status.phase is TaskPhase.EXITED
    assert status.signal == signal.SIGTERM  # the default SIGTERM action ended the command
    wait_until(lambda: _gone(child_pid), timeout=3.0)


def test_request_stop_then_poll_escalates_without_blocking(executor: LocalExecutor) -> None:
    task = executor.launch(spec(IGNORES_SIGTERM))
    wait_until(lambda: _ready(task))
    started = time.monotonic()
    assert executor.request_stop(task, grace_period=0.3)
    assert time.monotonic() - started < 0.2  # returned at once
    assert executor.poll(task).running  # SIGTERM is ignored: still running inside the grace
    status = wait_exit(executor, task, timeout=5.0)
    assert time.monotonic() - started >= 0.3
    assert status.signal == signal.SIGKILL


def test_stopping_a_finished_task_returns_its_status(executor: LocalExecutor) -> None:
    task = executor.launch(spec("import sys; sys.exit(4)"))
    wait_exit(executor, task)
    assert executor.request_stop(task) is False
    status = executor.stop(task, grace_period=0.1)
    assert (status.phase, status.exit_code) == (TaskPhase.EXITED, 4)


def test_wrapper_killed_behind_our_back_is_lost(executor: LocalExecutor) -> None:
    import os

    task = executor.launch(spec(IGNORES_SIGTERM))
    wait_until(lambda: _ready(task))
    os.killpg(task.pid, signal.SIGKILL)  # e.g. the OOM killer, or a reboot: nothing recorded
    status = wait_exit(executor, task)
    assert status.phase is TaskPhase.LOST
