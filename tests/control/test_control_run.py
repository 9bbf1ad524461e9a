"""Jobs run to completion through the live loop: states, causes, gangs, GPUs, waiting.

The tests marked `BOTH_ENGINES` run on the Ray engine too: there each of their few short
tasks is an actor on the Ray node, and what the loop sees of it (its log, its exit code, its
GPUs, a stop, a loop in its own thread) comes through the executor contract only. The rest
run locally only: they are about the scheduling model (a job too big, virtual clusters and
their carving, restored after a restart), where the engine only runs trivial tasks, as the
first test does on Ray (and the recovery suite restarts control planes on Ray)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from control_support import (
    BOTH_ENGINES,
    DEADLINE,
    ExecutorFactory,
    finished,
    job,
    state_of,
    stdout_of,
    step_until,
)

from shoal.api import JobState, PendingKind, TaskRef, TaskState
from shoal.control import ControlPlane

ENV = ("import os; print(os.environ['SHOAL_WORLD_SIZE'], os.environ['SHOAL_RANK'], "
       "os.environ['MASTER_PORT'], repr(os.environ['CUDA_VISIBLE_DEVICES']))")


@BOTH_ENGINES
def test_single_task_succeeds_with_causes(plane: ControlPlane) -> None:
    plane.submit(job("ok", "print('hello')"))
    step_until(plane, finished(plane, "ok"))
    assert state_of(plane, "ok") is JobState.SUCCEEDED
    events = plane.repository.job_events("ok")
    moves = [(e.task is not None, e.source, e.target) for e in events]
    assert moves == [(False, None, "Pending"), (True, "Pending", "Bound"),
                     (False, "Pending", "Running"), (True, "Bound", "Running"),
                     (True, "Running", "Succeeded"), (False, "Running", "Succeeded")]
    assert all(e.cause for e in events)
    assert "scheduling cycle" in events[1].cause
    assert "exited with code 0" in events[4].cause
    assert stdout_of(plane, "ok", "worker", 0) == "hello\n"
    assert "ok" not in plane.model.jobs and plane.model.quota.root.usage.cpu == 0


@BOTH_ENGINES
def test_exit_code_3_fails_the_job(plane: ControlPlane) -> None:
    plane.submit(job("bad", "raise SystemExit(3)"))
    step_until(plane, finished(plane, "bad"))
    assert state_of(plane, "bad") is JobState.FAILED
    record = plane.repository.task_records(["bad"])[TaskRef("bad", "worker", 0)]
    assert (record.state, record.exit_code) == (TaskState.FAILED, 3)
    causes = [e.cause for e in plane.repository.job_events("bad") if e.target == "Failed"]
    assert any("exited with code 3" in c for c in causes)


@BOTH_ENGINES
def test_gang_starts_together_with_ranks_and_one_port(plane: ControlPlane) -> None:
    plane.submit(job("gang", ENV, groups=2))
    decisions = plane.step()
    assert sorted(str(b.task) for b in decisions.binds) == ["gang/g0/0", "gang/g1/0"]
    step_until(plane, finished(plane, "gang"))
    assert state_of(plane, "gang") is JobState.SUCCEEDED
    lines = [stdout_of(plane, "gang", g, 0).split() for g in ("g0", "g1")]
    assert [line[:2] for line in lines] == [["2", "0"], ["2", "1"]]
    assert lines[0][2] == lines[1][2]
    bound = [e for e in plane.repository.job_events("gang") if e.target == "Bound"]
    assert len(bound) == 2 and bound[0].cause == bound[1].cause


@BOTH_ENGINES
def test_gpus_never_overlap_and_a_waiting_job_has_a_reason(plane: ControlPlane) -> None:
    code = ("import os, time; print(os.environ['CUDA_VISIBLE_DEVICES']); "
            "time.sleep(1.0)")
    plane.submit(job("two", code, gpu=2))
    for name in ("a", "b"):
        plane.submit(job(name, code, gpu=1))
    plane.submit(job("late", code, gpu=1))
    first = plane.step()
    assert sorted(b.task.job for b in first.binds) == ["a", "b", "two"]
    reason = plane.pending_reason("late")
    assert reason is not None and reason.kind is PendingKind.INSUFFICIENT_RESOURCES
    step_until(plane, lambda: all(state_of(plane, n).terminal
                                  for n in ("two", "a", "b", "late")))
    seen = [set(stdout_of(plane, n, "worker", 0).strip().split(",")) for n in ("two", "a", "b")]
    assert sum(len(s) for s in seen) == 4 and set().union(*seen) == {"0", "1", "2", "3"}
    assert plane.pending_reason("late") is None
    # Why it waited stays in its history after it ran.
    waited = [e.cause for e in plane.repository.job_events("late") if e.kind == "Waiting"]
    assert waited == [f"{reason.kind.value}: {reason.message}"]


def test_too_big_job_waits(plane: ControlPlane) -> None:
    plane.submit(job("huge", "pass", gpu=8))
    plane.step()
    plane.step()
    assert state_of(plane, "huge") is JobState.PENDING
    reason = plane.pending_reason("huge")
    assert reason is not None and "gpu" in reason.message.lower()


@BOTH_ENGINES
def test_first_failure_stops_the_rest(plane: ControlPlane, tmp_path: Path) -> None:
    code = ("import os, sys, time\n"
            "if os.environ['SHOAL_RANK'] == '0': sys.exit(4)\n"
            "time.sleep(60)")
    plane.submit(job("mixed", code, replicas=2))
    step_until(plane, finished(plane, "mixed"))
    assert state_of(plane, "mixed") is JobState.FAILED
    records = plane.repository.task_records(["mixed"])
    states = {r.ref.index: r.state for r in records.values()}
    assert states == {0: TaskState.FAILED, 1: TaskState.CANCELLED}


@BOTH_ENGINES
def test_run_forever_serves_submissions_from_another_thread(plane: ControlPlane) -> None:
    stop = threading.Event()
    loop = threading.Thread(target=plane.run_forever, args=(stop,))
    loop.start()
    try:
        plane.submit(job("threaded", "pass"))
        deadline = time.monotonic() + DEADLINE
        while not state_of(plane, "threaded").terminal and time.monotonic() < deadline:
            time.sleep(0.05)
        assert state_of(plane, "threaded") is JobState.SUCCEEDED
    finally:
        stop.set()
        loop.join(DEADLINE)  # a safety net: a cycle under way finishes first
    assert not loop.is_alive()


def test_a_virtual_cluster_added_while_running_is_taken_up(plane: ControlPlane) -> None:
    from dataclasses import replace

    from shoal.api import PendingKind as Kind
    from shoal.api import Resources, VirtualCluster

    team = replace(job("team-job", "pass", gpu=1), queue="team-x")
    refused = plane.feasibility(team)
    assert refused is not None and refused.kind is Kind.UNSCHEDULABLE
    plane.repository.put_virtual_cluster(VirtualCluster("team-x", min=Resources.of(gpu=1)))
    plane.reload_catalog()
    assert plane.feasibility(team) is None  # the API admits it at once
    plane.submit(team)
    step_until(plane, finished(plane, "team-job"))
    assert state_of(plane, "team-job") is JobState.SUCCEEDED


def test_fixed_size_nodes_are_carved_recorded_and_restored_after_a_restart(
        plane: ControlPlane, make_executor: ExecutorFactory) -> None:
    from dataclasses import replace

    from shoal.api import (
        FixedSizeNode,
        FixedSizeNodes,
        ResourceLimit,
        Resources,
        VirtualCluster,
        VirtualNodePlacement,
    )
    from shoal.scheduler.profile import Profile

    repo = plane.repository
    size = Resources.of(cpu=1000, memory=256, gpu=2)
    repo.put_virtual_cluster(VirtualCluster(
        "pg", max=ResourceLimit.of({"gpu": 0}),
        fixed_size_nodes=(FixedSizeNodes((FixedSizeNode(size),)),)))
    plane.reload_catalog()
    plane.submit(replace(job("pg-job", "import time; time.sleep(60)", gpu=1), queue="pg"))
    step_until(plane, lambda: state_of(plane, "pg-job") is JobState.RUNNING)
    carving = (VirtualNodePlacement("local", (0, 1)),)
    assert repo.list_virtual_clusters()[0].reservation == carving
    task = repo.get_job("pg-job").tasks[0]  # type: ignore[union-attr]
    assert (task.node, task.gpus) == ("local", (0,))

    # A control plane started afresh on the same store restores the carving where it was,
    # and counts the running task on the virtual node, not against the quota tree.
    again = ControlPlane(repo, make_executor(0.5),
                         plane.nodes, Profile.default(), interval=0.1, grace_period=0.5,
                         virtual_clusters=repo.list_virtual_clusters())
    again.start()
    try:
        assert again.model.reservations.placements == {"pg": carving}
        [virtual] = again.virtual_cluster_status()["pg"].virtual_nodes
        assert (virtual.node, virtual.used.gpu, virtual.available.gpu) == ("local", 1, 1)
        assert again.model.quota.get("pg").usage.is_zero()
        assert again.step().reservations == []
    finally:
        again.cancel("pg-job")
        step_until(again, finished(again, "pg-job"))


def test_a_jobs_own_virtual_cluster_lives_and_goes_with_it(plane: ControlPlane) -> None:
    from dataclasses import replace

    from shoal.api import (
        FixedSizeNode,
        FixedSizeNodes,
        ResourceLimit,
        Resources,
        VirtualCluster,
    )

    bundle = Resources.of(cpu=1000, memory=128, gpu=1)
    own = VirtualCluster("job:pg", max=ResourceLimit.of({"gpu": 0}),
                         fixed_size_nodes=(FixedSizeNodes((FixedSizeNode(bundle),
                                                           FixedSizeNode(bundle))),))
    pg = replace(job("pg", "import time; time.sleep(1)", replicas=2, gpu=1),
                 virtual_cluster=own)
    plane.submit(pg)
    step_until(plane, lambda: state_of(plane, "pg") is JobState.RUNNING)
    assert "job:pg" in plane.model.quota.queues
    status = plane.virtual_cluster_status()["job:pg"]
    assert [v.used.gpu for v in status.virtual_nodes] == [1, 1]
    stored = plane.repository.get_job("pg")
    assert stored is not None and stored.virtual_cluster is not None
    assert stored.virtual_cluster.reservation is not None  # recorded for a restart
    step_until(plane, finished(plane, "pg"))
    assert state_of(plane, "pg") is JobState.SUCCEEDED
    assert "job:pg" not in plane.model.quota.queues
    assert all(s.host is None for s in plane.model.cluster.by_name.values())
    assert plane.model.node("local").free().gpu == 4
