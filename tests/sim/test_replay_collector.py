"""A replay's garbage collector (`shoal.sim.collector`): full collections freeze their
survivors while a replay runs, everything is unfrozen after it, and nothing else is
touched."""

from __future__ import annotations

import gc
import weakref

from shoal.sim.collector import long_lived_heap


def test_a_full_collection_inside_freezes_its_survivors_and_leaving_unfreezes() -> None:
    assert gc.get_freeze_count() == 0
    kept = [object() for _ in range(10)]
    with long_lived_heap():
        assert gc.get_freeze_count() == 0
        gc.collect(1)
        assert gc.get_freeze_count() == 0, "only a full collection freezes"
        gc.collect()
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert gc.get_freeze_count() == 0, "the callback is gone"
    assert len(kept) == 10


def test_nested_and_foreign_freezes_are_left_alone() -> None:
    with long_lived_heap():
        with long_lived_heap():
            gc.collect()
        assert gc.get_freeze_count() > 0, "the inner one did not unfreeze"
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with long_lived_heap():
            gc.collect()
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_cycles_made_during_a_replay_are_still_collected_after_it() -> None:
    class Node:
        other: Node

    with long_lived_heap():
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        gc.collect()
        del a, b
        gc.collect()
        assert gone() is not None, "a cycle alive at a full collection waits for the end"
    gc.collect()
    assert gone() is None
