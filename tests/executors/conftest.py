"""Fixtures for the executor tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shoal.executors.local import LocalExecutor


@pytest.fixture
def executor(tmp_path: Path) -> Iterator[LocalExecutor]:
    executor = LocalExecutor(tmp_path / "shoal", grace_period=2.0)
    yield executor
    executor.close()
