"""Fixtures for the REST API tests: an app over a migrated store on SQLite and on PostgreSQL.

The store fixtures (`store`, `postgres_server`) come from `tests/conftest.py`, shared with the
store tests, so one PostgreSQL server serves the whole session.
The `Scheduler` the app is given is `server_helpers.StoreScheduler`, a small stand-in for the
control plane backed by the repository.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_clock import Clock
from fastapi.testclient import TestClient
from server_helpers import Api, StoreScheduler

from shoal.api import Node, Resources, TaskRef, VirtualCluster
from shoal.server import create_app
from shoal.server.logs import file_logs
from shoal.store import Repository, Store


@pytest.fixture
def api(store: Store, tmp_path: Path) -> Iterator[Api]:
    repository = Repository(store, clock=Clock())
    repository.create_user("alice", queues=["default", "team-a"])
    repository.create_user("bob", queues=["default"])
    repository.create_user("root", admin=True)
    tokens = {name: repository.issue_token(name) for name in ("alice", "bob", "root")}
    for i in range(2):
        repository.put_node(Node(f"gpu-{i}", Resources.of(cpu=32000, memory=262144, gpu=8),
                                 labels={"gpu-type": "a100"}))
    repository.put_virtual_cluster(VirtualCluster("team-a"))
    scheduler = StoreScheduler(repository)
    log_dir = tmp_path / "logs"

    def log_paths(ref: TaskRef) -> tuple[Path, Path]:
        return (log_dir / f"{ref.job}.{ref.group}-{ref.index}.out",
                log_dir / f"{ref.job}.{ref.group}-{ref.index}.err")

    with TestClient(create_app(repository, scheduler, file_logs(log_paths))) as client:
        yield Api(client, repository, scheduler, tokens, log_dir)
