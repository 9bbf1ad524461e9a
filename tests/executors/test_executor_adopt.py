"""Crash safety: idempotent launch and re-adoption by a new executor after a restart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from executor_support import spec, wait_exit, wait_until

from shoal.executors.local import LocalExecutor, TaskPhase


def test_launch_is_idempotent_per_attempt(executor: LocalExecutor, tmp_path: Path) -> None:
    counter = tmp_path / "launches"
    code = f"import time; open({str(counter)!r}, 'a').write('x\\n'); time.sleep(0.5)"
    first = executor.launch(spec(code))
    again = executor.launch(spec(code))
    # A control plane that crashed between "persist" and "launch" relaunches from scratch.
    after_restart = LocalExecutor(executor.root).launch(spec(code))
    assert first.pid == again.pid == after_restart.pid
    assert first.pid_start_time == after_restart.pid_start_time
    assert wait_exit(executor, first).exit_code == 0
    assert counter.read_text() == "x\n"
    # A new attempt of the same task does start.
    wait_exit(executor, executor.launch(spec(code, attempt=1)))
    assert counter.read_text() == "x\nx\n"


def test_new_executor_adopts_a_running_task(executor: LocalExecutor) -> None:
    task = executor.launch(spec("import time; print('ready', flush=True); time.sleep(60)"))
    wait_until(lambda: task.stdout_path.exists() and "ready" in task.stdout_path.read_text())
    restarted = LocalExecutor(executor.root, grace_period=1.0)
    adopted = restarted.adopt(task.pid, task.pid_start_time, task.status_path)
    assert adopted is not None
    assert (adopted.job, adopted.group, adopted.index, adopted.pid) == (
        task.job, task.group, task.index, task.pid)
    assert adopted.stdout_path == task.stdout_path
    assert restarted.poll(adopted).running
    # Same pid, other start time: a reused pid, refused and never signalled.
    assert restarted.adopt(task.pid, task.pid_start_time + 100.0, task.status_path) is None
    status = restarted.stop(adopted)
    assert status.phase is TaskPhase.EXITED and status.signal is not None


def test_task_that_ended_while_down_reports_recorded_exit(executor: LocalExecutor) -> None:
    task = executor.launch(spec("import sys; sys.exit(5)"))
    wait_until(task.status_path.exists)
    del executor  # "crash": nobody polled it
    restarted = LocalExecutor(task.status_path.parents[4])
    adopted = restarted.adopt(task.pid, task.pid_start_time, task.status_path)
    assert adopted is not None
    status = restarted.poll(adopted)
    assert (status.phase, status.exit_code) == (TaskPhase.EXITED, 5)


def test_adopting_a_vanished_process_without_record_fails(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    status_path = tmp_path / "shoal" / "tasks" / "j" / "g-0" / "attempt-0" / "status.json"
    status_path.parent.mkdir(parents=True)
    assert LocalExecutor(tmp_path / "shoal").adopt(gone.pid, 1.0, status_path) is None
