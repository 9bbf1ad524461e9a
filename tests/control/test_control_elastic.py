"""Elastic jobs and evictions under the live control loop, with real processes (seed 001).

An elastic job grows into idle GPUs one allowed step at a time: each new task learns the
size it starts into, and the membership file follows every change. A higher-priority job
takes surplus back: the evicted tasks get SIGTERM and their grace, the preemptor's tasks
start only once they have exited (no GPU used twice), the evicted tasks go back to PENDING
without a failure, and the job grows again when the GPUs are free. A gang evicted whole
goes back to PENDING and runs again later. A restart in the middle of an eviction finishes
it.

The tests marked `BOTH_ENGINES` run on the Ray engine too: there each attempt is an actor on
the Ray node, a stop's SIGTERM and grace are the node's, and the membership file is the
engine's job file (`Executor.job_file`). They cover growth, eviction and the preemptor's
wait, new attempts after an eviction, a restart mid-eviction and a job at its minimum. Two
run locally only, since on Ray they would repeat those paths at the price of many more
actors (one per attempt, seconds each on a busy machine): a job ending while its surplus
stops (the preemptor's test already polls RELEASING tasks to their exit on Ray) and a gang
evicted whole (stops and second attempts, as in the preemptor's test). A surplus task retried
after rank 0 succeeded does not keep the job alive (local only: it is the loop's decision,
not the engine's). Every wait is on a
condition (a task's file written, a state stored); the time stamps compared are the tasks'
own, taken on this one machine."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from checkpointing_worker import started, stopped_at, task_states, worker_job
from control_support import (
    BOTH_ENGINES,
    finished,
    job,
    launch_code,
    launches,
    state_of,
    step_until,
)

from shoal.api import (
    Elasticity,
    JobState,
    PriorityClass,
    ScaleStep,
    TaskState,
)
from shoal.control import ControlPlane
from shoal.scheduler.profile import Profile

CLASSES = (PriorityClass("high", 1000), PriorityClass("low", 10))


@pytest.fixture
def make_elastic_plane(make_plane: Callable[..., ControlPlane]) -> Callable[[], ControlPlane]:
    """Control planes under the `elastic` profile (preempt, reclaim, elastic), with a grace
    period long enough for the tasks' SIGTERM handler."""
    return lambda: make_plane(Profile.load("elastic"), CLASSES, 5.0)


def membership_file(plane: ControlPlane, name: str) -> Path:
    return plane.executor.job_file("membership", name, None)


def membership(plane: ControlPlane, name: str) -> dict[str, object]:
    path = membership_file(plane, name)
    loaded: dict[str, object] = json.loads(path.read_text())
    return loaded


#: 1 → 4 by powers of two; the cooldown makes each step a cycle of its own (a job's start
#: counts as a size change).
STRETCHY = Elasticity("worker", 1, 4, ScaleStep.POWER_OF_TWO, scale_cooldown=0.3)


def grown_to_four(plane: ControlPlane, out: Path) -> None:
    plane.submit(worker_job("stretchy", out, replicas=4, priority="low", elastic=STRETCHY))
    step_until(plane, lambda: all(started(out, "stretchy", i) for i in range(4)))


@BOTH_ENGINES
def test_an_elastic_job_grows_step_by_step_and_its_tasks_learn_the_size(
        make_elastic_plane: Callable[[], ControlPlane], out: Path) -> None:
    plane = make_elastic_plane()
    plane.start()
    grown_to_four(plane, out)
    told = {i: started(out, "stretchy", i) for i in range(4)}
    # 1 → 2 → 4: each task starts into the size its step made.
    assert [(t or {})["WORLD_SIZE"] for t in told.values()] == ["1", "2", "4", "4"]
    assert [(t or {})["RANK"] for t in told.values()] == ["0", "1", "2", "3"]
    assert sorted((t or {})["CUDA_VISIBLE_DEVICES"] for t in told.values()) == \
        ["0", "1", "2", "3"]
    member_file = str(membership_file(plane, "stretchy"))
    assert {(t or {})["SHOAL_MEMBERSHIP_FILE"] for t in told.values()} == {member_file}
    now = membership(plane, "stretchy")
    assert (now["version"], now["worldSize"], now["replicas"]) == (3, 4, {"worker": 4})
    assert [(m["index"], m["rank"]) for m in now["members"]] == \
        [(0, 0), (1, 1), (2, 2), (3, 3)]  # type: ignore[index, union-attr]
    assert [r.replicas for r in (plane.last_decisions.resizes if plane.last_decisions
                                 else [])] in ([], [4])
    (out / "release").touch()
    step_until(plane, finished(plane, "stretchy"))
    assert state_of(plane, "stretchy") is JobState.SUCCEEDED
    assert not membership_file(plane, "stretchy").exists()


@BOTH_ENGINES
def test_a_preemptor_waits_for_the_surplus_it_takes_to_stop(
        make_elastic_plane: Callable[[], ControlPlane], out: Path) -> None:
    plane = make_elastic_plane()
    plane.start()
    grown_to_four(plane, out)
    plane.submit(worker_job("urgent", out, replicas=2, priority="high"))
    plane.step()
    # The surplus 2 and 3 are being stopped; the urgent tasks are bound, not started.
    assert task_states(plane, "stretchy") == [TaskState.RUNNING, TaskState.RUNNING,
                                              TaskState.RELEASING, TaskState.RELEASING]
    assert task_states(plane, "urgent") == [TaskState.BOUND, TaskState.BOUND]
    assert membership(plane, "stretchy")["worldSize"] == 2
    step_until(plane, lambda: all(started(out, "urgent", i) for i in range(2)))
    last_victim = max(stopped_at(out, "stretchy", i) for i in (2, 3))
    first_start = min(float((started(out, "urgent", i) or {})["started"])  # type: ignore[arg-type]
                      for i in range(2))
    assert first_start >= last_victim  # no GPU was used by two processes at once
    stored = plane.repository.get_job("stretchy")
    assert stored is not None and stored.state is JobState.RUNNING
    surplus = sorted(stored.tasks, key=lambda t: t.index)[2:]
    assert [(t.state, t.retries) for t in surplus] == [(TaskState.PENDING, 0)] * 2
    events = [e.cause for e in plane.repository.job_events("stretchy")]
    assert any(c.startswith("evicted:") for c in events)
    assert any(c.startswith("stopped after eviction (exited with code 143") for c in events)
    # The urgent job leaves: the GPUs come back and the job grows again, as new attempts.
    plane.cancel("urgent")
    step_until(plane, lambda: all(started(out, "stretchy", i, attempt=2) for i in (2, 3)))
    assert [(started(out, "stretchy", i, attempt=2) or {})["WORLD_SIZE"] for i in (2, 3)] \
        == ["4", "4"]
    assert membership(plane, "stretchy")["worldSize"] == 4
    (out / "release").touch()
    step_until(plane, finished(plane, "stretchy"))
    assert state_of(plane, "stretchy") is JobState.SUCCEEDED


def test_a_job_that_finishes_while_its_surplus_stops_ends(
        make_elastic_plane: Callable[[], ControlPlane], out: Path) -> None:
    """Its guaranteed tasks succeed while its evicted surplus is still in its SIGTERM
    handler: once that has stopped, the job succeeds — surplus that does not run is not
    waited for."""
    plane = make_elastic_plane()
    plane.start()
    grown_to_four(plane, out)
    plane.submit(worker_job("urgent", out, replicas=2, priority="high"))
    plane.step()
    assert task_states(plane, "stretchy")[2:] == [TaskState.RELEASING] * 2
    (out / "release").touch()
    step_until(plane, lambda: finished(plane, "stretchy")() and finished(plane, "urgent")())
    assert state_of(plane, "stretchy") is JobState.SUCCEEDED
    assert task_states(plane, "stretchy") == [TaskState.SUCCEEDED] * 2 + \
        [TaskState.CANCELLED] * 2


def test_a_gang_evicted_whole_waits_and_runs_again(
        make_elastic_plane: Callable[[], ControlPlane], out: Path) -> None:
    plane = make_elastic_plane()
    plane.start()
    plane.submit(worker_job("batch", out, replicas=3, priority="low"))
    step_until(plane, lambda: all(started(out, "batch", i) for i in range(3)))
    plane.submit(worker_job("urgent", out, replicas=2, priority="high"))
    plane.step()
    # Two GPUs free would not do: the gang of three is evicted whole, never left at one.
    assert task_states(plane, "batch") == [TaskState.RELEASING] * 3
    assert state_of(plane, "batch") is JobState.PENDING
    step_until(plane, lambda: all(started(out, "urgent", i) for i in range(2)))
    assert task_states(plane, "batch") == [TaskState.PENDING] * 3
    plane.cancel("urgent")
    step_until(plane, lambda: all(started(out, "batch", i, attempt=2) for i in range(3)))
    assert state_of(plane, "batch") is JobState.RUNNING
    (out / "release").touch()
    step_until(plane, finished(plane, "batch"))
    assert state_of(plane, "batch") is JobState.SUCCEEDED


@BOTH_ENGINES
def test_a_restart_in_the_middle_of_an_eviction_finishes_it(
        make_elastic_plane: Callable[[], ControlPlane], out: Path) -> None:
    first = make_elastic_plane()
    first.start()
    grown_to_four(first, out)
    first.submit(worker_job("urgent", out, replicas=2, priority="high"))
    first.step()
    assert task_states(first, "stretchy")[2:] == [TaskState.RELEASING] * 2
    # The control plane dies here; its successor finds the eviction under way.
    second = make_elastic_plane()
    second.start()
    assert task_states(second, "urgent") == [TaskState.BOUND, TaskState.BOUND]
    step_until(second, lambda: all(started(out, "urgent", i) for i in range(2)))
    last_victim = max(stopped_at(out, "stretchy", i) for i in (2, 3))
    assert min(float((started(out, "urgent", i) or {})["started"])  # type: ignore[arg-type]
               for i in range(2)) >= last_victim
    assert task_states(second, "stretchy") == [TaskState.RUNNING, TaskState.RUNNING,
                                               TaskState.PENDING, TaskState.PENDING]
    assert not any(started(out, "stretchy", i, attempt=2) for i in (2, 3))
    (out / "release").touch()
    step_until(second, lambda: finished(second, "urgent")() and finished(second, "stretchy")())


@BOTH_ENGINES
def test_without_the_elastic_action_a_job_runs_at_its_minimum(
        make_plane: Callable[..., ControlPlane], tmp_path: Path) -> None:
    """A profile without the elastic action never grows it: it runs at its minimum and ends
    without waiting for the surplus it never ran."""
    plane = make_plane(Profile.load("strict-fifo"))
    plane.start()
    code = (f"import json, os; json.dump({{k: os.environ[k] for k in ('RANK', 'WORLD_SIZE')}}, "
            f"open(os.path.join({str(tmp_path)!r}, 'rank-' + os.environ['RANK']), 'w'))")
    stretchy = replace(job("stretchy", code, replicas=4),
                       elastic=Elasticity("worker", 2, 4, ScaleStep.POWER_OF_TWO))
    plane.submit(stretchy)
    step_until(plane, finished(plane, "stretchy"))
    assert state_of(plane, "stretchy") is JobState.SUCCEEDED
    seen = sorted(sorted(json.loads(p.read_text()).items()) for p in tmp_path.glob("rank-*"))
    assert seen == [[("RANK", "0"), ("WORLD_SIZE", "2")], [("RANK", "1"), ("WORLD_SIZE", "2")]]
    assert task_states(plane, "stretchy") == [TaskState.SUCCEEDED, TaskState.SUCCEEDED,
                                              TaskState.CANCELLED, TaskState.CANCELLED]


def test_a_surplus_task_retried_after_rank_0_succeeded_ends_the_job(
        plane: ControlPlane, tmp_path: Path) -> None:
    """Rank 0 — the job's minimum — succeeds while its grown surplus task still runs; that
    task then exits 1 and is retried in place (`taskRetryCount` 1). The retry is PENDING
    surplus, which is not waited for, and the job is finishing, so nothing would ever place
    it: the job succeeds at once, the retry is cancelled and never launched. (The loop used
    to judge a job only when a task ended for good: it stayed RUNNING for ever.)"""
    go = tmp_path / "go"
    body = ("if rank == 0:\n"
            "    while launches(1) < 1: time.sleep(0.05)\n"
            "    sys.exit(0)\n"
            f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
            "sys.exit(1)")
    stretchy = replace(job("stretchy", launch_code(tmp_path, body), replicas=2,
                           task_retry_count=1), elastic=Elasticity("worker", 1, 2))
    plane.submit(stretchy)
    step_until(plane, lambda: task_states(plane, "stretchy")
               == [TaskState.SUCCEEDED, TaskState.RUNNING], 30.0)
    go.touch()
    step_until(plane, finished(plane, "stretchy"), 30.0)
    assert state_of(plane, "stretchy") is JobState.SUCCEEDED
    assert task_states(plane, "stretchy") == [TaskState.SUCCEEDED, TaskState.CANCELLED]
    assert (launches(tmp_path, 0), launches(tmp_path, 1)) == (1, 1)
    stored = plane.repository.get_job("stretchy")
    assert stored is not None and [t.retries for t in stored.tasks] == [0, 1]
    causes = [e.cause for e in plane.repository.job_events("stretchy")]
    assert "retry 1/1 after exit code 1" in causes
    assert any(c.endswith("surplus task stretchy/worker/1, retried, is not waited for")
               for c in causes), causes
    assert not plane._tasks
    assert "stretchy" not in plane.model.jobs
    assert plane.model.quota.root.usage.cpu == 0
