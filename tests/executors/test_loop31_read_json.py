"""`processes.read_json` reads a file's bytes through its descriptor and decodes them here
(the control loop reads every ended task's status with it): for any content — a whole
object, a torn one, another JSON value, a byte-order mark, bytes that are no UTF-8, a file
past one read's size — it answers what reading the file as UTF-8 text gave, or raises the
same error; a missing file is None."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.executors.processes import read_json


def text_read(path: Path) -> dict[str, Any] | None:
    """The read as it was: a text file object, `json.load`."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def outcome(read: Any, path: Path) -> tuple[str, Any]:
    try:
        return "value", read(path)
    except Exception as exc:  # the same kind of error either way
        return "error", type(exc)


VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                      lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


@st.composite
def contents(draw: st.DrawFn) -> bytes:
    whole = json.dumps(draw(VALUES), ensure_ascii=draw(st.booleans())).encode()
    kind = draw(st.sampled_from(("whole", "torn", "bom", "raw")))
    if kind == "torn":
        return whole[:draw(st.integers(0, len(whole)))]
    if kind == "bom":
        return b"\xef\xbb\xbf" + whole
    if kind == "raw":
        return draw(st.binary(max_size=24))
    return whole


@settings(max_examples=200, deadline=None)
@given(contents())
def test_read_json_answers_as_the_text_read(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "status.json"
        path.write_bytes(content)
        assert outcome(read_json, path) == outcome(text_read, path)


def test_a_missing_file_and_a_long_one(tmp_path: Path) -> None:
    assert read_json(tmp_path / "none.json") is None
    big = {"reason": "x" * 200_000, "exit_code": 0}  # past one 64 KiB read
    (tmp_path / "big.json").write_text(json.dumps(big))
    assert read_json(tmp_path / "big.json") == big
