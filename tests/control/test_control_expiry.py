"""Jobs leave the store: the TTL removes a job that ended longer ago than `job_ttl` by the
loop's clock (with its files), and a job deleted while it runs is stopped, then removed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from control_support import RUNS_UNTIL_STOPPED, finished, job, step_until
from fake_clock import ManualClock

from shoal.api import Node
from shoal.control import ControlPlane
from shoal.control.expiry import JobExpiry
from shoal.executors.local import LocalExecutor
from shoal.scheduler.profile import Profile
from shoal.store import Repository, Store

TTL = 3600.0
GRACE = 0.5


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def plane(store: Store, node: Node, tmp_path: Path, clock: ManualClock
          ) -> Iterator[ControlPlane]:
    repository = Repository(store, clock=clock)
    executor = LocalExecutor(tmp_path / "shoal", grace_period=GRACE)
    made = ControlPlane(repository, executor, [node], Profile.default(), clock=clock,
                        interval=0.1, grace_period=GRACE, job_ttl=TTL)
    yield made
    for tracked in list(made._tasks.values()):  # never leave a test's processes behind
        executor.stop(tracked.handle, 0)


def test_the_ttl_removes_a_job_that_ended_long_enough_ago(plane: ControlPlane,
                                                         clock: ManualClock) -> None:
    plane.submit(job("quick", "print('done')"))
    step_until(plane, finished(plane, "quick"))
    summary = plane.repository.job_summary("quick")
    assert summary is not None and summary.ended == clock.now
    logs = plane.executor.root / "logs" / "quick"
    assert logs.is_dir()

    clock.now = summary.ended + TTL - 1
    plane.step()
    assert plane.repository.job_summary("quick") is not None  # not yet

    clock.now = summary.ended + TTL + 61  # past the TTL, and past the next sweep
    plane.step()
    assert plane.repository.job_summary("quick") is None
    assert not logs.exists() and not (plane.executor.root / "tasks" / "quick").exists()
    # The name is free: a new job of that name runs from its first attempt.
    plane.submit(job("quick", "print('again')"))
    step_until(plane, finished(plane, "quick"))
    assert (logs / "worker-0.out").read_text() == "again\n"


def test_a_zero_ttl_keeps_ended_jobs(store: Store, node: Node, tmp_path: Path,
                                     clock: ManualClock) -> None:
    repository = Repository(store, clock=clock)
    plane = ControlPlane(repository, LocalExecutor(tmp_path / "shoal", grace_period=GRACE),
                         [node], Profile.default(), clock=clock, interval=0.1, job_ttl=0)
    plane.submit(job("kept", "pass"))
    step_until(plane, finished(plane, "kept"))
    clock.now += 10 * 365 * 86400.0
    plane.step()
    assert repository.job_summary("kept") is not None


def test_deleting_a_running_job_stops_it_then_removes_it(plane: ControlPlane) -> None:
    plane.submit(job("sleeper", RUNS_UNTIL_STOPPED))
    step_until(plane, lambda: any(r.job == "sleeper" and t.handle.pid > 0
                                  for r, t in plane._tasks.items()))
    pid = next(t.handle.pid for r, t in plane._tasks.items() if r.job == "sleeper")
    assert plane.delete("sleeper") is False  # it runs: stopped first
    summary = plane.repository.job_summary("sleeper")
    assert summary is not None and summary.delete_requested
    step_until(plane, lambda: plane.repository.job_summary("sleeper") is None)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not plane._tasks


def test_deleting_an_ended_job_removes_it_at_once(plane: ControlPlane) -> None:
    plane.submit(job("quick", "pass"))
    step_until(plane, finished(plane, "quick"))
    assert plane.delete("quick") is True
    assert plane.repository.job_summary("quick") is None
    assert not (plane.executor.root / "logs" / "quick").exists()


def test_a_short_ttl_is_swept_often_a_long_one_every_minute(repo: Repository) -> None:
    assert JobExpiry(repo, 5.0).every == 1.0
    assert JobExpiry(repo, 300.0).every == 30.0
    assert JobExpiry(repo, 7 * 86400.0).every == JobExpiry(repo, 0).every == 60.0
    with pytest.raises(ValueError):
        JobExpiry(repo, -1.0)
