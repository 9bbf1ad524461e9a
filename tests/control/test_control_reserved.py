"""Load used outside Shoal, live (issue 17's services): a node's reserved load changed in
the store (`PUT /nodes` with `status.reserved`) is taken up by a running control loop — the
pure comparison (`reserved_changes`), the watch's tick, and a job that waits while its node's
CPUs are reserved and runs once they are given back."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from control_support import DEADLINE, finished, job, state_of, step_until

from shoal.api import JobState, Node, PendingKind, Resources
from shoal.control import ControlPlane
from shoal.control.node_watch import ChangeKind, NodeWatch, reserved_changes
from shoal.executors.local import LocalExecutor
from shoal.scheduler.profile import Profile
from shoal.store import Repository
from shoal.store.nodes import NodeRecord

CPU = Node("cpu-1", Resources.of(cpu=4000, memory=4096))
BUSY = replace(CPU, reserved=Resources.of(cpu=3800))


def test_a_stored_reserved_load_is_a_change_of_a_known_node() -> None:
    known = {"cpu-1": NodeRecord(CPU)}
    (change,) = reserved_changes(known, {"cpu-1": NodeRecord(BUSY)}, [])
    assert (change.kind, change.now) == (ChangeKind.CHANGED, NodeRecord(BUSY))
    assert change.moves_the_model
    assert reserved_changes(known, {"cpu-1": NodeRecord(CPU)}, []) == []
    assert reserved_changes(known, {}, []) == []  # a node not stored keeps what it has


def test_the_watch_takes_up_a_reserved_load_once(tmp_path: Path, repo: Repository) -> None:
    repo.put_node(CPU)
    executor = LocalExecutor(tmp_path / "shoal", grace_period=0.5, node_names=["cpu-1"])
    watch = NodeWatch([CPU], interval=0.0)
    assert not watch.tick(1.0, executor, repo)
    repo.put_node(BUSY)
    assert watch.tick(2.0, executor, repo)
    assert watch.schedulable() == (BUSY,)
    assert watch.schedulable()[0].allocatable_resources.cpu == 200
    assert not watch.tick(3.0, executor, repo)  # taken up: no second rebuild


def test_a_job_waits_while_its_nodes_cpus_are_reserved(tmp_path: Path,
                                                       repo: Repository) -> None:
    repo.put_node(CPU)
    executor = LocalExecutor(tmp_path / "shoal", grace_period=0.5, node_names=["cpu-1"])
    plane = ControlPlane(repo, executor, [CPU], Profile.default(), interval=0.1)
    plane._node_watch.interval = 0.0  # every step asks: the test waits on states
    plane.start()
    repo.put_node(BUSY)  # what PUT /nodes stores
    step_until(plane, lambda: plane.nodes == (BUSY,), DEADLINE)
    plane.submit(job("etl", "print('done')"))  # 500 millicores; 200 are offered
    step_until(plane, lambda: plane.pending_reason("etl") is not None, DEADLINE)
    reason = plane.pending_reason("etl")
    assert reason is not None and reason.kind is PendingKind.UNSCHEDULABLE
    assert state_of(plane, "etl") is JobState.PENDING
    repo.put_node(CPU)  # the outside load is gone
    step_until(plane, finished(plane, "etl"), DEADLINE)
    assert state_of(plane, "etl") is JobState.SUCCEEDED
