"""`WaitingReasons.apply`: a cycle's reasons as changes (`Session.report`) keep the table the
API reads, and the jobs' histories, as a cycle's full verdict (`replace`) would."""

from __future__ import annotations

from shoal.api import PendingKind, PendingReason
from shoal.control.waiting import WAITING_RESOLUTION, WaitingReasons
from shoal.scheduler.reason_report import LineChange, ReasonChanges
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


def behind(head: str) -> PendingReason:
    return PendingReason(PendingKind.BLOCKED, f"waiting behind job {head!r}")


def test_a_line_kept_as_one_reason_keeps_the_history_of_full_verdicts() -> None:
    """Strict FIFO's line is one reason in the table (`LineChange`): a new head changes it
    for every job behind at once, and each job's history still gets what a full verdict
    per job gives — a message that moved too soon is recorded once it is due."""
    own = {"b": FULL, "c": FULL, "d": FULL}
    cycles = [  # (the line's head, the jobs behind it, jobs outside it, when)
        ("b", ("c", "d", "e"), ("b",), 0.0),
        ("c", ("d", "e"), ("c",), 1.0),  # a new head, too soon for d and e
        ("c", ("d", "e", "f"), ("c",), 2.0),  # f joins
        ("c", ("d", "e", "f"), ("c",), 1.0 + WAITING_RESOLUTION),  # d, e due; f recorded
        ("d", ("e", "f"), ("d",), 2.5 + WAITING_RESOLUTION),  # e too soon; f due
        ("d", ("f",), ("d", "e"), 3.0 + WAITING_RESOLUTION),  # e leaves the line: own reason
        ("d", ("f", "g"), ("d",), 3.0 + 2 * WAITING_RESOLUTION)]
    full, deltas = WaitingReasons(), WaitingReasons()
    full_store, delta_store = Recorder(), Recorder()
    members: tuple[str, ...] = ()
    for head, line, outside, now in cycles:
        pending = {**dict.fromkeys(line, behind(head)),
                   **{job: own.get(job, GANG) for job in outside}}
        full.replace(pending, now)
        table = deltas.all()
        waits = {job: pending[job] for job in outside
                 if table.get(job) != pending[job] or job in members}
        gone = tuple(job for job in table if job not in pending)
        joined = tuple(job for job in line if job not in members)
        deltas.apply(ReasonChanges(waits, gone, line=LineChange(behind(head), joined)), now)
        members = line
        assert deltas.all() == full.all() == pending
        assert deltas.ledger.line is not None and deltas.ledger.line.members == set(line)
        full.flush(full_store)  # type: ignore[arg-type]
        deltas.flush(delta_store)  # type: ignore[arg-type]
    assert sorted(causes(delta_store)) == sorted(causes(full_store))
    assert ("e", 1.0 + WAITING_RESOLUTION, "Blocked: waiting behind job 'c'") \
        in causes(delta_store)
    assert ("f", 2.5 + WAITING_RESOLUTION, "Blocked: waiting behind job 'd'") \
        in causes(delta_store)
    # A verdict in full after a line: the line's jobs each get their own reason again.
    full.replace({"f": GANG}, 4 * WAITING_RESOLUTION)
    deltas.replace({"f": GANG}, 4 * WAITING_RESOLUTION)
    assert deltas.ledger.line is None and deltas.all() == full.all() == {"f": GANG}
    full.flush(full_store)  # type: ignore[arg-type]
    deltas.flush(delta_store)  # type: ignore[arg-type]
    assert sorted(causes(delta_store)) == sorted(causes(full_store))
