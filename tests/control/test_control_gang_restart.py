"""A gang whose member was lost is restarted whole (`shoal.control.gang_restart`), through
the live loop with real processes on the local executor.

A task is lost the way a dead machine loses it: its wrapper and its command are killed
together (SIGKILL to the process group), so nothing records how it ended. Each task appends
a line to `launch-<rank>` on every launch: a test counts launches per task — every member of
a restarted gang ran exactly twice, a member retried alone ran twice while its peers ran
once. A second attempt of a gang member waits until all three have been launched twice:
it succeeds only if the whole gang was restarted together. A task group's `policies` opt its
exits in to a gang restart, or its losses out."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from control_support import finished, job, launch_code, launches, state_of, step_until

from shoal.api import Elasticity, FailureAction, FailureEvent, JobState, TaskRef, TaskState
from shoal.control import ControlPlane
from shoal.store.stops import GANG_RESTARTED, JOB_RETRIED

Factory = Callable[..., ControlPlane]
#: A safety net for a loaded machine, never a guess of how long anything takes.
TIMEOUT = 120.0
RANKS = range(3)


def _together(first_launch: str = "") -> str:
    """A first launch that runs until it is stopped (after `first_launch`); a second one
    that waits for all three ranks' second launches — so it ends well only when the whole
    gang runs again — then exits 0."""
    return (f"if n == 1:\n"
            f"    {first_launch or 'pass'}\n"
            f"    time.sleep({TIMEOUT}); sys.exit(1)\n"
            f"end = time.time() + {TIMEOUT}\n"
            f"while any(launches(r) < 2 for r in range(3)) and time.time() < end:\n"
            f"    time.sleep(0.05)\n"
            f"sys.exit(0 if all(launches(r) == 2 for r in range(3)) else 5)")


def _released(d: Path) -> str:
    """Every launch runs until `release` exists, then exits 0."""
    return (f"end = time.time() + {TIMEOUT}\n"
            f"while not (d / 'release').exists() and time.time() < end: time.sleep(0.05)\n"
            f"sys.exit(0 if (d / 'release').exists() else 6)")


def _records(plane: ControlPlane, name: str) -> dict[int, tuple[TaskState, int]]:
    """Per task index: its state and its attempt count (binds)."""
    return {r.ref.index: (r.state, r.attempts)
            for r in plane.repository.task_records([name]).values()}


def _running(plane: ControlPlane, d: Path, name: str, ranks: range = RANKS
             ) -> Callable[[], bool]:
    return lambda: all(launches(d, r) == 1 for r in ranks) and all(
        _records(plane, name)[r][0] is TaskState.RUNNING for r in ranks)


def _lose(plane: ControlPlane, name: str, index: int) -> None:
    """Kill task `index`'s wrapper and command together: the task is LOST."""
    pid = plane.repository.task_records([name])[TaskRef(name, "worker", index)].pid
    assert pid
    os.killpg(pid, signal.SIGKILL)


def _assert_gang_restarted_once(plane: ControlPlane, d: Path, name: str,
                                why: str = "was lost (") -> None:
    assert state_of(plane, name) is JobState.SUCCEEDED
    assert [launches(d, r) for r in RANKS] == [2, 2, 2]
    assert _records(plane, name) == {r: (TaskState.SUCCEEDED, 2) for r in RANKS}
    stored = plane.repository.get_job(name)
    assert stored is not None and stored.retries == 0  # no job retry was spent
    assert {t.index: t.retries for t in stored.tasks} == {0: 0, 1: 1, 2: 0}
    events = plane.repository.job_events(name)
    restarted = [e for e in events if e.kind == GANG_RESTARTED]
    assert len(restarted) == 1
    assert restarted[0].cause.startswith(f"gang restarted: task {name}/worker/1 {why}")
    assert restarted[0].cause.endswith("; retry 1/1")
    assert not [e for e in events if e.kind == JOB_RETRIED]
    job_moves = [(e.source, e.target) for e in events if e.task is None and e.source]
    assert job_moves == [("Pending", "Running"), ("Running", "Pending"),
                         ("Pending", "Running"), ("Running", "Succeeded")]
    lost = TaskRef(name, "worker", 1)
    assert ("Running", "Failed") in [(e.source, e.target) for e in events if e.task == lost]
    for peer in (0, 2):  # stopped for the restart, not failed
        moves = [(e.source, e.target) for e in events
                 if e.task == TaskRef(name, "worker", peer)]
        assert ("Running", "Releasing") in moves and ("Releasing", "Pending") in moves
        assert ("Running", "Failed") not in moves
    assert plane.model.quota.root.usage.cpu == 0


def test_a_lost_member_restarts_the_whole_gang(plane: ControlPlane, tmp_path: Path) -> None:
    plane.submit(job("gang", launch_code(tmp_path, _together()), replicas=3, task_retry_count=1))
    step_until(plane, _running(plane, tmp_path, "gang"), TIMEOUT)
    _lose(plane, "gang", 1)
    step_until(plane, finished(plane, "gang"), TIMEOUT)
    _assert_gang_restarted_once(plane, tmp_path, "gang")


def test_a_gang_that_opted_in_restarts_whole_on_an_exit(plane: ControlPlane,
                                                        tmp_path: Path) -> None:
    # Rank 1's first launch exits 3 once all three run: the group's policy makes that
    # restart the gang, as a loss does.
    fail = ("while rank == 1 and not all(launches(r) for r in range(3)): time.sleep(0.05)\n"
            "    if rank == 1: sys.exit(3)")
    made = job("gang", launch_code(tmp_path, _together(fail)), replicas=3, task_retry_count=1)
    opted = replace(made, groups=tuple(
        replace(g, policies={FailureEvent.TASK_FAILED: FailureAction.RESTART_GANG})
        for g in made.groups))
    plane.submit(opted)
    step_until(plane, finished(plane, "gang"), TIMEOUT)
    _assert_gang_restarted_once(plane, tmp_path, "gang", "failed (exit code 3); retry 1/1")


def test_a_gang_that_opted_out_retries_a_lost_task_alone(plane: ControlPlane,
                                                         tmp_path: Path) -> None:
    made = job("gang", launch_code(tmp_path, _released(tmp_path)), replicas=3, task_retry_count=1)
    opted = replace(made, groups=tuple(
        replace(g, policies={FailureEvent.TASK_LOST: FailureAction.RESTART_TASK})
        for g in made.groups))
    plane.submit(opted)
    step_until(plane, _running(plane, tmp_path, "gang"), TIMEOUT)
    _lose(plane, "gang", 1)
    step_until(plane, lambda: launches(tmp_path, 1) == 2, TIMEOUT)
    (tmp_path / "release").touch()
    step_until(plane, finished(plane, "gang"), TIMEOUT)
    assert state_of(plane, "gang") is JobState.SUCCEEDED
    assert [launches(tmp_path, r) for r in RANKS] == [1, 2, 1]
    assert not [e for e in plane.repository.job_events("gang") if e.kind == GANG_RESTARTED]


def test_past_its_task_retries_the_job_is_retried_whole(plane: ControlPlane,
                                                        tmp_path: Path) -> None:
    plane.submit(job("gang", launch_code(tmp_path, _together()), replicas=3, job_retry_count=1))
    step_until(plane, _running(plane, tmp_path, "gang"), TIMEOUT)
    _lose(plane, "gang", 1)
    step_until(plane, finished(plane, "gang"), TIMEOUT)
    assert state_of(plane, "gang") is JobState.SUCCEEDED
    assert [launches(tmp_path, r) for r in RANKS] == [2, 2, 2]
    stored = plane.repository.get_job("gang")
    assert stored is not None and stored.retries == 1
    events = plane.repository.job_events("gang")
    assert len([e for e in events if e.kind == JOB_RETRIED]) == 1
    assert not [e for e in events if e.kind == GANG_RESTARTED]


def test_an_elastic_jobs_lost_task_is_retried_alone(plane: ControlPlane,
                                                    tmp_path: Path) -> None:
    # Elastic 2..3: it may grow to three in idle capacity; whatever it does, only the lost
    # task runs again.
    elastic = replace(job("stretchy", launch_code(tmp_path, _released(tmp_path)), replicas=3,
                          task_retry_count=1), elastic=Elasticity("worker", 2, 3))
    plane.submit(elastic)
    step_until(plane, _running(plane, tmp_path, "stretchy", range(2)), TIMEOUT)
    _lose(plane, "stretchy", 1)
    step_until(plane, lambda: launches(tmp_path, 1) == 2, TIMEOUT)
    (tmp_path / "release").touch()
    step_until(plane, finished(plane, "stretchy"), TIMEOUT)
    assert state_of(plane, "stretchy") is JobState.SUCCEEDED
    assert (launches(tmp_path, 0), launches(tmp_path, 1)) == (1, 2)
    assert launches(tmp_path, 2) <= 1
    events = plane.repository.job_events("stretchy")
    assert not [e for e in events if e.kind in (GANG_RESTARTED, JOB_RETRIED)]
    assert any(e.cause.startswith("retry 1/1 after a lost process") for e in events
               if e.task == TaskRef("stretchy", "worker", 1))


def test_a_job_placed_task_by_task_retries_its_lost_task_in_place(
        plane: ControlPlane, tmp_path: Path) -> None:
    single = replace(job("single", launch_code(tmp_path, _released(tmp_path)), replicas=3,
                         task_retry_count=1), min_available=1)
    plane.submit(single)
    step_until(plane, _running(plane, tmp_path, "single"), TIMEOUT)
    _lose(plane, "single", 1)
    step_until(plane, lambda: launches(tmp_path, 1) == 2, TIMEOUT)
    assert [_records(plane, "single")[r][0] for r in (0, 2)] == [TaskState.RUNNING] * 2
    (tmp_path / "release").touch()
    step_until(plane, finished(plane, "single"), TIMEOUT)
    assert state_of(plane, "single") is JobState.SUCCEEDED
    assert [launches(tmp_path, r) for r in RANKS] == [1, 2, 1]
    assert not [e for e in plane.repository.job_events("single") if e.kind == GANG_RESTARTED]


def test_a_crash_between_the_stop_and_the_requeue_finishes_the_restart(
        make_plane: Factory, tmp_path: Path) -> None:
    # The peers ignore SIGTERM and the first plane's grace is long: it dies while they
    # are being stopped for the restart. The next plane finishes the stop and the restart.
    first = make_plane(grace_period=TIMEOUT)
    first.start()
    ignore = "signal.signal(signal.SIGTERM, signal.SIG_IGN)"
    first.submit(job("gang", launch_code(tmp_path, _together(ignore)), replicas=3,
                     task_retry_count=1))
    step_until(first, _running(first, tmp_path, "gang"), TIMEOUT)
    _lose(first, "gang", 1)
    repository = first.repository
    step_until(first, lambda: "gang" in repository.stopping_jobs(), TIMEOUT)
    assert [_records(first, "gang")[r][0] for r in RANKS] == \
        [TaskState.RELEASING, TaskState.PENDING, TaskState.RELEASING]
    del first  # crashed: the peers still run, the restart is only in the store

    second = make_plane()
    second.start()
    step_until(second, finished(second, "gang"), TIMEOUT)
    _assert_gang_restarted_once(second, tmp_path, "gang")
