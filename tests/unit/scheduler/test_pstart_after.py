"""Where a preemptor walk takes a parked class up again (`preemptor_walk._after`): a class's
jobs are a `SortedList`, bisected by its own index, the loose ones a list; both must give
the first position whose job comes after the commit's order key, as `bisect` over a list
of the same entries does."""

from __future__ import annotations

from bisect import bisect_left

from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedList

from shoal.scheduler.actions.preemptor_walk import _after, _bisect


def _plain_after(entries: list[tuple[tuple[int, ...], str]], key: tuple[int, ...]) -> int:
    index = bisect_left(entries, (key,))
    return index + 1 if index < len(entries) and entries[index][0] == key else index


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 60), max_size=40), st.integers(-1, 61),
       st.integers(1, 7))
def test_a_sorted_list_is_taken_up_where_a_list_is(keys: set[int], probe: int,
                                                   load: int) -> None:
    entries = [((k,), f"j{k}") for k in sorted(keys)]
    kept = SortedList(entries)
    kept._reset(load)  # small sublists: positions span several of them
    key = (probe,)
    assert _after(kept, key) == _after(entries, key) == _plain_after(entries, key)
    assert _bisect(kept, (key,)) == _bisect(entries, (key,)) == bisect_left(entries, (key,))
    assert _after(kept, None) == 0
