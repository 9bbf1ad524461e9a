"""The handover rule: a bound task waits while a task evicted from its node is stopping,
and is released, in bind order, when the node's last evicted task has stopped."""

from __future__ import annotations

from shoal.api import TaskRef
from shoal.control.handover import Handover


def ref(job: str, index: int) -> TaskRef:
    return TaskRef(job, "worker", index)


def test_bound_tasks_wait_for_every_eviction_on_their_node() -> None:
    handover = Handover()
    handover.evicting(ref("low", 2), "a")
    handover.evicting(ref("low", 3), "a")
    handover.evicting(ref("other", 0), "b")
    assert not handover.must_wait(ref("free", 0), "c")  # nothing stops on c
    assert handover.must_wait(ref("high", 0), "a")
    assert handover.must_wait(ref("high", 1), "a")
    assert handover.must_wait(ref("mid", 0), "b")
    assert handover.stopped(ref("low", 3)) == []  # low/2 still runs on a
    assert handover.is_evicting(ref("low", 2)) and not handover.is_evicting(ref("low", 3))
    assert handover.stopped(ref("low", 2)) == [ref("high", 0), ref("high", 1)]
    assert handover.waiting() == {ref("mid", 0): "b"}
    handover.forget_job("mid")  # stopped meanwhile: nothing is launched for it
    assert handover.stopped(ref("other", 0)) == []
    assert handover.waiting() == {}
    assert not handover.must_wait(ref("high", 2), "a")


def test_a_task_that_stops_waiting_is_forgotten() -> None:
    handover = Handover()
    handover.evicting(ref("low", 1), "a")
    assert handover.must_wait(ref("high", 0), "a")
    assert handover.stopped(ref("high", 0)) == []  # evicted itself before it started
    assert handover.stopped(ref("low", 1)) == []
