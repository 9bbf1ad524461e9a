"""Launching tasks: the environment, the logs, and how exits become task states."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from executor_support import spec, wait_exit

from shoal.api.lifecycle import TaskState
from shoal.executors.local import LocalExecutor, free_port
from shoal.executors.task import TaskLaunch, TaskPhase

PRINT_ENV = "import json, os; print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd()}))"


def _env_of(executor: LocalExecutor, launch: TaskLaunch) -> tuple[dict[str, str], str]:
    task = executor.launch(launch)
    status = wait_exit(executor, task)
    assert status.phase is TaskPhase.EXITED and status.exit_code == 0, status
    data = json.loads(task.stdout_path.read_text().strip().splitlines()[-1])
    return data["env"], data["cwd"]


def test_env_is_exactly_as_specified(executor: LocalExecutor, tmp_path: Path) -> None:
    workdir = tmp_path / "wd"
    workdir.mkdir()
    port = free_port()
    launch = spec(PRINT_ENV, job="train", group="trainer", index=1, gpus=(2, 3),
                  world_size=4, rank=3, master_addr="10.0.0.7", master_port=port,
                  working_dir=str(workdir),
                  # The job cannot widen its GPUs nor rename itself through its env.
                  env={"FOO": "bar", "CUDA_VISIBLE_DEVICES": "0,1,2,3", "SHOAL_JOB": "other"})
    env, cwd = _env_of(executor, launch)
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert env["SHOAL_JOB"] == "train"
    assert env["SHOAL_TASK_GROUP"] == "trainer"
    assert env["SHOAL_TASK_INDEX"] == "1"
    assert env["SHOAL_WORLD_SIZE"] == "4"
    assert env["SHOAL_RANK"] == "3"
    # torch.distributed's env:// rendezvous; each task sees its own GPUs from cuda:0.
    assert (env["RANK"], env["WORLD_SIZE"]) == ("3", "4")
    assert (env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"]) == ("0", "1")
    assert env["MASTER_ADDR"] == "10.0.0.7"
    assert env["MASTER_PORT"] == str(port)
    assert env["FOO"] == "bar"
    assert Path(cwd).resolve() == workdir.resolve()


def test_no_gpus_means_empty_cuda_visible_devices(tmp_path: Path) -> None:
    executor = LocalExecutor(tmp_path / "shoal", base_env={"PATH": "/usr/bin:/bin",
                                                           "CUDA_VISIBLE_DEVICES": "0"})
    env, _ = _env_of(executor, spec(PRINT_ENV, gpus=()))
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    # The base env is the executor's, not the test process's.
    assert env["PATH"] == "/usr/bin:/bin"


def test_free_port_is_bindable() -> None:
    port = free_port()
    assert 0 < port < 65536


def test_exit_codes_become_states(executor: LocalExecutor) -> None:
    ok = executor.launch(spec("pass", index=0))
    bad = executor.launch(spec("import sys; sys.exit(3)", index=1))
    ok_status, bad_status = wait_exit(executor, ok), wait_exit(executor, bad)
    assert (ok_status.phase, ok_status.exit_code, ok_status.signal) == (TaskPhase.EXITED, 0, None)
    assert ok_status.task_state() is TaskState.SUCCEEDED
    assert (bad_status.phase, bad_status.exit_code) == (TaskPhase.EXITED, 3)
    assert bad_status.task_state() is TaskState.FAILED


def test_killed_by_signal_reports_the_signal(executor: LocalExecutor) -> None:
    task = executor.launch(spec("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
    status = wait_exit(executor, task)
    assert status.phase is TaskPhase.EXITED
    assert status.exit_code is None and status.signal == signal.SIGKILL
    assert status.task_state() is TaskState.FAILED


def test_stdout_and_stderr_go_to_their_logs(executor: LocalExecutor, tmp_path: Path) -> None:
    code = "import sys; print('to-out'); print('to-err', file=sys.stderr)"
    task = executor.launch(spec(code, job="logs", group="g", index=2))
    wait_exit(executor, task)
    root = tmp_path / "shoal" / "logs" / "logs"
    assert task.stdout_path == root / "g-2.out"
    assert task.stderr_path == root / "g-2.err"
    assert task.stdout_path.read_text() == "to-out\n"
    assert task.stderr_path.read_text() == "to-err\n"
    # A second attempt appends to the same logs.
    wait_exit(executor, executor.launch(spec(code, job="logs", group="g", index=2, attempt=1)))
    assert task.stdout_path.read_text() == "to-out\nto-out\n"


def test_missing_command_and_missing_working_dir_fail_with_127(
        executor: LocalExecutor, tmp_path: Path) -> None:
    no_binary = executor.launch(TaskLaunch("j", "g", 0, 1, 0, "127.0.0.1", 1, (),
                                           ("/nonexistent/binary",)))
    status = wait_exit(executor, no_binary)
    assert (status.phase, status.exit_code) == (TaskPhase.EXITED, 127)
    no_dir = executor.launch(spec("pass", index=1, working_dir=str(tmp_path / "missing")))
    status = wait_exit(executor, no_dir)
    assert (status.phase, status.exit_code) == (TaskPhase.EXITED, 127)
    assert no_dir.pid == 0 and "cannot start" in status.detail


def test_names_that_escape_the_root_are_refused(executor: LocalExecutor) -> None:
    import pytest

    with pytest.raises(ValueError, match="job"):
        executor.launch(spec("pass", job="../evil"))
    with pytest.raises(ValueError, match="no command"):
        executor.launch(TaskLaunch("j", "g", 0, 1, 0, "127.0.0.1", 1, (), ()))
