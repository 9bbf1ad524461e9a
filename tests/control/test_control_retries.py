"""Completion policy and retries through the live loop, with real processes: a task retried in
place, retries exhausted, minSucceeded and minFailed, a whole-job retry, a LOST process
retried after a restart, and restarts in the middle of a retry that launch nothing twice.

Each task appends its MASTER_PORT to `launch-<rank>` on every launch, so a test counts
launches per task and sees that a retried task kept the job's port."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import psutil
from control_support import finished, job, launch_code, launches, state_of, step_until

from shoal.api import JobState, TaskRef, TaskState
from shoal.control import ControlPlane
from shoal.executors.wrapper import STATUS_FILE
from shoal.store.stops import JOB_RETRIED

Factory = Callable[[], ControlPlane]
TIMEOUT = 20.0


def _code(d: Path, body: str) -> str:
    return launch_code(d, body, "MASTER_PORT")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _states(plane: ControlPlane, name: str) -> dict[int, TaskState]:
    return {r.ref.index: r.state for r in plane.repository.task_records([name]).values()}


def _causes(plane: ControlPlane, name: str) -> list[str]:
    return [e.cause for e in plane.repository.job_events(name)]


def test_task_retry_succeeds_on_the_second_attempt(plane: ControlPlane, tmp_path: Path) -> None:
    # Rank 0 fails its first launch; rank 1 keeps running until rank 0 is back, so the
    # retried task is placed again while its gang peer holds its resources.
    body = ("if rank == 0: sys.exit(2 if n == 1 else 0)\n"
            "end = time.time() + 20\n"
            "while launches(0) < 2 and time.time() < end: time.sleep(0.05)")
    plane.submit(job("retry", _code(tmp_path, body), replicas=2, task_retry_count=1))
    step_until(plane, finished(plane, "retry"), TIMEOUT)
    assert state_of(plane, "retry") is JobState.SUCCEEDED
    assert (launches(tmp_path, 0), launches(tmp_path, 1)) == (2, 1)
    ports = set((tmp_path / "launch-0").read_text().split() +
                (tmp_path / "launch-1").read_text().split())
    assert len(ports) == 1  # the job's MASTER_PORT stayed
    events = plane.repository.job_events("retry")
    rank0 = TaskRef("retry", "worker", 0)
    moves = [(e.source, e.target, e.cause) for e in events if e.task == rank0]
    assert ("Running", "Failed", "process exited with code 2") in moves
    assert ("Failed", "Pending", "retry 1/1 after exit code 2") in moves
    record = plane.repository.task_records(["retry"])[TaskRef("retry", "worker", 0)]
    assert (record.state, record.attempts, record.exit_code) == (TaskState.SUCCEEDED, 2, 0)
    stored = plane.repository.get_job("retry")
    assert stored is not None and [t.retries for t in stored.tasks] == [1, 0]
    assert plane.model.quota.root.usage.cpu == 0


def test_gang_task_retried_after_its_peer_succeeded(plane: ControlPlane,
                                                    tmp_path: Path) -> None:
    # Rank 1 succeeds at once; rank 0's first launch fails only once the store holds rank 1
    # as SUCCEEDED, so the retry waits with no live peer: the succeeded peer counts toward
    # the gang minimum and the retry is placed on its own. Second launches succeed.
    go = tmp_path / "go"
    body = (f"if rank == 1: sys.exit(0)\n"
            f"if n == 1:\n"
            f"    while not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
            f"    sys.exit(2)")
    plane.submit(job("late", _code(tmp_path, body), replicas=2, task_retry_count=1))
    step_until(plane, lambda: _states(plane, "late")[1] is TaskState.SUCCEEDED, TIMEOUT)
    assert _states(plane, "late")[0] is TaskState.RUNNING
    go.touch()
    step_until(plane, finished(plane, "late"), TIMEOUT)
    assert state_of(plane, "late") is JobState.SUCCEEDED
    assert (launches(tmp_path, 0), launches(tmp_path, 1)) == (2, 1)
    rank0 = TaskRef("late", "worker", 0)
    moves = [(e.source, e.target, e.cause) for e in plane.repository.job_events("late")
             if e.task == rank0]
    assert ("Failed", "Pending", "retry 1/1 after exit code 2") in moves
    record = plane.repository.task_records(["late"])[rank0]
    assert (record.state, record.attempts, record.exit_code) == (TaskState.SUCCEEDED, 2, 0)
    assert plane.model.quota.root.usage.cpu == 0


def test_retries_exhausted_fail_the_job(plane: ControlPlane, tmp_path: Path) -> None:
    plane.submit(job("hopeless", _code(tmp_path, "sys.exit(2)"), task_retry_count=2))
    step_until(plane, finished(plane, "hopeless"), TIMEOUT)
    assert state_of(plane, "hopeless") is JobState.FAILED
    assert launches(tmp_path, 0) == 3
    causes = _causes(plane, "hopeless")
    assert "retry 1/2 after exit code 2" in causes and "retry 2/2 after exit code 2" in causes
    assert any(c.startswith("1 task failed (minFailed 1)") for c in causes)
    record = plane.repository.task_records(["hopeless"])[TaskRef("hopeless", "worker", 0)]
    assert (record.state, record.attempts, record.exit_code) == (TaskState.FAILED, 3, 2)


def test_min_succeeded_one_of_three_cancels_the_rest(plane: ControlPlane,
                                                      tmp_path: Path) -> None:
    body = "if rank == 0: sys.exit(0)\ntime.sleep(60)"
    plane.submit(job("first", _code(tmp_path, body), replicas=3, min_succeeded=1))
    step_until(plane, finished(plane, "first"), TIMEOUT)
    assert state_of(plane, "first") is JobState.SUCCEEDED
    assert _states(plane, "first") == {0: TaskState.SUCCEEDED, 1: TaskState.CANCELLED,
                                       2: TaskState.CANCELLED}
    final = [e for e in plane.repository.job_events("first") if e.target == "Succeeded"
             and e.task is None]
    assert final and final[0].cause == "1 of 3 tasks succeeded (minSucceeded 1)"
    assert plane.model.quota.root.usage.cpu == 0


def test_min_failed_two_survives_the_first_failure(plane: ControlPlane,
                                                   tmp_path: Path) -> None:
    go = tmp_path / "go"
    body = (f"if rank == 0: sys.exit(1)\n"
            f"if rank == 1:\n"
            f"    while not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
            f"    sys.exit(1)\n"
            f"time.sleep(60)")
    plane.submit(job("tolerant", _code(tmp_path, body), replicas=3, min_failed=2))
    step_until(plane, lambda: _states(plane, "tolerant")[0] is TaskState.FAILED, TIMEOUT)
    for _ in range(3):
        plane.step()
    assert state_of(plane, "tolerant") is JobState.RUNNING
    assert _states(plane, "tolerant")[2] is TaskState.RUNNING
    go.touch()
    step_until(plane, finished(plane, "tolerant"), TIMEOUT)
    assert state_of(plane, "tolerant") is JobState.FAILED
    assert _states(plane, "tolerant") == {0: TaskState.FAILED, 1: TaskState.FAILED,
                                          2: TaskState.CANCELLED}
    assert any(c.startswith("2 tasks failed (minFailed 2)") for c in _causes(plane, "tolerant"))


# Rank 0's first launch fails once rank 1 runs; rank 1's first launch would run for a minute
# (and ignores SIGTERM, so its stop takes the grace period); second launches succeed.
GANG_RETRY = ("if n > 1: sys.exit(0)\n"
              "if rank == 0:\n"
              "    while launches(1) < 1: time.sleep(0.05)\n"
              "    sys.exit(3)\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "time.sleep(60)")


def _assert_gang_ran_twice(plane: ControlPlane, d: Path, name: str) -> None:
    assert state_of(plane, name) is JobState.SUCCEEDED
    assert (launches(d, 0), launches(d, 1)) == (2, 2)
    stored = plane.repository.get_job(name)
    assert stored is not None and (stored.retries, stored.job_retry_count) == (1, 1)
    events = plane.repository.job_events(name)
    retried = [e for e in events if e.kind == JOB_RETRIED]
    assert len(retried) == 1 and retried[0].cause.startswith("job retry 1/1: 1 task failed")
    job_moves = [(e.source, e.target) for e in events if e.task is None and e.source]
    assert job_moves == [("Pending", "Running"), ("Running", "Pending"),
                         ("Pending", "Running"), ("Running", "Succeeded")]
    stopped = [e for e in events if e.task == TaskRef(name, "worker", 1)
               and e.source == "Releasing"]
    assert len(stopped) == 1 and stopped[0].target == "Pending"


def test_job_retry_restarts_the_whole_gang(plane: ControlPlane, tmp_path: Path) -> None:
    plane.submit(job("gang", _code(tmp_path, GANG_RETRY), replicas=2, job_retry_count=1))
    step_until(plane, finished(plane, "gang"), TIMEOUT)
    _assert_gang_ran_twice(plane, tmp_path, "gang")


def test_job_retry_stop_interrupted_by_a_restart(make_plane: Factory, tmp_path: Path) -> None:
    first = make_plane()
    first.start()
    first.submit(job("gang", _code(tmp_path, GANG_RETRY), replicas=2, job_retry_count=1))
    repository = first.repository
    step_until(first, lambda: "gang" in repository.stopping_jobs(), TIMEOUT)
    assert _states(first, "gang")[1] is TaskState.RELEASING
    del first  # crashed while rank 1 was being stopped for the retry

    second = make_plane()
    second.start()
    step_until(second, finished(second, "gang"), TIMEOUT)
    _assert_gang_ran_twice(second, tmp_path, "gang")


def test_cancel_during_a_job_retry_cancels_the_job(plane: ControlPlane,
                                                   tmp_path: Path) -> None:
    plane.submit(job("gang", _code(tmp_path, GANG_RETRY), replicas=2, job_retry_count=1))
    step_until(plane, lambda: "gang" in plane.repository.stopping_jobs(), TIMEOUT)
    plane.cancel("gang")
    step_until(plane, finished(plane, "gang"), TIMEOUT)
    assert state_of(plane, "gang") is JobState.CANCELLED
    assert _states(plane, "gang") == {0: TaskState.FAILED, 1: TaskState.CANCELLED}
    assert (launches(tmp_path, 0), launches(tmp_path, 1)) == (1, 1)
    stored = plane.repository.get_job("gang")
    assert stored is not None and stored.retries == 0


def test_lost_process_after_a_restart_is_retried(make_plane: Factory, tmp_path: Path) -> None:
    first = make_plane()
    first.start()
    first.submit(job("lost", _code(tmp_path, "if n > 1: sys.exit(0)\ntime.sleep(60)"),
                     task_retry_count=1))
    step_until(first, lambda: launches(tmp_path, 0) == 1, TIMEOUT)
    pid = first.repository.task_records(["lost"])[TaskRef("lost", "worker", 0)].pid
    assert pid
    del first
    os.killpg(pid, signal.SIGKILL)  # wrapper and command die: nothing records how
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)

    second = make_plane()
    second.start()
    step_until(second, finished(second, "lost"), TIMEOUT)
    assert state_of(second, "lost") is JobState.SUCCEEDED
    assert launches(tmp_path, 0) == 2
    assert "retry 1/1 after a lost process" in _causes(second, "lost")


def _retried(plane: ControlPlane) -> bool:
    stored = plane.repository.get_job("again")
    return stored is not None and stored.tasks[0].retries == 1


def _failed_once_and_retry_recorded(make_plane: Factory, tmp_path: Path) -> ControlPlane:
    """A plane whose job `again` failed its first attempt, with the retry recorded (by
    polling, which runs no cycle) but not yet placed."""
    plane = make_plane()
    plane.start()
    plane.submit(job("again", _code(tmp_path, "sys.exit(2 if n == 1 else 0)"),
                     task_retry_count=1))
    plane.step()
    deadline = time.monotonic() + TIMEOUT
    while not _retried(plane) and time.monotonic() < deadline:
        plane.poll()
        time.sleep(0.05)
    return plane


def test_restart_after_the_retry_is_recorded_launches_once(make_plane: Factory,
                                                           tmp_path: Path) -> None:
    first = _failed_once_and_retry_recorded(make_plane, tmp_path)
    assert _states(first, "again")[0] is TaskState.PENDING
    del first  # crashed before the retry was placed

    second = make_plane()
    second.start()
    step_until(second, finished(second, "again"), TIMEOUT)
    assert state_of(second, "again") is JobState.SUCCEEDED
    assert launches(tmp_path, 0) == 2


def test_restart_between_the_retry_bind_and_its_launch(make_plane: Factory,
                                                       tmp_path: Path) -> None:
    first = _failed_once_and_retry_recorded(make_plane, tmp_path)
    first._launch_bound = lambda refs, **_: None  # type: ignore[method-assign]  # crash before launch
    first.run_cycle()
    record = first.repository.task_records(["again"])[TaskRef("again", "worker", 0)]
    assert (record.state, record.attempts) == (TaskState.BOUND, 2)
    del first

    second = make_plane()
    second.start()
    step_until(second, finished(second, "again"), TIMEOUT)
    assert state_of(second, "again") is JobState.SUCCEEDED
    assert launches(tmp_path, 0) == 2
    record = second.repository.task_records(["again"])[TaskRef("again", "worker", 0)]
    assert record.attempts == 2


def test_failure_while_down_is_retried_once(make_plane: Factory, tmp_path: Path) -> None:
    go = tmp_path / "go"
    body = (f"if n > 1: sys.exit(0)\n"
            f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
            f"sys.exit(4)")
    first = make_plane()
    first.start()
    first.submit(job("again", _code(tmp_path, body), task_retry_count=1))
    step_until(first, lambda: launches(tmp_path, 0) == 1, TIMEOUT)
    status = first.executor.task_dir("again", "worker", 0, 1) / STATUS_FILE
    del first
    go.touch()  # fails while no control plane watches it
    deadline = time.monotonic() + 10
    while not status.exists() and time.monotonic() < deadline:
        time.sleep(0.05)

    second = make_plane()
    second.start()
    step_until(second, finished(second, "again"), TIMEOUT)
    assert state_of(second, "again") is JobState.SUCCEEDED
    assert launches(tmp_path, 0) == 2
    assert "retry 1/1 after exit code 4" in _causes(second, "again")
