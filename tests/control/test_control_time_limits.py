"""Time limits on the live control loop, by the loop's clock: a run past its limit is stopped
and the job fails, not retried; the loop knows when the next run reaches its limit; a
restart finds the deadline again from the store. And a name used again: the ended job's
files move to its history name before the new job runs, at once or after a restart."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from control_support import finished, job, step_until
from fake_clock import ManualClock

from shoal.api import JobState, Node, TaskState
from shoal.control import ControlPlane
from shoal.executors.local import LocalExecutor
from shoal.scheduler.profile import Profile
from shoal.store import Repository, Store

GRACE = 0.5
LIMIT = 30.0


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def make_plane(store: Store, node: Node, root: Path, clock: ManualClock) -> ControlPlane:
    return ControlPlane(Repository(store, clock=clock),
                        LocalExecutor(root, grace_period=GRACE), [node], Profile.default(),
                        clock=clock, interval=0.1, grace_period=GRACE)


@pytest.fixture
def plane(store: Store, node: Node, tmp_path: Path, clock: ManualClock
          ) -> Iterator[ControlPlane]:
    made = make_plane(store, node, tmp_path / "shoal", clock)
    yield made
    for tracked in list(made._tasks.values()):  # never leave a test's processes behind
        made.executor.stop(tracked.handle, 0)


def running(plane: ControlPlane, name: str) -> bool:
    found = plane.repository.get_job(name)
    return found is not None and any(t.state is TaskState.RUNNING for t in found.tasks)


def test_a_run_past_its_limit_is_stopped_and_the_job_fails_unretried(
        plane: ControlPlane, clock: ManualClock) -> None:
    sleeper = replace(job("sleeper", "import time; time.sleep(600)", job_retry_count=3),
                      time_limit=LIMIT)
    plane.submit(sleeper)
    step_until(plane, lambda: running(plane, "sleeper"))
    started = clock.now
    assert plane._enforce_time_limits() == started + LIMIT  # when the loop must wake

    clock.now = started + LIMIT - 1
    plane.step()
    assert running(plane, "sleeper")
    clock.now = started + LIMIT
    step_until(plane, finished(plane, "sleeper"))
    stored = plane.repository.get_job("sleeper")
    assert stored is not None and stored.state is JobState.FAILED and stored.retries == 0
    causes = [e.cause for e in plane.repository.event_page("sleeper", limit=100)]
    assert "time limit of 30s exceeded" in causes
    assert plane._enforce_time_limits() is None


def test_a_job_that_ends_in_time_is_not_touched(plane: ControlPlane,
                                                clock: ManualClock) -> None:
    quick = replace(job("quick", "pass"), time_limit=LIMIT)
    plane.submit(quick)
    step_until(plane, finished(plane, "quick"))
    assert plane.repository.get_job("quick").state is JobState.SUCCEEDED  # type: ignore


def test_a_restart_finds_the_deadline_from_the_store(store: Store, node: Node,
                                                    tmp_path: Path,
                                                    clock: ManualClock) -> None:
    first = make_plane(store, node, tmp_path / "shoal", clock)
    first.submit(replace(job("sleeper", "import time; time.sleep(600)"), time_limit=LIMIT))
    step_until(first, lambda: running(first, "sleeper"))
    started = clock.now
    clock.now = started + 10
    second = make_plane(store, node, tmp_path / "shoal", clock)  # the first one is gone
    try:
        second.start()
        assert second._enforce_time_limits() == started + LIMIT
        clock.now = started + LIMIT + 5
        step_until(second, finished(second, "sleeper"))
        assert second.repository.get_job("sleeper").state is JobState.FAILED  # type: ignore
    finally:
        for tracked in list(second._tasks.values()):
            second.executor.stop(tracked.handle, 0)


def test_a_name_used_again_runs_from_scratch_and_the_old_logs_move(
        plane: ControlPlane) -> None:
    plane.submit(job("quick", "print('first')"))
    step_until(plane, finished(plane, "quick"))
    plane.submit(job("quick", "print('second')"))
    step_until(plane, finished(plane, "quick"))
    logs = plane.executor.root / "logs"
    assert (logs / "quick" / "worker-0.out").read_text() == "second\n"
    assert (logs / "quick.1" / "worker-0.out").read_text() == "first\n"
    assert plane.repository.retired_files() == []
    assert plane.repository.get_job("quick.1").state is JobState.SUCCEEDED  # type: ignore


def test_files_left_unmoved_by_a_crash_are_moved_at_start(store: Store, node: Node,
                                                          tmp_path: Path,
                                                          clock: ManualClock) -> None:
    first = make_plane(store, node, tmp_path / "shoal", clock)
    first.submit(job("quick", "print('first')"))
    step_until(first, finished(first, "quick"))
    # Stored, but the loop never took it up: it stopped before moving the files.
    done = first.repository.submit(job("quick", "print('second')"))
    assert done.retired == "quick.1"
    assert first.repository.retired_files() == [("quick", "quick.1")]
    second = make_plane(store, node, tmp_path / "shoal", clock)
    step_until(second, finished(second, "quick"))
    logs = second.executor.root / "logs"
    assert (logs / "quick" / "worker-0.out").read_text() == "second\n"
    assert (logs / "quick.1" / "worker-0.out").read_text() == "first\n"
    assert second.repository.retired_files() == []
