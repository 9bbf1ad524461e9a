"""Gates through the control loop with real processes (`shoal.control.gating`): a job that
depends on another runs only once it has succeeded, one whose dependency fails is cancelled
with its own dependents, a held job waits for its release, a requeued job runs again from
scratch counting no retry, and a restarted control plane gates from the store again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from control_support import finished, job, state_of, step_until

from shoal.api import JobState, PendingKind, TaskState
from shoal.control import ControlPlane
from shoal.store.stops import JOB_REQUEUED

TIMEOUT = 60.0


def _writes(path: Path, extra: str = "") -> str:
    """Code that appends a line to `path` (O_APPEND: tasks that run at once lose no line),
    then runs `extra`."""
    return f"import pathlib, sys, time\np = pathlib.Path({str(path)!r})\n" \
           f"with open(p, 'a') as f: f.write('ran\\n')\n{extra}"


def _runs(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_dependent_runs_only_after_its_dependency_succeeded(plane: ControlPlane,
                                                            tmp_path: Path) -> None:
    gate = tmp_path / "go"
    first = tmp_path / "a.out"
    # `a` waits for the test's go-ahead: `b` must wait all that time.
    plane.submit(job("a", _writes(first, f"while not pathlib.Path({str(gate)!r}).exists(): "
                                         "time.sleep(0.02)")))
    plane.submit(replace(job("b", f"import pathlib, sys; sys.exit(0 if pathlib.Path("
                                  f"{str(first)!r}).exists() else 3)"), depends_on=("a",)))
    step_until(plane, lambda: _runs(first) == 1, TIMEOUT)
    for _ in range(3):
        plane.step()
    reason = plane.pending_reason("b")
    assert reason is not None and reason.kind is PendingKind.DEPENDENCY
    assert reason.message == "waiting for job 'a' to succeed"
    assert "b" not in plane.model.jobs
    assert {t.state for t in plane.repository.get_job("b").tasks} == {TaskState.PENDING}  # type: ignore[union-attr]
    gate.touch()
    step_until(plane, finished(plane, "b"), TIMEOUT)
    assert state_of(plane, "a") is JobState.SUCCEEDED
    assert state_of(plane, "b") is JobState.SUCCEEDED


def test_a_failed_dependency_cancels_the_dependents_in_turn(plane: ControlPlane,
                                                          tmp_path: Path) -> None:
    never = tmp_path / "never"
    plane.submit(job("a", "import sys; sys.exit(4)"))
    plane.submit(replace(job("b", _writes(never)), depends_on=("a",)))
    plane.submit(replace(job("c", _writes(never)), depends_on=("b",)))
    step_until(plane, finished(plane, "c"), TIMEOUT)
    assert [state_of(plane, n) for n in "abc"] == [JobState.FAILED, JobState.CANCELLED,
                                                    JobState.CANCELLED]
    causes = [e.cause for e in plane.repository.job_events("c")]
    assert "dependency 'b' ended Cancelled" in causes
    assert "dependency 'a' ended Failed" in [e.cause for e in plane.repository.job_events("b")]
    assert not never.exists()
    assert plane.pending_reason("c") is None


def test_a_held_job_waits_for_its_release(plane: ControlPlane, tmp_path: Path) -> None:
    out = tmp_path / "held.out"
    plane.submit(replace(job("later", _writes(out)), held=True))
    plane.submit(job("other", "pass"))
    step_until(plane, finished(plane, "other"), TIMEOUT)
    assert state_of(plane, "later") is JobState.PENDING and not out.exists()
    assert plane.pending_reason("later").kind is PendingKind.HELD  # type: ignore[union-attr]
    assert plane.release("later", "alice")
    step_until(plane, finished(plane, "later"), TIMEOUT)
    assert state_of(plane, "later") is JobState.SUCCEEDED and _runs(out) == 1


def test_holding_a_waiting_job_takes_it_out_until_released(plane: ControlPlane,
                                                           tmp_path: Path) -> None:
    out = tmp_path / "w.out"
    plane.submit(job("waits", _writes(out)))
    assert plane.hold("waits", "bob")  # before any cycle: it is pending, nothing placed
    for _ in range(3):
        plane.step()
    assert not out.exists() and "waits" not in plane.model.jobs
    assert not plane.hold("waits", "bob")  # held already
    plane.release("waits", "bob")
    step_until(plane, finished(plane, "waits"), TIMEOUT)
    causes = [(e.kind, e.cause) for e in plane.repository.job_events("waits")]
    assert ("JobHeld", "held by bob") in causes and ("JobReleased", "released by bob") in causes


def test_requeue_restarts_a_running_job_from_scratch(plane: ControlPlane,
                                                     tmp_path: Path) -> None:
    out = tmp_path / "r.out"
    # The first run's two tasks wait to be stopped; the second run's end at once.
    plane.submit(job("r", _writes(out, "if len(p.read_text().splitlines()) <= 2:\n"
                                       "    time.sleep(60)"), replicas=2))
    step_until(plane, lambda: _runs(out) == 2, TIMEOUT)
    plane.requeue("r", "alice")
    step_until(plane, finished(plane, "r"), TIMEOUT)
    assert state_of(plane, "r") is JobState.SUCCEEDED
    assert _runs(out) == 4  # each task ran twice
    stored = plane.repository.get_job("r")
    assert stored is not None and stored.retries == 0
    assert JOB_REQUEUED in [e.kind for e in plane.repository.job_events("r")]


def test_a_restarted_plane_gates_from_the_store(make_plane: Callable[[], ControlPlane],
                                                tmp_path: Path) -> None:
    gate = tmp_path / "go"
    first = make_plane()
    first.submit(job("a", f"import pathlib, time\nwhile not pathlib.Path({str(gate)!r})"
                          ".exists(): time.sleep(0.02)"))
    first.submit(replace(job("b", "pass"), depends_on=("a",)))
    first.submit(replace(job("h", "pass"), held=True))
    step_until(first, lambda: state_of(first, "a") is JobState.RUNNING, TIMEOUT)
    second = make_plane()  # the first one is gone, as after a crash: its state is stored
    second.start()
    assert "b" not in second.model.jobs and "h" not in second.model.jobs
    assert second.pending_reason("b").kind is PendingKind.DEPENDENCY  # type: ignore[union-attr]
    assert second.pending_reason("h").kind is PendingKind.HELD  # type: ignore[union-attr]
    gate.touch()
    step_until(second, finished(second, "b"), TIMEOUT)
    assert state_of(second, "b") is JobState.SUCCEEDED
    assert state_of(second, "h") is JobState.PENDING


