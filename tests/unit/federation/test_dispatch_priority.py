"""Unit tables of the FAC-priority dispatch policy on a fake clock: lower-priority copies
cancelled at once, survival windows of exactly (pⱼ − pᵢ) × timeScale, a higher copy that
runs inside its window wins, equal priorities race as FAC."""

from __future__ import annotations

import pytest

from shoal.api.federation import ClusterKind, CopyState, DispatchPolicy, MemberCluster
from shoal.federation.dispatch import CopyObservation, DispatchRules, decide

W, R, KO = CopyState.WAITING, CopyState.RUNNING, CopyState.FAILED
MEMBERS = tuple(MemberCluster(a, f"https://{a}", ClusterKind.SLURM, priority=p)
                for a, p in (("a", 90), ("b", 50), ("c", 10)))
RULES = DispatchRules(DispatchPolicy.FAC_PRIORITY, guard_time_running=60, time_scale=1.0)


def copy(alias: str, state: CopyState = W, ran: float | None = None,
         ended: float | None = None) -> CopyObservation:
    return CopyObservation(alias, state, ran, ended)


def cancelled(copies: tuple[CopyObservation, ...], now: float,
              members: tuple[MemberCluster, ...] = MEMBERS,
              rules: DispatchRules = RULES) -> dict[str, str]:
    return {c.alias: c.reason for c in decide(members, rules, copies, now).cancels}


def test_a_running_copy_cancels_every_lower_priority_copy_at_once() -> None:
    out = decide(MEMBERS, RULES, (copy("a", R, 10), copy("b", R, 10), copy("c")), 10)
    assert {c.alias: (c.decided_at, c.reason) for c in out.cancels} == {
        "b": (10.0, "cancelled at once: 'a' (priority 90) is running and 'b' has "
                    "priority 50 < 90"),
        "c": (10.0, "cancelled at once: 'a' (priority 90) is running and 'c' has "
                    "priority 10 < 90"),
    }
    assert (out.state, out.on, out.winner, out.wake_at) == (R, "a", None, 70.0)
    assert decide(MEMBERS, RULES, (copy("a", R, 10), copy("b", R, 10), copy("c")), 70).winner \
        == "a"


def test_a_lower_copy_running_first_cancels_the_lowest_then_is_cancelled_by_a_higher() -> None:
    out = decide(MEMBERS, RULES, (copy("a", R, 10), copy("b", R, 5), copy("c")), 10)
    assert {c.alias: (c.decided_at, c.reason[:36]) for c in out.cancels} == {
        "c": (5.0, "cancelled at once: 'b' (priority 50)"),
        "b": (10.0, "cancelled at once: 'a' (priority 90)")}


# c (10) runs at 100: b (50) survives 40 s (to 140), a (90) survives 80 s (to 180).
WINDOWS = [
    pytest.param(139.999, set(), 140.0, id="b-window-open-just-before-40s"),
    pytest.param(140, {"b"}, 160.0, id="b-window-closes-at-exactly-40s"),
    pytest.param(160, {"b"}, 180.0, id="c-past-guard-but-a-window-still-open"),
    pytest.param(179.999, {"b"}, 180.0, id="a-window-open-just-before-80s"),
    pytest.param(180, {"a", "b"}, None, id="a-window-closes-at-exactly-80s"),
]


@pytest.mark.parametrize(("now", "gone", "wake"), WINDOWS)
def test_survival_windows_are_exactly_priority_gap_times_time_scale(
        now: float, gone: set[str], wake: float | None) -> None:
    copies = (copy("a"), copy("b"), copy("c", R, 100))
    out = decide(MEMBERS, RULES, copies, now)
    assert {c.alias for c in out.cancels} == gone
    assert out.wake_at == wake
    assert out.winner == ("c" if now >= 180 else None)


def test_the_window_reason_says_how_long_and_after_whom() -> None:
    reasons = cancelled((copy("a"), copy("b"), copy("c", R, 100)), 140)
    assert reasons["b"] == "survival window of 'b' (priority 50), 40 s after 'c' ran, ran out"


def test_a_time_scale_stretches_every_window() -> None:
    rules = DispatchRules(DispatchPolicy.FAC_PRIORITY, guard_time_running=60, time_scale=2.5)
    copies = (copy("a"), copy("b"), copy("c", R, 100))
    verdicts = {v.alias: v.reason for v in decide(MEMBERS, rules, copies, 100).verdicts}
    assert verdicts["b"] == "waiting; its survival window ends at 200 s"  # 100 + 40 × 2.5
    assert decide(MEMBERS, rules, copies, 160).wake_at == 200.0  # past c's guard
    assert set(cancelled(copies, 199, rules=rules)) == set()
    assert set(cancelled(copies, 200, rules=rules)) == {"b"}
    assert set(cancelled(copies, 300, rules=rules)) == {"a", "b"}  # 100 + 80 × 2.5


def test_a_higher_copy_that_runs_inside_its_window_wins() -> None:
    copies = (copy("a"), copy("b", R, 130), copy("c", R, 100))
    out = decide(MEMBERS, RULES, copies, 130)
    assert {c.alias: c.reason for c in out.cancels} == {
        "c": "cancelled at once: 'b' (priority 50) is running and 'c' has priority 10 < 50"}
    assert out.on == "b" and out.winner is None
    # a's window is now measured from b: (90 - 50) × 1 s after 130.
    assert out.wake_at == 170.0
    assert decide(MEMBERS, RULES, copies, 190).winner == "b"
    assert decide(MEMBERS, RULES, copies, 190).why == (
        "copy on 'b' (priority 50) is the highest priority that ran (RUNNING since 130 s), kept "
        "after its 60 s guard and every higher copy's window")


def test_running_exactly_at_the_window_end_is_inside_it() -> None:
    copies = (copy("a"), copy("b", R, 140), copy("c", R, 100))
    assert set(cancelled(copies, 140)) == {"c"}


def test_a_window_closes_only_while_its_opener_runs() -> None:
    copies = (copy("a"), copy("b"), copy("c", KO, 100, 110))
    out = decide(MEMBERS, RULES, copies, 500)
    assert out.cancels == () and out.state is W and out.wake_at is None


def test_equal_priorities_race_as_fac_between_them() -> None:
    members = tuple(MemberCluster(a, f"https://{a}", ClusterKind.RAY, priority=p)
                    for a, p in (("a", 50), ("b", 50), ("c", 10)))
    copies = (copy("a", R, 20), copy("b", R, 10), copy("c", R, 5))
    assert set(cancelled(copies, 10, members)) == {"c"}
    out = decide(members, RULES, copies, 70)
    assert out.winner == "b" and {c.alias for c in out.cancels} == {"a", "c"}
    assert decide(members, RULES, copies, 69).winner is None


def test_a_higher_copy_dying_inside_its_guard_hands_back_to_nobody() -> None:
    # a (90) cancelled b and c at once; it then fails inside its guard: the round failed.
    copies = (copy("a", KO, 10, 20), copy("b", CopyState.STOPPED, 5, 12),
              copy("c", CopyState.STOPPED, None, 12))
    out = decide(MEMBERS, RULES, copies, 30)
    assert out.state is KO and out.why == "every copy ended before one was kept"


def test_a_member_below_a_running_copy_is_not_sent_a_copy() -> None:
    out = decide(MEMBERS, RULES, (copy("b", R, 10),), 10)
    assert [s.alias for s in out.submits] == ["a"]
    fac = DispatchRules(DispatchPolicy.FAC, guard_time_running=60)
    assert [s.alias for s in decide(MEMBERS, fac, (copy("b", R, 10),), 10).submits] == ["a", "c"]
