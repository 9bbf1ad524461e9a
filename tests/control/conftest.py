"""Fixtures for the control-loop tests: a migrated SQLite store in tmp_path, an executor of
the engine under test, and a factory for control planes over them (two planes on the same
store and executor root stand for a control plane before and after a crash).

The engine is the local executor unless a test module opts in to both engines with
`pytestmark = BOTH_ENGINES` (`control_support`): then every test runs once on the local
executor and once on the Ray engine, over one real Ray cluster started for the whole module
(by its first Ray test) and shut down at the module's end. That cluster has one Ray node,
labelled as Shoal's node "local", that declares what Shoal's `node` offers (16 CPUs, 64 GiB,
4 GPUs: Ray's logical resources, so a live inventory read from Ray sees the same node); the
Ray engine reserves none of them for a task, so Ray never makes one wait. Each control-plane
root is a Ray namespace of its own (`ray_support.namespace_of`), so a plane and its successor
after a crash, which share the root, share the namespace and find each other's actors."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from control_support import ExecutorFactory
from ray_support import RayNodes, namespace_of
from store_templates import migrated_sqlite

from shoal.api import Node, PriorityClass, Resources
from shoal.control import ControlPlane
from shoal.executors.contract import Executor
from shoal.executors.local import LocalExecutor
from shoal.scheduler.profile import Profile
from shoal.store import Repository, Store

GRACE = 0.5
#: The name of Shoal's one declared node, and of the Ray node that carries it out.
NODE = "local"


@pytest.fixture
def store(sqlite_template: Path, tmp_path: Path) -> Iterator[Store]:
    """A migrated, empty SQLite store: a copy of the session's migrated template."""
    opened = migrated_sqlite(sqlite_template, tmp_path / "shoal.db")
    yield opened
    opened.close()


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """Where a test's tasks write what they record (`checkpointing_worker`)."""
    made = tmp_path / "out"
    made.mkdir()
    return made


@pytest.fixture
def repo(store: Store) -> Repository:
    return Repository(store)


@pytest.fixture
def node() -> Node:
    return Node(NODE, Resources.of(cpu=16_000, memory=65_536, gpu=4))


@pytest.fixture(scope="module")
def ray_nodes() -> Iterator[RayNodes]:
    """The module's Ray cluster, started lazily by its first Ray test (a module that runs
    only locally starts none) and shut down when the module ends."""
    with RayNodes({NODE: {"num_cpus": 16, "num_gpus": 4, "memory": 65_536 << 20}}) as nodes:
        yield nodes


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    """The engine under test: "local", or what `BOTH_ENGINES` parametrises."""
    return str(getattr(request, "param", "local"))


@pytest.fixture
def make_executor(engine: str, tmp_path: Path, request: pytest.FixtureRequest
                  ) -> Iterator[ExecutorFactory]:
    """Each call is a new instance of the engine over the same root (a second one: the same
    engine after a control plane's crash); its argument is the grace period. At the test's
    end, whatever still runs on the Ray engine is stopped and its actors ended."""
    root = tmp_path / "shoal"
    if engine == "local":
        yield lambda grace_period=GRACE: LocalExecutor(root, grace_period=grace_period)
        return
    assert engine == "ray", engine
    nodes: RayNodes = request.getfixturevalue("ray_nodes")
    nodes.cluster  # noqa: B018 - the module's first Ray test starts it
    from shoal.executors.ray_engine import RayExecutor

    def make(grace_period: float = GRACE) -> Executor:
        return RayExecutor(root, namespace=namespace_of(root), grace_period=grace_period)

    yield make
    RayExecutor(root, namespace=namespace_of(root), grace_period=GRACE).close()


@pytest.fixture
def make_plane(repo: Repository, node: Node, make_executor: ExecutorFactory
               ) -> Iterator[Callable[..., ControlPlane]]:
    """Each call is a fresh control plane (and executor instance) on the same state; its
    arguments: a profile (default: the default one), priority classes (stored too), and
    the grace period."""
    planes: list[ControlPlane] = []

    def make(profile: Profile | None = None, priority_classes: Sequence[PriorityClass] = (),
             grace_period: float = GRACE) -> ControlPlane:
        for pc in priority_classes:
            repo.put_priority_class(pc)
        executor = make_executor(grace_period)
        plane = ControlPlane(repo, executor, [node], profile or Profile.default(),
                             priority_classes=priority_classes, interval=0.1,
                             grace_period=grace_period)
        planes.append(plane)
        return plane

    yield make
    # Never leave a test's processes behind.
    for plane in planes:
        for tracked in list(plane._tasks.values()):
            plane.executor.stop(tracked.handle, grace_period=0.1)


@pytest.fixture
def plane(make_plane: Callable[[], ControlPlane]) -> ControlPlane:
    made = make_plane()
    made.start()
    return made
