"""Cancel, and crash recovery: a second control plane on the same store and executor root
adopts what the first one left running, records what ended while it was down, and launches
what was bound but never launched, each exactly once.

Every test runs on both engines (`BOTH_ENGINES`). On Ray a second control plane finds the
first one's attempts by their actors' names in the shared namespace, or, once an attempt's
outcome is known and its actor ended, from its files on its node. The Ray cluster runs on
this machine, so a task's pid is a process here too: the tests that check a process is gone,
or kill one, look at it directly, as a node's own executor would."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import psutil
from control_support import (
    BOTH_ENGINES,
    DEADLINE,
    PY,
    ExecutorFactory,
    finished,
    job,
    state_of,
    step_until,
)

from shoal.api import Bind, JobState, Resources, TaskRef, TaskState
from shoal.control import ControlPlane
from shoal.executors.contract import RecordedAttempt
from shoal.executors.task import TaskLaunch

pytestmark = BOTH_ENGINES

Factory = Callable[[], ControlPlane]
REF = TaskRef("long", "worker", 0)


def _counting(counter: Path, go: Path, exit_code: int = 0) -> str:
    """Appends a line to `counter` on every launch, waits for `go`, exits `exit_code`."""
    return (f"import os, time, pathlib, sys\n"
            f"with open({str(counter)!r}, 'a') as f: f.write('x\\n')\n"
            f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
            f"sys.exit({exit_code})")


def _launches(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait(condition: Callable[[], bool]) -> None:
    """Wait, without a control plane, until `condition` holds (DEADLINE: a safety net)."""
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_cancel_kills_the_process_group(plane: ControlPlane, tmp_path: Path) -> None:
    child_pid = tmp_path / "child.pid"
    code = ("import subprocess, sys, time\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            f"open({str(child_pid)!r}, 'w').write(str(p.pid))\n"
            "time.sleep(60)")
    plane.submit(job("long", code))
    step_until(plane, lambda: child_pid.exists() and child_pid.read_text() != "")
    assert state_of(plane, "long") is JobState.RUNNING
    record = plane.repository.task_records(["long"])[REF]
    assert record.state is TaskState.RUNNING and record.pid
    plane.cancel("long")
    step_until(plane, finished(plane, "long"))
    assert state_of(plane, "long") is JobState.CANCELLED
    assert plane.repository.task_records(["long"])[REF].state is TaskState.CANCELLED
    assert _gone(record.pid) and _gone(int(child_pid.read_text()))
    assert "long" not in plane.model.jobs
    assert plane.cancel("long").state is JobState.CANCELLED  # a second cancel is a no-op


def test_cancel_of_a_waiting_job(plane: ControlPlane) -> None:
    plane.submit(job("huge", "pass", gpu=8))
    plane.step()
    plane.cancel("huge")
    plane.step()
    assert state_of(plane, "huge") is JobState.CANCELLED
    assert plane.repository.task_records(["huge"])[TaskRef("huge", "worker", 0)].state \
        is TaskState.CANCELLED


def test_running_task_is_adopted_not_relaunched(make_plane: Factory, tmp_path: Path) -> None:
    counter, go = tmp_path / "count", tmp_path / "go"
    first = make_plane()
    first.start()
    first.submit(job("long", _counting(counter, go)))
    step_until(first, lambda: _launches(counter) == 1)
    pid = first.repository.task_records(["long"])[REF].pid
    del first  # crashed: its task keeps running

    second = make_plane()
    second.start()
    assert REF in second._tasks and second._tasks[REF].handle.pid == pid
    second.step()
    assert _launches(counter) == 1 and state_of(second, "long") is JobState.RUNNING
    go.touch()
    step_until(second, finished(second, "long"))
    assert state_of(second, "long") is JobState.SUCCEEDED
    assert _launches(counter) == 1


def test_exit_while_down_is_recorded(make_plane: Factory, make_executor: ExecutorFactory,
                                     tmp_path: Path) -> None:
    counter, go = tmp_path / "count", tmp_path / "go"
    first = make_plane()
    first.start()
    first.submit(job("long", _counting(counter, go, exit_code=5)))
    step_until(first, lambda: _launches(counter) == 1)
    rec = first.repository.task_records(["long"])[REF]
    assert rec.pid
    attempt = RecordedAttempt("long", "worker", 0, rec.attempts, rec.pid,
                              rec.pid_start_time or 0.0)
    del first
    go.touch()  # the task ends while no control plane watches it
    # Its outcome is recorded (as another instance of the engine sees it) before the
    # successor starts.
    watcher = make_executor()
    _wait(lambda: not watcher.poll(watcher.recorded(attempt)).running)

    second = make_plane()
    second.start()
    step_until(second, finished(second, "long"))
    assert state_of(second, "long") is JobState.FAILED
    record = second.repository.task_records(["long"])[REF]
    assert (record.state, record.exit_code) == (TaskState.FAILED, 5)
    assert _launches(counter) == 1


def _bound_only(plane: ControlPlane, counter: Path, go: Path) -> None:
    """Persist a bind of job `long` as a crashed cycle would have, launching nothing."""
    plane.repository.submit_job(job("long", _counting(counter, go)))
    plane.repository.record_binds(
        [Bind(REF, "local", (2,), Resources.of(cpu=500, memory=128))], "cycle before crash")


def test_bound_task_is_launched_once_on_restart(make_plane: Factory, tmp_path: Path) -> None:
    counter, go = tmp_path / "count", tmp_path / "go"
    _bound_only(make_plane(), counter, go)
    second = make_plane()
    second.start()
    step_until(second, lambda: _launches(counter) == 1)
    record = second.repository.task_records(["long"])[REF]
    assert record.state is TaskState.RUNNING and record.gpus == (2,)
    go.touch()
    step_until(second, finished(second, "long"))
    assert state_of(second, "long") is JobState.SUCCEEDED
    assert _launches(counter) == 1


def test_launched_but_unrecorded_task_is_adopted(make_plane: Factory, tmp_path: Path) -> None:
    counter, go = tmp_path / "count", tmp_path / "go"
    first = make_plane()
    _bound_only(first, counter, go)
    # The crash came after the launch but before RUNNING was recorded.
    first.executor.launch(TaskLaunch(
        job="long", group="worker", index=0, world_size=1, rank=0, master_addr="127.0.0.1",
        master_port=29500, gpus=(2,), command=(PY, "-c", _counting(counter, go)),
        attempt=1, node="local"))
    second = make_plane()
    second.start()
    go.touch()
    step_until(second, finished(second, "long"))
    assert state_of(second, "long") is JobState.SUCCEEDED
    assert _launches(counter) == 1


def test_process_lost_while_down_fails_the_task(make_plane: Factory, tmp_path: Path) -> None:
    counter, go = tmp_path / "count", tmp_path / "go"
    first = make_plane()
    first.start()
    first.submit(job("long", _counting(counter, go)))
    step_until(first, lambda: _launches(counter) == 1)
    pid = first.repository.task_records(["long"])[REF].pid
    assert pid
    del first
    os.killpg(pid, signal.SIGKILL)  # wrapper and command die: nothing records how
    _wait(lambda: _gone(pid))

    second = make_plane()
    second.start()
    step_until(second, finished(second, "long"))
    assert state_of(second, "long") is JobState.FAILED
    events = second.repository.job_events("long")
    assert any(e.target == "Failed" and "lost" in e.cause for e in events)


def test_stop_under_way_is_finished_after_restart(make_plane: Factory, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    # Ignores SIGTERM: only the SIGKILL after the grace period ends it.
    code = ("import signal, time, pathlib\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            f"pathlib.Path({str(ready)!r}).touch()\n"
            "time.sleep(60)")
    first = make_plane()
    first.start()
    first.submit(job("long", code))
    step_until(first, ready.exists)
    first.cancel("long")
    first.step()
    assert first.repository.task_records(["long"])[REF].state is TaskState.RELEASING
    del first  # crashed during the grace period

    second = make_plane()
    second.start()
    step_until(second, finished(second, "long"))
    assert state_of(second, "long") is JobState.CANCELLED
    assert second.repository.task_records(["long"])[REF].state is TaskState.CANCELLED
