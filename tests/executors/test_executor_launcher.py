"""The launcher (`shoal.executors.launcher`): a task's wrapper is forked by one long-lived
process instead of being a fresh interpreter, with the wrapper's guarantees kept — its own
pid record and status, a task that outlives a killed launcher and is adopted, a launcher
started again for the next task, and never two copies of one attempt."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import psutil
import pytest
from executor_support import gated, recorded, spec, wait_exit, wait_until

from shoal.executors.launcher import Launcher, LaunchRequest
from shoal.executors.local import LocalExecutor
from shoal.executors.task import RunningTask, TaskPhase
from shoal.executors.wrapper import PID_FILE, STATUS_FILE

DEADLINE = 30.0


def test_a_task_is_forked_by_the_launcher_and_records_its_outcome(
        executor: LocalExecutor) -> None:
    task = executor.launch(spec("import sys; print('out'); sys.exit(3)", job="forked"))
    launcher = executor.launcher
    assert launcher is not None and launcher.pid is not None
    status = wait_exit(executor, task, DEADLINE)
    assert (status.phase, status.exit_code) == (TaskPhase.EXITED, 3)
    task_dir = task.status_path.parent
    record = json.loads((task_dir / PID_FILE).read_text())
    assert (record["pid"], record["start_time"]) == (task.pid, task.pid_start_time)
    assert json.loads((task_dir / STATUS_FILE).read_text())["exit_code"] == 3
    assert task.stdout_path.read_text() == "out\n"
    # The wrapper was forked, not started: the launcher is its parent while it runs.
    gate = task_dir.parent / "gate"
    running = executor.launch(spec(gated(gate), job="forked", index=1))
    try:
        assert psutil.Process(running.pid).ppid() == launcher.pid
        assert launcher.starts == 1
    finally:
        gate.touch()
    assert wait_exit(executor, running, DEADLINE).exit_code == 0


def test_a_task_survives_its_launcher_and_is_adopted(executor: LocalExecutor,
                                                     tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    task = executor.launch(spec(gated(gate), job="survivor"))
    launcher = executor.launcher
    assert launcher is not None and launcher.pid is not None
    os.kill(launcher.pid, signal.SIGKILL)
    wait_until(lambda: launcher.pid is None, DEADLINE)
    assert executor.poll(task).running
    # A new control plane's executor adopts it from what the store recorded.
    restarted = LocalExecutor(executor.root, grace_period=2.0)
    try:
        adopted = restarted.adopt(recorded(task))
        assert adopted is not None and restarted.poll(adopted).running
        # The next launch starts a new launcher.
        other = executor.launch(spec("pass", job="after"))
        assert wait_exit(executor, other, DEADLINE).exit_code == 0
        assert launcher.starts == 2
        gate.touch()
        assert wait_exit(restarted, adopted, DEADLINE).exit_code == 0
    finally:
        gate.touch()
        restarted.close()


def test_a_duplicate_request_never_runs_a_second_copy(executor: LocalExecutor,
                                                      tmp_path: Path) -> None:
    gate, mark = tmp_path / "gate", tmp_path / "ran"
    launch = spec(gated(gate, mark), job="once")
    task = executor.launch(launch)
    # The executor's claim makes a second launch of the attempt the same process.
    assert executor.launch(launch).pid == task.pid
    # And a second wrapper forked for the attempt anyway (a request sent again to a new
    # launcher) loses the exclusive pid record: it exits without running the command.
    out, err = executor.log_paths("once", "worker", 0)
    task_dir = task.status_path.parent
    second = Launcher()
    try:
        duplicate = second.fork(LaunchRequest(task_dir, list(launch.command),
                                              dict(os.environ), None, out, err))
        wait_until(lambda: not _alive(duplicate.pid), DEADLINE)
    finally:
        second.close()
    wait_until(mark.exists, DEADLINE)
    gate.touch()
    assert wait_exit(executor, task, DEADLINE).exit_code == 0
    assert mark.read_text() == "ran\n"
    assert json.loads((task_dir / PID_FILE).read_text())["pid"] == task.pid


def test_an_executor_without_a_launcher_starts_each_wrapper(tmp_path: Path) -> None:
    executor = LocalExecutor(tmp_path / "shoal", launcher=False)
    task = executor.launch(spec("import sys; sys.exit(4)", job="direct"))
    assert executor.launcher is None
    assert wait_exit(executor, task, DEADLINE).exit_code == 4
    record = json.loads((task.status_path.parent / PID_FILE).read_text())
    assert record["pid"] == task.pid


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_a_task_without_a_working_directory_starts_in_the_executors(
        executor: LocalExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As a child of the server would: the launcher's own directory is "/".
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    task = executor.launch(spec("import os; print(os.getcwd())", job="cwd"))
    assert wait_exit(executor, task, DEADLINE).exit_code == 0
    assert Path(task.stdout_path.read_text().strip()) == here


def test_an_idle_launcher_reaps_the_wrappers_that_ended(executor: LocalExecutor) -> None:
    task = executor.launch(spec("pass", job="reaped"))
    assert wait_exit(executor, task, DEADLINE).exit_code == 0
    # No further request comes: the launcher still reaps it (no zombie keeps its pid).
    wait_until(lambda: not psutil.pid_exists(task.pid), DEADLINE)


def test_a_batch_is_forked_from_one_exchange_with_the_launcher(
        executor: LocalExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    executor.launch(spec("pass", job="warm"))  # the launcher runs before the batch
    launcher = executor.launcher
    assert launcher is not None and launcher.pid is not None
    exchanges: list[int] = []
    ask = launcher._ask

    def counted(lines: list[bytes]) -> list[dict[str, object] | None]:
        exchanges.append(len(lines))
        return ask(lines)

    monkeypatch.setattr(launcher, "_ask", counted)
    tasks = executor.launch_many([spec(gated(gate, tmp_path / f"ran-{i}"), job="batch",
                                       index=i) for i in range(5)])
    try:
        assert exchanges == [5]
        assert all(isinstance(t, RunningTask) for t in tasks)
        handles = [t for t in tasks if isinstance(t, RunningTask)]
        assert [t.index for t in handles] == list(range(5))
        assert all(psutil.Process(t.pid).ppid() == launcher.pid for t in handles)
        wait_until(lambda: all((tmp_path / f"ran-{i}").exists() for i in range(5)), DEADLINE)
    finally:
        gate.touch()
    assert [wait_exit(executor, t, DEADLINE).exit_code for t in handles] == [0] * 5


def test_a_batch_sent_to_a_dead_launcher_is_sent_again_to_a_new_one(
        executor: LocalExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = tmp_path / "gate"
    executor.launch(spec("pass", job="warm"))
    launcher = executor.launcher
    assert launcher is not None
    running = launcher._running
    killed: list[int] = []

    def dying() -> subprocess.Popen[bytes]:
        # The launcher dies just as the batch is sent: nothing of it is answered.
        process = running()
        if not killed:
            killed.append(process.pid)
            process.kill()
            process.wait()
        return process

    monkeypatch.setattr(launcher, "_running", dying)
    tasks = executor.launch_many([spec(gated(gate, tmp_path / f"ran-{i}"), job="again",
                                       index=i) for i in range(3)])
    try:
        handles = [t for t in tasks if isinstance(t, RunningTask)]
        assert len(handles) == 3 and launcher.starts == 2 and killed
        # Sent again to a new launcher: each attempt's own pid record names its process.
        for task in handles:
            record = json.loads((task.status_path.parent / PID_FILE).read_text())
            assert (record["pid"], record["start_time"]) == (task.pid, task.pid_start_time)
            assert task.pid > 0 and executor.poll(task).running
    finally:
        gate.touch()
    assert [wait_exit(executor, t, DEADLINE).exit_code for t in handles] == [0] * 3
    assert [(tmp_path / f"ran-{i}").read_text() for i in range(3)] == ["ran\n"] * 3
