"""Fixtures of the trace loader tests: the bundled example traces and scratch files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "traces"


@pytest.fixture
def examples() -> Path:
    """`examples/traces` of this repository (present in every clone)."""
    return EXAMPLES


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write `text` to a scratch file called `name` and return its path."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return _write
