"""`WaitingReasons`: what the API reads as a job's reason, and which reason changes are
written to the job's history."""

from __future__ import annotations

from shoal.api import PendingKind, PendingReason
from shoal.control.waiting import WAITING_RESOLUTION, WaitingReasons
from shoal.store.repository import Waiting

GANG = PendingReason(PendingKind.GANG, "only 1 of 2 tasks fit")
FULL = PendingReason(PendingKind.INSUFFICIENT_RESOURCES, "0 of 8 GPUs free")
FULLER = PendingReason(PendingKind.INSUFFICIENT_RESOURCES, "0 of 8 GPUs free, 2 queued")


class Recorder:
    def __init__(self) -> None:
        self.written: list[list[Waiting]] = []

    def record_waiting(self, waits: list[Waiting]) -> None:
        self.written.append(list(waits))


def causes(recorder: Recorder) -> list[tuple[str, float, str]]:
    return [(w.job, w.time, w.cause) for batch in recorder.written for w in batch]


def test_history_gets_kind_changes_at_once_and_message_changes_once_a_while() -> None:
    reasons, store = WaitingReasons(), Recorder()
    reasons.replace({"a": GANG, "b": FULL}, now=0.0)
    reasons.replace({"a": FULL, "b": FULLER}, now=1.0)  # a: new kind; b: same kind
    reasons.replace({"a": FULL, "b": FULLER}, now=2.0)  # nothing new
    reasons.replace({"b": FULLER}, now=1.0 + WAITING_RESOLUTION)  # a placed; b's new message
    reasons.flush(store)  # type: ignore[arg-type]
    assert causes(store) == [("a", 0.0, "Gang: only 1 of 2 tasks fit"),
                             ("b", 0.0, "InsufficientResources: 0 of 8 GPUs free"),
                             ("a", 1.0, "InsufficientResources: 0 of 8 GPUs free"),
                             ("b", 1.0 + WAITING_RESOLUTION,
                              "InsufficientResources: 0 of 8 GPUs free, 2 queued")]
    assert reasons.all() == {"b": FULLER} and reasons.get("a") is None
    reasons.flush(store)  # type: ignore[arg-type]
    assert len(store.written) == 1  # nothing new: no empty write


def test_reasons_added_without_a_cycle_keep_the_others() -> None:
    reasons, store = WaitingReasons(), Recorder()
    reasons.replace({"a": GANG}, now=0.0)
    reasons.add({"b": FULL}, now=1.0)
    assert reasons.all() == {"a": GANG, "b": FULL}
    reasons.forget("a")
    assert reasons.all() == {"b": FULL}
    reasons.flush(store)  # type: ignore[arg-type]
    assert [w.job for w in store.written[0]] == ["a", "b"]
