"""`WaitingReasons.apply`: a cycle's reasons as changes (`Session.report`) keep the table the
API reads, and the jobs' histories, as a cycle's full verdict (`replace`) would."""

from __future__ import annotations

from shoal.api import PendingKind, PendingReason
from shoal.control.waiting import WAITING_RESOLUTION, WaitingReasons
from shoal.scheduler.reason_report import ReasonChanges
from shoal.store.repository import Waiting

GANG = PendingReason(PendingKind.GANG, "only 1 of 2 tasks fit")
FULL = PendingReason(PendingKind.INSUFFICIENT_RESOURCES, "0 of 8 GPUs free")
FULLER = PendingReason(PendingKind.INSUFFICIENT_RESOURCES, "0 of 8 GPUs free, 2 queued")


class Recorder:
    def __init__(self) -> None:
        self.written: list[Waiting] = []

    def record_waiting(self, waits: list[Waiting]) -> None:
        self.written.extend(waits)


def causes(recorder: Recorder) -> list[tuple[str, float, str]]:
    return [(w.job, w.time, w.cause) for w in recorder.written]


def test_changes_keep_the_table_and_the_history_of_full_verdicts() -> None:
    verdicts = [({"a": GANG, "b": FULL}, 0.0),
                ({"a": FULL, "b": FULLER}, 1.0),   # a: new kind; b: message, too soon
                ({"a": FULL, "b": FULLER}, 2.0),   # nothing new
                ({"b": FULLER, "c": GANG}, 1.0 + WAITING_RESOLUTION),  # b's message is due
                ({"c": GANG}, 2.0 + WAITING_RESOLUTION)]
    full, deltas = WaitingReasons(), WaitingReasons()
    full_store, delta_store = Recorder(), Recorder()
    for pending, now in verdicts:
        full.replace(pending, now)
        table = deltas.all()
        changes = ReasonChanges({job: reason for job, reason in pending.items()
                                 if table.get(job) != reason},
                                tuple(job for job in table if job not in pending))
        deltas.apply(changes, now)
        assert deltas.all() == full.all() == pending
        full.flush(full_store)  # type: ignore[arg-type]
        deltas.flush(delta_store)  # type: ignore[arg-type]
    assert causes(delta_store) == causes(full_store)
    assert ("b", 1.0 + WAITING_RESOLUTION,
            "InsufficientResources: 0 of 8 GPUs free, 2 queued") in causes(delta_store)


def test_a_deferred_message_is_not_recorded_once_the_job_left() -> None:
    reasons, store = WaitingReasons(), Recorder()
    reasons.apply(ReasonChanges({"b": FULL}), 0.0)
    reasons.apply(ReasonChanges({"b": FULLER}), 1.0)  # deferred
    reasons.apply(ReasonChanges(gone=("b",)), 2.0)
    reasons.apply(ReasonChanges(), 2.0 + WAITING_RESOLUTION)
    reasons.flush(store)  # type: ignore[arg-type]
    assert [job for job, _, _ in causes(store)] == ["b"]
    assert reasons.get("b") is None and reasons.all() == {}


def test_reasons_added_between_cycles_are_what_the_next_report_compares_with() -> None:
    reasons = WaitingReasons()
    reasons.add({"late": FULL}, 0.0)
    assert reasons.ledger.reasons() == {"late": FULL}
    reasons.forget("late")
    assert reasons.ledger.reasons() == {} and reasons.get("late") is None
