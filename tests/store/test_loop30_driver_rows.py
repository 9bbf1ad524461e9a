"""`DriverInsert.rows` builds a batch's parameters a column at a time: the same tuples as
`row` gives each set — constants, bind processors (JSON) and plain names in the compiled
order — for a batch of any size."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.dialects import sqlite

from shoal.store import task_batches
from shoal.store.driver_insert import DriverInsert

BIND = DriverInsert(task_batches._BIND_TASKS, sqlite.dialect(),
                    {"task_id", "new_node", "new_gpus", "now", "new_attempts"})


@given(st.lists(st.tuples(st.integers(0, 10**6), st.text(max_size=6),
                          st.lists(st.integers(0, 7), max_size=3),
                          st.floats(allow_nan=False), st.integers(0, 9)), max_size=12))
def test_rows_are_each_sets_row(values: list[tuple[int, str, list[int], float, int]]
                                ) -> None:
    sets = [{"task_id": t, "new_node": n, "new_gpus": g, "now": at, "new_attempts": a}
            for t, n, g, at, a in values]
    assert BIND.rows(sets) == [BIND.row(params) for params in sets]
