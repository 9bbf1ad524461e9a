"""The launcher claims, prepares and starts each attempt the executor sends it whole
(`shoal.executors.local_launch`, `wrapper._claimed`): the server's lane touches no file,
and the crash guarantees hold when the launcher dies between an attempt's claim and its
answer — the attempt runs exactly once, started again by a second claim when nothing had
started it, adopted from its pid record when something had."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from executor_support import gated, spec, wait_exit, wait_until

from shoal.executors import claims, local, local_launch, wrapper
from shoal.executors.local import LocalExecutor
from shoal.executors.task import RunningTask, TaskPhase
from shoal.executors.wrapper import LAUNCH_FILE, PID_FILE

DEADLINE = 30.0


def test_the_server_touches_no_file_of_an_attempt_it_launches(
        executor: LocalExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("the server made an attempt's files itself")

    # In this process only: the launcher (another process) has its own.
    monkeypatch.setattr(claims, "private_dirs", refused)
    monkeypatch.setattr(wrapper, "create_json_exclusive", refused)
    monkeypatch.setattr(local, "create_json_exclusive", refused)
    tasks = executor.launch_many([spec("pass", job="moved", index=i) for i in range(3)])
    handles = [t for t in tasks if isinstance(t, RunningTask)]
    assert len(handles) == 3
    for task in handles:
        assert task.pid > 0 and (task.status_path.parent / LAUNCH_FILE).exists()
        assert wait_exit(executor, task, DEADLINE).exit_code == 0


def test_an_attempt_claimed_by_a_launcher_that_died_before_starting_it_runs_once(
        executor: LocalExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher claimed the attempt and died before it started anything or answered:
    the request sent again finds the claim, no pid record appears, and a second claim
    starts it — once."""
    monkeypatch.setattr(local, "CLAIM_WAIT", 0.3)
    gate, mark = tmp_path / "gate", tmp_path / "ran"
    task_spec = spec(gated(gate, mark), job="orphan")
    claim = local_launch._claim(executor, task_spec, local_launch.Inherited(None))
    # What the dead launcher did: the claim step, and no spawn.
    assert wrapper._claimed(claims, json.loads(claim.line)) is None
    task_dir = Path(claim.task_dir)
    assert (task_dir / LAUNCH_FILE).exists() and not (task_dir / PID_FILE).exists()
    task = executor.launch(task_spec)
    try:
        assert task.pid > 0 and (task_dir / local.RELAUNCH_FILE).exists()
        wait_until(mark.exists, DEADLINE)
    finally:
        gate.touch()
    assert wait_exit(executor, task, DEADLINE).exit_code == 0
    assert mark.read_text() == "ran\n"


def test_a_launcher_killed_between_the_claims_and_their_answers_runs_each_once(
        executor: LocalExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher dies once the batch's claims exist and before an answer is read
    (having started some wrappers, or none): the batch is sent again to a new launcher,
    which finds every attempt claimed, and each attempt's pid record, or a second claim,
    says which one process runs it."""
    monkeypatch.setattr(local, "CLAIM_WAIT", 0.5)
    gate = tmp_path / "gate"
    executor.launch(spec("pass", job="warm"))
    launcher = executor.launcher
    assert launcher is not None
    ask = launcher._ask
    specs = [spec(gated(gate, tmp_path / f"ran-{i}"), job="crash", index=i)
             for i in range(3)]
    claimed = [executor.task_dir(s.job, s.group, s.index, s.attempt) / LAUNCH_FILE
               for s in specs]
    killed: list[int] = []

    def dying(lines: list[bytes]) -> list[dict[str, object] | None]:
        if killed:
            return ask(lines)
        process = launcher._running()
        stdin = process.stdin
        assert stdin is not None
        stdin.write(b"".join(lines))
        stdin.flush()
        wait_until(lambda: all(path.exists() for path in claimed), DEADLINE)
        killed.append(process.pid)
        process.kill()
        process.wait()
        return [None] * len(lines)

    monkeypatch.setattr(launcher, "_ask", dying)
    tasks = executor.launch_many(specs)
    try:
        handles = [t for t in tasks if isinstance(t, RunningTask)]
        assert len(handles) == 3 and killed and launcher.starts == 2
        for task in handles:
            record = json.loads((task.status_path.parent / PID_FILE).read_text())
            assert (record["pid"], record["start_time"]) == (task.pid, task.pid_start_time)
        wait_until(lambda: all((tmp_path / f"ran-{i}").exists() for i in range(3)), DEADLINE)
    finally:
        gate.touch()
    assert [wait_exit(executor, t, DEADLINE).exit_code for t in handles] == [0] * 3
    assert [(tmp_path / f"ran-{i}").read_text() for i in range(3)] == ["ran\n"] * 3


def test_a_spec_that_can_never_run_is_refused_before_its_claim(
        executor: LocalExecutor) -> None:
    bad = spec("pass", job="bad", env={"X": "a\0b"})
    [result] = executor.launch_many([bad])
    assert isinstance(result, ValueError)
    assert not executor.task_dir(bad.job, bad.group, bad.index, bad.attempt).exists()


def test_a_start_the_launcher_cannot_make_is_recorded_in_the_attempts_status(
        executor: LocalExecutor, tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    good, lost = executor.launch_many([spec("pass", job="cwd", index=0),
                                       spec("pass", job="cwd", index=1,
                                            working_dir=str(missing))])
    assert isinstance(good, RunningTask) and isinstance(lost, RunningTask)
    assert lost.pid == 0
    status = executor.poll(lost)
    assert (status.phase, status.exit_code) == (TaskPhase.EXITED, 127)
    record = json.loads(lost.status_path.read_text())
    assert record["error"].startswith("cannot start: ") and str(missing) in record["error"]
    assert wait_exit(executor, good, DEADLINE).exit_code == 0
    assert (lost.status_path.parent / LAUNCH_FILE).exists()


def test_the_launcher_loads_the_claims_by_path_without_shoal(tmp_path: Path) -> None:
    """The launcher runs with `-I` and imports nothing of Shoal: it finds `claims.py`
    beside `wrapper.py`."""
    code = ("import sys; sys.argv = ['w']; import runpy; "
            f"m = runpy.run_path({str(Path(wrapper.__file__))!r}); "
            "c = m['_load_claims'](); "
            "print(c.__name__, 'shoal' in sys.modules)")
    done = subprocess.run([local.sys.executable, "-I", "-c", code], capture_output=True,
                          text=True, check=True, cwd=tmp_path, timeout=60)
    assert done.stdout.split() == ["shoal_launch_claims", "False"]
