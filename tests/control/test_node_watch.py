"""The live node inventory (`shoal.control.node_watch`) without Ray: the pure comparison of an
engine's report with the nodes the loop knows, and the control loop taking up what a real
local executor reports — a scripted inventory (nodes that join, die, come back) on a
`LocalExecutor` that runs the tasks here. The loop's own tick is forced (interval 0) so that
a test waits on states, not on the 2-second check."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from control_support import DEADLINE, finished, job, state_of, step_until

from shoal.api import JobState, Node, NodePhase, PendingKind, Resources
from shoal.control import ControlPlane
from shoal.control.node_watch import GONE, ChangeKind, NodeWatch, node_changes
from shoal.executors.contract import NodeHealth
from shoal.executors.local import LocalExecutor
from shoal.scheduler.profile import Profile
from shoal.store import Repository
from shoal.store.nodes import NodeCondition, NodeRecord

CPU = Node("cpu-1", Resources.of(cpu=4000, memory=4096))
GPU = Node("gpu-1", Resources.of(cpu=4000, memory=4096, gpu=2), labels={"gpu-type": "fake"})


def ready(node: Node) -> NodeHealth:
    return NodeHealth(node.name, ready=True, address="10.0.0.1", node=node)


def known(*nodes: Node) -> dict[str, NodeRecord]:
    return {n.name: NodeRecord(n) for n in nodes}


# ---- the comparison (pure) -------------------------------------------------------------------

def test_a_declared_inventory_that_says_nothing_new_changes_nothing() -> None:
    declared = (NodeHealth("cpu-1", ready=True),)
    assert node_changes(known(CPU), declared) == []
    assert node_changes(known(CPU), ()) == []  # a declared node needs no report
    assert node_changes(known(CPU), (ready(CPU),)) == []


def test_a_ready_node_that_says_what_it_offers_joins() -> None:
    (change,) = node_changes(known(CPU), (ready(CPU), ready(GPU)))
    assert (change.kind, change.now) == (ChangeKind.JOINED, NodeRecord(GPU))
    # A node the loop never knew is not taken while it is not ready, nor without an offer.
    assert node_changes(known(CPU), (ready(CPU), replace(ready(GPU), ready=False))) == []
    assert node_changes(known(CPU), (ready(CPU), NodeHealth("gpu-1", ready=True))) == []


def test_a_node_goes_not_ready_comes_back_and_changes() -> None:
    dead = NodeHealth("gpu-1", ready=False, reason="dead: missed heartbeats", node=GPU)
    (change,) = node_changes(known(CPU, GPU), (ready(CPU), dead))
    assert change.kind is ChangeKind.NOT_READY and change.moves_the_model
    assert change.now == NodeRecord(GPU, NodeCondition(False, "dead: missed heartbeats"))
    assert change.now.schedulable == replace(GPU, schedulable=False)
    was = {**known(CPU), "gpu-1": change.now}
    # A new reason only: the store's record changes, the model does not.
    (again,) = node_changes(was, (ready(CPU), replace(dead, reason="dead: drained")))
    assert again.kind is ChangeKind.REASON and not again.moves_the_model
    (back,) = node_changes(was, (ready(CPU), ready(GPU)))
    assert (back.kind, back.now) == (ChangeKind.READY, NodeRecord(GPU))
    bigger = replace(GPU, capacity=Resources.of(cpu=4000, memory=4096, gpu=4))
    (grown,) = node_changes(known(CPU, GPU), (ready(CPU), ready(bigger)))
    assert (grown.kind, grown.now) == (ChangeKind.CHANGED, NodeRecord(bigger))


def test_a_dead_node_keeps_what_it_offered_while_its_tasks_hold_it() -> None:
    # Ray lists a dead node with no resources left; its tasks still hold their GPUs there
    # until they are lost, so the model must keep them.
    emptied = replace(GPU, capacity=Resources.of(cpu=0, memory=0))
    dead = NodeHealth("gpu-1", ready=False, reason="dead", node=emptied)
    (change,) = node_changes(known(CPU, GPU), (ready(CPU), dead))
    assert change.kind is ChangeKind.NOT_READY
    assert change.now.node == GPU


def test_a_declared_cordon_survives_what_the_engine_reports() -> None:
    cordoned = replace(GPU, schedulable=False)
    assert node_changes(known(cordoned), (ready(GPU),)) == []
    relabelled = replace(GPU, labels={"gpu-type": "h100"})
    (change,) = node_changes(known(cordoned), (ready(relabelled),))
    assert change.now.node == replace(relabelled, schedulable=False)


def test_a_known_node_a_live_inventory_no_longer_lists_is_not_ready() -> None:
    (change,) = node_changes(known(CPU, GPU), (ready(CPU),))
    assert change.kind is ChangeKind.NOT_READY
    assert change.now.condition == NodeCondition(False, GONE)


# ---- the watch: rate, failures, the store --------------------------------------------------

class Inventory(LocalExecutor):
    """A real local executor whose node report a test scripts (as a live inventory's)."""

    def __init__(self, root: Path, report: tuple[NodeHealth, ...]) -> None:
        super().__init__(root, grace_period=0.5)
        self.report = report
        self.asked = 0
        self.broken = False

    def nodes(self) -> tuple[NodeHealth, ...]:
        self.asked += 1
        if self.broken:
            raise ConnectionError("the engine does not answer")
        return self.report


def test_the_engine_is_asked_at_most_once_per_interval(tmp_path: Path, repo: Repository
                                                       ) -> None:
    engine = Inventory(tmp_path / "shoal", (ready(CPU),))
    watch = NodeWatch([CPU], interval=2.0)
    assert not watch.tick(100.0, engine, repo)
    assert not watch.tick(101.9, engine, repo)
    assert engine.asked == 1
    engine.report = (ready(CPU), ready(GPU))
    assert watch.tick(102.0, engine, repo)
    assert engine.asked == 2
    assert watch.schedulable() == watch.declared() == (CPU, GPU)
    assert repo.node_records() == [NodeRecord(GPU)]  # a node that joined is stored


def test_an_engine_that_cannot_answer_changes_nothing(tmp_path: Path, repo: Repository
                                                      ) -> None:
    engine = Inventory(tmp_path / "shoal", (ready(CPU),))
    engine.broken = True
    watch = NodeWatch([CPU], interval=0.0)
    assert not watch.tick(1.0, engine, repo)
    assert watch.known == known(CPU)


def test_the_first_report_corrects_what_a_previous_run_stored(tmp_path: Path,
                                                              repo: Repository) -> None:
    repo.put_node(CPU)
    repo.record_nodes([], {"cpu-1": NodeCondition(False, "dead: before the restart")})
    watch = NodeWatch([CPU], interval=0.0)
    assert not watch.tick(1.0, Inventory(tmp_path / "shoal", (ready(CPU),)), repo)
    assert repo.node_records() == [NodeRecord(CPU)]


def test_a_node_that_joins_again_keeps_its_declared_cordon(tmp_path: Path,
                                                           repo: Repository) -> None:
    repo.put_node(replace(GPU, schedulable=False))
    watch = NodeWatch([CPU], interval=0.0)
    assert watch.tick(1.0, Inventory(tmp_path / "shoal", (ready(CPU), ready(GPU))), repo)
    assert phases(repo) == {"gpu-1": (NodePhase.CORDONED, "")}
    assert watch.schedulable()[1] == replace(GPU, schedulable=False)


# ---- the control loop takes it up --------------------------------------------------------------

@pytest.fixture
def inventory(tmp_path: Path) -> Inventory:
    return Inventory(tmp_path / "shoal", (ready(CPU),))


@pytest.fixture
def live_plane(repo: Repository, inventory: Inventory) -> Iterator[ControlPlane]:
    repo.put_node(CPU)
    plane = ControlPlane(repo, inventory, [CPU], Profile.default(), interval=0.1,
                         grace_period=0.5)
    plane._node_watch.interval = 0.0  # every step asks: the test waits on states
    plane.start()
    yield plane
    for tracked in list(plane._tasks.values()):
        plane.executor.stop(tracked.handle, grace_period=0.1)


def phases(repo: Repository) -> dict[str, tuple[NodePhase, str]]:
    return {r.node.name: (r.phase, r.condition.reason) for r in repo.node_records()}


def waits(plane: ControlPlane, name: str) -> Callable[[], bool]:
    return lambda: plane.pending_reason(name) is not None


def test_a_job_waiting_for_a_gpu_node_starts_when_one_joins(
        live_plane: ControlPlane, inventory: Inventory, repo: Repository) -> None:
    live_plane.submit(job("train", "print('trained')", gpu=2))
    step_until(live_plane, waits(live_plane, "train"), DEADLINE)
    reason = live_plane.pending_reason("train")
    assert reason is not None and reason.kind is PendingKind.UNSCHEDULABLE
    assert state_of(live_plane, "train") is JobState.PENDING
    inventory.report = (ready(CPU), ready(GPU))
    step_until(live_plane, finished(live_plane, "train"), DEADLINE)
    assert state_of(live_plane, "train") is JobState.SUCCEEDED
    (task,) = repo.get_job("train").tasks  # type: ignore[union-attr]
    assert task.node == "gpu-1"
    assert phases(repo) == {"cpu-1": (NodePhase.READY, ""), "gpu-1": (NodePhase.READY, "")}
    # It is admitted now too: a job that needs it is no longer infeasible at submission.
    assert live_plane.feasibility(job("more", "pass", gpu=2)) is None


def test_nothing_is_placed_on_a_node_that_is_not_ready_until_it_is_back(
        live_plane: ControlPlane, inventory: Inventory, repo: Repository) -> None:
    inventory.report = (NodeHealth("cpu-1", ready=False, reason="draining", node=CPU),)
    step_until(live_plane, lambda: phases(repo)["cpu-1"][0] is NodePhase.NOT_READY, DEADLINE)
    assert phases(repo) == {"cpu-1": (NodePhase.NOT_READY, "draining")}
    live_plane.submit(job("later", "print('ran')"))
    step_until(live_plane, waits(live_plane, "later"), DEADLINE)
    # Declared, it is still admitted: it waits for the node to come back.
    assert live_plane.feasibility(job("more", "pass")) is None
    inventory.report = (ready(CPU),)
    step_until(live_plane, finished(live_plane, "later"), DEADLINE)
    assert state_of(live_plane, "later") is JobState.SUCCEEDED
    assert phases(repo) == {"cpu-1": (NodePhase.READY, "")}


def test_the_local_executor_s_declared_nodes_cost_no_rebuild(tmp_path: Path,
                                                             repo: Repository) -> None:
    repo.put_node(CPU)
    executor = LocalExecutor(tmp_path / "shoal", grace_period=0.5, node_names=["cpu-1"])
    plane = ControlPlane(repo, executor, [CPU], Profile.default(), interval=0.1)
    plane._node_watch.interval = 0.0
    plane.start()
    model = plane.model
    for _ in range(20):
        plane.step()
    assert plane.model is model  # never rebuilt
    assert plane.nodes == (CPU,) and phases(repo) == {"cpu-1": (NodePhase.READY, "")}


def test_a_task_running_on_a_node_that_goes_not_ready_stays_charged_there(
        live_plane: ControlPlane, inventory: Inventory, repo: Repository,
        tmp_path: Path) -> None:
    release = tmp_path / "release"
    code = (f"import os, time\nend = time.monotonic() + 120\n"
            f"while not os.path.exists({str(release)!r}) and time.monotonic() < end:\n"
            f"    time.sleep(0.02)\n")
    try:
        live_plane.submit(job("long", code))
        step_until(live_plane, lambda: state_of(live_plane, "long") is JobState.RUNNING,
                   DEADLINE)
        inventory.report = (NodeHealth("cpu-1", ready=False, reason="draining", node=CPU),)
        step_until(live_plane, lambda: phases(repo)["cpu-1"][0] is NodePhase.NOT_READY,
                   DEADLINE)
        # The rebuilt model still charges the task where it runs, and places nothing there.
        assert live_plane.nodes == (replace(CPU, schedulable=False),)
        quota = live_plane.model.quota
        assert quota.root.usage.cpu == 500 and quota.root.usage.fits(quota.capacity)
        live_plane.submit(job("next", "print('ran')"))
        step_until(live_plane, waits(live_plane, "next"), DEADLINE)
        assert state_of(live_plane, "next") is JobState.PENDING
    finally:
        release.touch()
    step_until(live_plane, finished(live_plane, "long"), DEADLINE)
    assert state_of(live_plane, "long") is JobState.SUCCEEDED
    assert live_plane.model.quota.root.usage.cpu == 0
    inventory.report = (ready(CPU),)
    step_until(live_plane, finished(live_plane, "next"), DEADLINE)
    assert state_of(live_plane, "next") is JobState.SUCCEEDED
