"""Unit tables of the FAC dispatch policy on a fake clock: earliest running wins after the
guard, a copy that dies inside its guard window does not, success wins, cancels repeat
until seen final, and the retry rule."""

from __future__ import annotations

import pytest

from shoal.api.federation import ClusterKind, CopyState, DispatchPolicy, MemberCluster
from shoal.federation.dispatch import CopyObservation, DispatchRules, decide

W, R, OK, KO, ST = (CopyState.WAITING, CopyState.RUNNING, CopyState.SUCCEEDED,
                    CopyState.FAILED, CopyState.STOPPED)
MEMBERS = tuple(MemberCluster(a, f"https://{a}", ClusterKind.SHOAL, priority=p)
                for a, p in (("a", 50), ("b", 50), ("c", 50)))
FAC = DispatchRules(DispatchPolicy.FAC, guard_time_running=60)


def copy(alias: str, state: CopyState = W, ran: float | None = None, ended: float | None = None,
         *, attempt: int = 0, lost: bool = False) -> CopyObservation:
    return CopyObservation(alias, state, ran, ended, attempt=attempt, lost=lost)


def test_a_new_job_is_sent_to_every_member() -> None:
    out = decide(MEMBERS, FAC, (), now=0)
    assert out.state is W
    assert [(s.alias, s.attempt) for s in out.submits] == [("a", 0), ("b", 0), ("c", 0)]
    assert out.cancels == () and out.winner is None and out.wake_at is None


# (copies, now) -> (job state, on, winner, cancelled aliases, wake_at)
TABLE = [
    pytest.param((copy("a", R, 10), copy("b", R, 20), copy("c")), 69.5,
                 (R, "a", None, [], 70.0), id="inside-guard-nothing-cancelled"),
    pytest.param((copy("a", R, 10), copy("b", R, 20), copy("c")), 70,
                 (R, "a", "a", ["b", "c"], None), id="earliest-running-wins-at-guard-end"),
    pytest.param((copy("a", R, 20), copy("b", R, 10), copy("c")), 70,
                 (R, "b", "b", ["a", "c"], None), id="earliest-is-earliest-not-first-listed"),
    pytest.param((copy("a", KO, 10, 40), copy("b", R, 20), copy("c")), 75,
                 (R, "b", None, [], 80.0), id="died-in-guard-next-measured-from-own-start"),
    pytest.param((copy("a", KO, 10, 40), copy("b", R, 20), copy("c")), 80,
                 (R, "b", "b", ["c"], None), id="next-earliest-wins-at-its-own-guard"),
    pytest.param((copy("a", KO, 10, 70), copy("b", R, 20), copy("c")), 70,
                 (R, "b", None, [], 80.0), id="ending-at-the-guard-instant-is-not-staying"),
    pytest.param((copy("a", R, 5), copy("b", OK, 10, 30), copy("c")), 30,
                 (OK, "b", "b", ["a", "c"], None), id="success-before-a-winner-wins"),
    pytest.param((copy("a", R, 10), copy("b", R, 10), copy("c", R, 10)), 70,
                 (R, "a", "a", ["b", "c"], None), id="tie-goes-to-alias-at-equal-priority"),
    pytest.param((copy("a", R, 10), copy("b", R, 20), copy("c")), 500,
                 (R, "a", "a", ["b", "c"], None), id="late-ack-cancel-reissued"),
]


@pytest.mark.parametrize(("copies", "now", "want"), TABLE)
def test_fac_table(copies: tuple[CopyObservation, ...], now: float,
                   want: tuple[CopyState, str | None, str | None, list[str], float | None]
                   ) -> None:
    out = decide(MEMBERS, FAC, copies, now)
    assert (out.state, out.on, out.winner, sorted(c.alias for c in out.cancels),
            out.wake_at) == want


def test_cancel_reason_names_the_winner_and_the_guard() -> None:
    out = decide(MEMBERS, FAC, (copy("a", R, 10), copy("b", R, 20), copy("c")), 70)
    reasons = {c.alias: c.reason for c in out.cancels}
    assert reasons["b"] == ("cancelled: copy on 'a' (priority 50) ran first and stayed "
                            "RUNNING for its 60 s guard")
    assert "kept" in {v.alias: v.reason for v in out.verdicts}["a"]
    assert out.why.startswith("copy on 'a' (priority 50) entered RUNNING first (at 10 s)")


def test_a_live_clocks_instants_read_to_a_tenth_of_a_second_with_their_unit() -> None:
    # A live driver's instants have microseconds; a reason shows a tenth, and large
    # instants (the simulator's) are never written in exponent form.
    out = decide(MEMBERS, FAC, (copy("a", R, 0.115236), copy("b")), 60.2)
    assert out.why.startswith("copy on 'a' (priority 50) entered RUNNING first (at 0.1 s)")
    out = decide(MEMBERS, FAC, (copy("a", R, 1795706920.64), copy("b")), 1795706990.0)
    assert "(at 1795706920.6 s)" in out.why


def test_a_cancel_acknowledged_late_is_issued_again_with_its_first_decision_time() -> None:
    copies = (copy("a", R, 10), copy("b", R, 20), copy("c", ST, None, 75))
    first = decide(MEMBERS, FAC, copies, 71)
    later = decide(MEMBERS, FAC, copies, 400)
    assert [(c.alias, c.decided_at) for c in first.cancels] == [("b", 70.0)]
    assert later.cancels == first.cancels
    # Still RUNNING after its cancel: it never becomes the winner.
    assert later.winner == "a"


def test_a_cancelled_copy_seen_stopped_is_not_cancelled_again() -> None:
    out = decide(MEMBERS, FAC, (copy("a", R, 10), copy("b", ST, 20, 72), copy("c", ST, None, 72)),
                 100)
    assert out.cancels == ()
    assert {v.alias: v.kept for v in out.verdicts} == {"a": True, "b": False, "c": False}


WON_THEN = (copy("b", ST, 20, 72), copy("c", ST, None, 72))


@pytest.mark.parametrize(("chosen", "how"), [
    (copy("a", KO, 10, 100), "ended FAILED at 100 s"),
    (copy("a", KO, 10, 100, lost=True), "was lost at 100 s"),
    (copy("a", ST, 10, 100), "ended STOPPED at 100 s"),
])
def test_a_winner_that_fails_fails_the_job_without_retries(chosen: CopyObservation,
                                                           how: str) -> None:
    out = decide(MEMBERS, FAC, (chosen, *WON_THEN), 100)
    assert out.state is KO and out.winner == "a" and out.submits == ()
    assert out.why == f"the chosen copy on 'a' (priority 50) {how}"


def test_a_winner_that_fails_is_sent_everywhere_again_while_retries_last() -> None:
    rules = DispatchRules(DispatchPolicy.FAC, guard_time_running=60, retries=1)
    out = decide(MEMBERS, rules, (copy("a", KO, 10, 100, lost=True), *WON_THEN), 100)
    assert out.state is W
    assert [(s.alias, s.attempt) for s in out.submits] == [("a", 1), ("b", 1), ("c", 1)]
    assert out.why == "retry 1 of 1: the chosen copy on 'a' (priority 50) was lost at 100 s"
    # Round 1 fails too: the retries are spent.
    round1 = (copy("a", KO, 110, 115, attempt=1), copy("b", KO, None, 116, attempt=1),
              copy("c", KO, None, 117, attempt=1))
    out = decide(MEMBERS, rules, (copy("a", KO, 10, 100, lost=True), *WON_THEN, *round1), 120)
    assert out.state is KO and out.submits == ()
    assert out.why == "every copy ended before one was kept (after 1 retry)"


def test_a_live_copy_of_a_given_up_round_is_cancelled() -> None:
    rules = DispatchRules(DispatchPolicy.FAC, guard_time_running=60, retries=1)
    copies = (copy("a", KO, 10, 100, lost=True), copy("b", R, 20), copy("c", ST, None, 72),
              copy("a", attempt=1), copy("b", attempt=1), copy("c", attempt=1))
    out = decide(MEMBERS, rules, copies, 130)
    assert [(c.alias, c.attempt, c.reason) for c in out.cancels] == [
        ("b", 0, "cancelled: round 0 was given up")]


def test_every_copy_failing_before_the_guard_fails_the_job() -> None:
    out = decide(MEMBERS, FAC, (copy("a", KO, 10, 20), copy("b", KO, None, 5),
                                copy("c", KO, 30, 31)), 40)
    assert out.state is KO and out.winner is None
    assert out.why == "every copy ended before one was kept"


def test_stopping_cancels_every_live_copy_then_the_job_is_stopped() -> None:
    copies = (copy("a", R, 10), copy("b", R, 20), copy("c"))
    out = decide(MEMBERS, FAC, copies, 30, stop_requested=True)
    assert sorted(c.alias for c in out.cancels) == ["a", "b", "c"]
    assert out.state is R and out.why == "stopping: 3 copies still to cancel"
    done = (copy("a", ST, 10, 31), copy("b", ST, 20, 31), copy("c", ST, None, 31))
    assert decide(MEMBERS, FAC, done, 32, stop_requested=True).state is ST


@pytest.mark.parametrize(("bad", "message"), [
    (lambda: CopyObservation("a", R), "a RUNNING copy needs running_since"),
    (lambda: CopyObservation("a", KO), "ended_at is set exactly when the state is final"),
    (lambda: CopyObservation("a", R, 10, lost=True), "a lost copy is FAILED"),
    (lambda: CopyObservation("a", KO, 10, 5), "ended_at 5 is before running_since 10"),
    (lambda: DispatchRules(DispatchPolicy.FAC, guard_time_running=-1),
     "guard_time_running: must be a finite number >= 0"),
    (lambda: decide(MEMBERS, FAC, (copy("z"),), 0), "copies: copy on 'z' is not on a member"),
    (lambda: decide(MEMBERS, FAC, (copy("a"), copy("a")), 0),
     "copies: two copies on 'a' in round 0"),
])
def test_bad_input_names_the_field(bad: object, message: str) -> None:
    assert callable(bad)
    with pytest.raises(ValueError, match=message):
        bad()
