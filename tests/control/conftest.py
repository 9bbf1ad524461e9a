"""Fixtures for the control-loop tests: a migrated SQLite store and a local executor, both in
tmp_path, and a factory for control planes over them (two planes on the same store and
executor root stand for a control plane before and after a crash)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from shoal.api import Node, PriorityClass, Resources
from shoal.control import ControlPlane
from shoal.executors.local import LocalExecutor
from shoal.scheduler.profile import Profile
from shoal.store import Repository, Store, open_store

GRACE = 0.5


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'shoal.db'}")
    opened.migrate()
    yield opened
    opened.close()


@pytest.fixture
def repo(store: Store) -> Repository:
    return Repository(store)


@pytest.fixture
def node() -> Node:
    return Node("local", Resources.of(cpu=16_000, memory=65_536, gpu=4))


@pytest.fixture
def make_plane(repo: Repository, node: Node, tmp_path: Path
               ) -> Iterator[Callable[..., ControlPlane]]:
    """Each call is a fresh control plane (and executor instance) on the same state; its
    arguments: a profile (default: the default one), priority classes (stored too), and
    the grace period."""
    planes: list[ControlPlane] = []

    def make(profile: Profile | None = None, priority_classes: Sequence[PriorityClass] = (),
             grace_period: float = GRACE) -> ControlPlane:
        for pc in priority_classes:
            repo.put_priority_class(pc)
        executor = LocalExecutor(tmp_path / "shoal", grace_period=grace_period)
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
