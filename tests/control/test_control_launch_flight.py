"""Launches off the loop's thread (`shoal.control.inflight`): while a batch is in flight the
loop goes on serving, no task is recorded RUNNING before its launch returned, and a stop
decided meanwhile reaches the process the launch started."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

import pytest
from control_support import DEADLINE, RUNS_UNTIL_STOPPED, job, state_of, wait_for

from shoal.api import JobState, TaskRef, TaskState
from shoal.control import ControlPlane
from shoal.executors.task import RunningTask, TaskLaunch


class Gate:
    """Holds the launch worker in `launch_many` for a batch with a task of `jobs` until
    `release` is set; keeps every handle the engine returned."""

    def __init__(self, plane: ControlPlane, jobs: set[str]) -> None:
        self.failing = False
        """The engine refuses the gated batch's launches (each its own exception)."""
        self.entered = threading.Event()
        self.release = threading.Event()
        self.handles: list[RunningTask] = []
        self.threads: set[str] = set()
        inner = plane.executor.launch_many

        def gated(specs: Sequence[TaskLaunch]) -> list[RunningTask | BaseException]:
            self.threads.add(threading.current_thread().name)
            if any(spec.job in jobs for spec in specs):
                self.entered.set()
                assert self.release.wait(DEADLINE)
                if self.failing:
                    return [OSError("the engine refused it") for _ in specs]
            results = inner(specs)
            self.handles += [r for r in results if isinstance(r, RunningTask)]
            return results

        plane.executor.launch_many = gated  # type: ignore[method-assign]


@pytest.fixture
def looping(make_plane: Callable[[], ControlPlane]) -> Iterator[tuple[ControlPlane, Gate]]:
    plane = make_plane()
    plane.start()
    gate = Gate(plane, {"held"})
    stop = threading.Event()
    loop = threading.Thread(target=plane.run_forever, args=(stop,), daemon=True)
    loop.start()
    try:
        yield plane, gate
    finally:
        gate.release.set()
        stop.set()
        plane.wake_up()
        loop.join(timeout=DEADLINE)
        assert not loop.is_alive()


def _task(plane: ControlPlane, name: str) -> tuple[TaskState, int | None]:
    rec = plane.repository.task_records([name])[TaskRef(name, "worker", 0)]
    return rec.state, rec.pid


def test_the_loop_serves_while_a_batch_is_launched(
        looping: tuple[ControlPlane, Gate]) -> None:
    plane, gate = looping
    plane.submit(job("held", RUNS_UNTIL_STOPPED))
    assert gate.entered.wait(DEADLINE)
    # In flight: bound in the store, no process recorded, and not RUNNING.
    assert _task(plane, "held") == (TaskState.BOUND, None)
    # The loop is not waiting for the launch: it answers, cycles and binds another job.
    assert "default" in plane.virtual_cluster_status()
    plane.submit(job("next", "pass"))
    wait_for(lambda: _task(plane, "next")[0] is TaskState.BOUND)
    assert _task(plane, "held") == (TaskState.BOUND, None)
    # The workers launch (one per lane), not the loop.
    assert gate.threads and all(name.startswith("shoal-launch_") for name in gate.threads)
    gate.release.set()
    wait_for(lambda: _task(plane, "held")[0] is TaskState.RUNNING)
    assert [_task(plane, "held")[1]] == [h.pid for h in gate.handles if h.job == "held"]
    wait_for(lambda: state_of(plane, "next") is JobState.SUCCEEDED)


def test_a_cancel_while_the_launch_is_in_flight_stops_its_process(
        looping: tuple[ControlPlane, Gate]) -> None:
    plane, gate = looping
    plane.submit(job("held", RUNS_UNTIL_STOPPED))
    assert gate.entered.wait(DEADLINE)
    plane.cancel("held")
    # The loop took the cancel up and waits for the launch in flight before stopping.
    wait_for(plane._commands.empty)
    assert state_of(plane, "held") is not JobState.CANCELLED
    gate.release.set()
    wait_for(lambda: state_of(plane, "held") is JobState.CANCELLED)
    assert [h.job for h in gate.handles] == ["held"]
    assert not plane.executor.poll(gate.handles[0]).running  # the stop reached it
    events = [e.target for e in plane.repository.job_events("held") if e.task is not None]
    assert events[-2:] == ["Releasing", "Cancelled"]
    assert plane._tasks == {}


def test_a_cancel_while_a_failing_launch_is_in_flight_ends_the_job_once(
        looping: tuple[ControlPlane, Gate], caplog: pytest.LogCaptureFixture) -> None:
    plane, gate = looping
    gate.failing = True
    plane.submit(job("held", RUNS_UNTIL_STOPPED))
    assert gate.entered.wait(DEADLINE)
    plane.cancel("held")
    wait_for(plane._commands.empty)
    gate.release.set()
    # The failed launch, taken up first, fails the job; the cancel then finds it ended.
    wait_for(lambda: state_of(plane, "held").terminal)
    assert state_of(plane, "held") is JobState.FAILED
    assert "cannot launch: the engine refused it" in " ".join(
        e.cause for e in plane.repository.job_events("held"))
    assert _task(plane, "held")[0] is TaskState.FAILED
    assert plane._tasks == {} and gate.handles == []
    assert "control loop step failed" not in caplog.text
