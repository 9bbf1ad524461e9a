"""Fixtures for the executor tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoal.executors.local import LocalExecutor


@pytest.fixture
def executor(tmp_path: Path) -> LocalExecutor:
    return LocalExecutor(tmp_path / "shoal", grace_period=2.0)
