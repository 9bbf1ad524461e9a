"""Fixtures of the CLI tests: `server`, a live `shoal up` per test module (`live_shoal`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from live_shoal import Server, start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from start_server(tmp_path_factory.mktemp("up"))
