"""The exit batch's JSON columns read as text (`task_batches._JsonText`) give what the JSON
type gives — `json.loads` of the stored text — for any JSON value, its shortcuts (`null`,
`[]`, `{}`) included, and fresh containers each time (a caller may change what it got)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.dialects import sqlite

from shoal.store.task_batches import _JsonText

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=12)


def read(text: str | None) -> Any:
    return _JsonText().process_result_value(text, sqlite.dialect())


@given(JSON_VALUES)
def test_a_stored_value_reads_back_as_json_loads_gives_it(value: Any) -> None:
    for text in (json.dumps(value), json.dumps(value, separators=(",", ":"))):
        assert read(text) == json.loads(text)


def test_sql_null_and_the_shortcuts() -> None:
    assert read(None) is None and read("null") is None
    first, second = read("[]"), read("[]")
    assert first == [] and first is not second
    assert read("{}") == {} and read("{}") is not read("{}")
    assert read("[0, 1]") == [0, 1]
