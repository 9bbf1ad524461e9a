"""Fixtures of the end-to-end tests: `servers` starts real `shoal up` processes (each
stopped at teardown with every task it left behind), `server` is one of them, and
`ray_servers` starts `shoal up --engine ray` against the requesting module's Ray cluster (its
module-scoped `ray_cluster` fixture), stopped at teardown with its tasks and Ray actors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ray_support import RayNodes
from test_ray_up import RayServers
from test_shoal_up import Server, Servers


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    started = Servers(tmp_path)
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def server(servers: Servers) -> Server:
    return servers.start()


@pytest.fixture
def ray_servers(ray_cluster: RayNodes, tmp_path: Path) -> Iterator[RayServers]:
    started = RayServers(tmp_path, ray_cluster)
    try:
        yield started
    finally:
        started.close()
