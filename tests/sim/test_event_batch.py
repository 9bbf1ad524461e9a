"""`EventQueue.push_all`: events pushed in one batch pop in the order one heap gives."""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.sim.engine import Event, EventKind, EventQueue

times = st.sampled_from([0.0, 1.0, 5.0, 5.0, 10.0, 30.0])
kinds = st.sampled_from(list(EventKind))
steps = st.lists(st.one_of(st.tuples(st.just("push"), times, kinds),
                           st.just(("pop",))), max_size=40)


@settings(max_examples=60, deadline=None)
@given(batch=st.lists(st.tuples(times, kinds), max_size=20), steps=steps)
def test_a_batch_pops_as_one_heap_would(batch: list[tuple[float, EventKind]],
                                        steps: list[tuple[object, ...]]) -> None:
    queue = EventQueue()
    queue.push_all((t, k, f"b{i}") for i, (t, k) in enumerate(batch))
    plain: list[Event] = []
    for i, (t, k) in enumerate(batch):
        heapq.heappush(plain, Event(t, k, i + 1, f"b{i}"))
    sequence = len(batch)
    for step in steps:
        if step[0] == "push":
            _, t, k = step
            assert isinstance(t, float) and isinstance(k, EventKind)
            sequence += 1
            queue.push(t, k, "p")
            heapq.heappush(plain, Event(t, k, sequence, "p"))
        elif plain:
            assert queue.peek_time() == plain[0].time
            assert queue.pop() == heapq.heappop(plain)
        assert len(queue) == len(plain)
    while plain:
        assert queue.pop() == heapq.heappop(plain)
    assert not queue and queue.peek_time() is None
