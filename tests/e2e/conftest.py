"""Fixtures of the end-to-end tests: `servers` starts real `shoal up` processes (each
stopped at teardown with every task it left behind), `server` is one of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
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
