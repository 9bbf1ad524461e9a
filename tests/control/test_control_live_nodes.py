"""The live node inventory on a real Ray cluster: the control loop (`run_forever`, as `shoal up`
runs it) over the Ray engine sees nodes join and die while it runs, without a restart.

One Ray cluster serves the module (a CPU head and one GPU node, fake GPUs declared as Ray
resources); tests add and remove nodes as machines join and die. Each control plane starts
with the nodes Ray reports ready, as `shoal up --engine ray` does. A removed node's raylet is
killed, but on this one machine the task's own process outlives it (on a real machine it
dies with it): the first attempt of each task here blocks until the test releases it, and
later attempts succeed. Every wait is on a condition; the deadlines are safety nets (Ray
takes ~5 s to declare a killed node dead, `ray_support.HEALTH_CHECKS`, and a worker process
can take seconds to start on a loaded box)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from control_support import job
from ray_support import RayNodes, namespace_of

from shoal.api import Job, JobState, NodePhase, Task, TaskState
from shoal.control import ControlPlane
from shoal.executors.contract import Executor
from shoal.scheduler.profile import Profile
from shoal.store import Repository

#: Safety nets only.
DEADLINE = 180.0


@pytest.fixture(scope="module")
def ray_nodes() -> Iterator[RayNodes]:
    with RayNodes({"ray-head": {"num_cpus": 2}, "gpu-1": {"num_gpus": 1}}) as nodes:
        yield nodes


class Live:
    """A control plane over the Ray engine, running its loop in a thread."""

    def __init__(self, repo: Repository, executor: Executor) -> None:
        ready = [h.node for h in executor.nodes() if h.ready and h.node is not None]
        for node in ready:
            repo.put_node(node)
        self.repo = repo
        self.plane = ControlPlane(repo, executor, ready, Profile.default(), interval=0.5,
                                  grace_period=1.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.plane.run_forever, args=(self._stop,),
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=DEADLINE)

    def job(self, name: str) -> Job:
        found = self.repo.get_job(name)
        assert found is not None
        return found

    def task(self, name: str) -> Task:
        (task,) = self.job(name).tasks
        return task

    def phase(self, node: str) -> tuple[NodePhase, str]:
        record = next(r for r in self.repo.node_records() if r.node.name == node)
        return record.phase, record.condition.reason


@pytest.fixture
def live(ray_nodes: RayNodes, repo: Repository, tmp_path: Path) -> Iterator[Live]:
    ray_nodes.cluster  # noqa: B018 - the module's first test starts it
    from shoal.executors.ray_engine import RayExecutor

    root = tmp_path / "shoal"
    made = Live(repo, RayExecutor(root, namespace=namespace_of(root), grace_period=1.0))
    yield made
    made.close()
    RayExecutor(root, namespace=namespace_of(root), grace_period=1.0).close()


def wait_until(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"not in time: {what}")
        time.sleep(0.1)


def first_blocks(started: Path, release: Path) -> str:
    """The first attempt notes its start and blocks until `release` exists (two minutes
    at most, should the test fail first); a later attempt succeeds at once."""
    return (f"import os, sys, time\n"
            f"first = not os.path.exists({str(started)!r})\n"
            f"open({str(started)!r}, 'a').write('x\\n')\n"
            f"end = time.monotonic() + 120\n"
            f"while first and not os.path.exists({str(release)!r}) and time.monotonic() < end:\n"
            f"    time.sleep(0.05)\n")


def test_a_job_waiting_for_a_gpu_node_starts_on_it_when_it_joins(
        live: Live, ray_nodes: RayNodes) -> None:
    live.plane.submit(job("wide", "print('on two gpus')", gpu=2))
    wait_until(lambda: live.plane.pending_reason("wide") is not None, "a pending reason")
    assert live.job("wide").state is JobState.PENDING
    ray_nodes.add("gpu-2", num_gpus=2)
    wait_until(lambda: live.job("wide").state.terminal, "the job ends")
    assert live.job("wide").state is JobState.SUCCEEDED
    task = live.task("wide")
    assert (task.node, task.gpus) == ("gpu-2", (0, 1))
    assert live.phase("gpu-2") == (NodePhase.READY, "")


def _lose_the_node_under(live: Live, ray_nodes: RayNodes, tmp_path: Path, name: str,
                         spare: str, *, task_retry_count: int = 0,
                         job_retry_count: int = 0) -> str:
    """Submit `name` (one GPU task whose first attempt blocks, with these retries), add a
    spare GPU node, wait until the first attempt runs, remove its node, wait until the store
    shows that node NotReady, then until the job ends: it succeeded, its task ran twice.
    Returns the node removed."""
    started, release = tmp_path / "started", tmp_path / "release"
    try:
        live.plane.submit(job(name, first_blocks(started, release), gpu=1,
                              task_retry_count=task_retry_count,
                              job_retry_count=job_retry_count))
        ray_nodes.add(spare, num_gpus=1)
        wait_until(lambda: started.exists() and live.task(name).state is TaskState.RUNNING,
                   "the first attempt runs")
        node = live.task(name).node
        assert node is not None
        ray_nodes.remove(node)
        wait_until(lambda: live.phase(node)[0] is NodePhase.NOT_READY, f"{node} NotReady")
        assert live.phase(node)[1].startswith("dead")
        wait_until(lambda: live.job(name).state.terminal, "the job ends")
    finally:
        release.touch()
    assert live.job(name).state is JobState.SUCCEEDED
    assert started.read_text() == "x\nx\n"
    return node


def test_a_task_whose_node_dies_is_lost_and_retried_elsewhere(
        live: Live, ray_nodes: RayNodes, tmp_path: Path) -> None:
    dead = _lose_the_node_under(live, ray_nodes, tmp_path, "retried", "spare-task",
                                task_retry_count=1)
    task = live.task("retried")
    assert task.node != dead and task.retries == 1
    assert live.job("retried").retries == 0
    causes = [e.cause for e in live.repo.job_events("retried") if e.task is not None]
    assert any("lost" in c.lower() for c in causes), causes


def test_with_no_task_retry_left_a_lost_task_retries_its_job(
        live: Live, ray_nodes: RayNodes, tmp_path: Path) -> None:
    dead = _lose_the_node_under(live, ray_nodes, tmp_path, "whole", "spare-job",
                                job_retry_count=1)
    assert live.job("whole").retries == 1
    assert live.task("whole").node != dead
