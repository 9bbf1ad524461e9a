"""Crash safety: idempotent launch and re-adoption by a new executor after a restart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from executor_support import recorded, spec, wait_exit, wait_until

from shoal.executors.contract import RecordedAttempt
from shoal.executors.local import LocalExecutor
from shoal.executors.task import TaskPhase


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
    adopted = restarted.adopt(recorded(task))
    assert adopted is not None
    assert (adopted.job, adopted.group, adopted.index, adopted.pid) == (
        task.job, task.group, task.index, task.pid)
    assert adopted.stdout_path == task.stdout_path
    assert restarted.poll(adopted).running
    # Same pid, other start time: a reused pid, refused and never signalled.
    assert restarted.adopt(recorded(task, pid_start_time=task.pid_start_time + 100.0)) is None
    status = restarted.stop(adopted)
    assert status.phase is TaskPhase.EXITED and status.signal is not None


def test_task_that_ended_while_down_reports_recorded_exit(executor: LocalExecutor) -> None:
    task = executor.launch(spec("import sys; sys.exit(5)"))
    wait_until(task.status_path.exists)
    del executor  # "crash": nobody polled it
    restarted = LocalExecutor(task.status_path.parents[4])
    adopted = restarted.adopt(recorded(task))
    assert adopted is not None
    status = restarted.poll(adopted)
    assert (status.phase, status.exit_code) == (TaskPhase.EXITED, 5)


def test_adopting_a_vanished_process_without_record_fails(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    status_path = tmp_path / "shoal" / "tasks" / "j" / "g-0" / "attempt-0" / "status.json"
    status_path.parent.mkdir(parents=True)
    lost = RecordedAttempt("j", "g", 0, 0, gone.pid, 1.0)
    assert LocalExecutor(tmp_path / "shoal").adopt(lost) is None


def test_an_attempt_claimed_but_never_started_is_started_after_a_restart(
        executor: LocalExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A control plane killed between its claim and its start left a claim and nothing
    else: the restarted one starts the attempt (once), rather than calling it lost."""
    from shoal.executors import local

    monkeypatch.setattr(local, "CLAIM_WAIT", 0.3)
    counter = tmp_path / "launches"
    code = f"open({str(counter)!r}, 'a').write('x\\n')"
    task_dir = executor.task_dir("job1", "worker", 0, 0)
    task_dir.mkdir(parents=True)
    (task_dir / local.LAUNCH_FILE).write_text("{}")  # the dead claimant's claim
    restarted = LocalExecutor(executor.root)
    handle = restarted.launch(spec(code))
    assert handle.pid > 0
    assert wait_exit(restarted, handle).exit_code == 0
    assert counter.read_text() == "x\n"
    # A third instance finds both claims taken and adopts the same process.
    assert LocalExecutor(executor.root).launch(spec(code)).pid == handle.pid
    assert counter.read_text() == "x\n"


def test_of_two_wrappers_started_for_one_attempt_only_one_runs_the_command(
        tmp_path: Path) -> None:
    from shoal.executors.local import WRAPPER

    task_dir = tmp_path / "attempt-0"
    task_dir.mkdir()
    counter = tmp_path / "runs"
    command = [sys.executable, "-c",
               f"import time; open({str(counter)!r}, 'a').write('x\\n'); time.sleep(0.3)"]
    wrappers = [subprocess.Popen([sys.executable, "-I", str(WRAPPER), str(task_dir), "--",
                                  *command]) for _ in range(2)]
    assert sorted(w.wait(timeout=10) for w in wrappers) == [0, 0]
    assert counter.read_text() == "x\n"
    assert (task_dir / "status.json").exists()
