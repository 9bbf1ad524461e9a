"""Properties of the pure dispatch policy (`shoal.federation.dispatch`) over random races:
never two copies kept past guard + the largest survival window, a lower-priority copy never
wins over a higher one that ran within its window, and the answer is a function of the
observations (the same ones give the same answer; a cancel once decided is never taken
back as observations grow)."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api.federation import ClusterKind, CopyState, DispatchPolicy, MemberCluster
from shoal.federation.dispatch import CopyObservation, DispatchRules, decide

ENDS = (CopyState.SUCCEEDED, CopyState.FAILED, CopyState.STOPPED)


@dataclass(frozen=True)
class Race:
    members: tuple[MemberCluster, ...]
    rules: DispatchRules
    copies: tuple[CopyObservation, ...]
    now: float

    @property
    def max_window(self) -> float:
        """The largest survival window (none under FAC)."""
        if self.rules.policy is DispatchPolicy.FAC:
            return 0.0
        ps = [m.priority for m in self.members]
        return (max(ps) - min(ps)) * self.rules.time_scale


@st.composite
def copies_of(draw: st.DrawFn, alias: str, ends: bool) -> CopyObservation:
    ran = draw(st.none() | st.integers(0, 300).map(float))
    end = draw(st.none() | st.integers(0, 200).map(float)) if ends else None
    if end is None:
        return CopyObservation(alias, CopyState.WAITING if ran is None else CopyState.RUNNING,
                               ran)
    state = draw(st.sampled_from(ENDS))
    lost = state is CopyState.FAILED and draw(st.booleans())
    return CopyObservation(alias, state, ran, end + (ran or 0.0), lost=lost)


@st.composite
def races(draw: st.DrawFn, policy: DispatchPolicy | None = None, ends: bool = True,
          distinct: bool = False) -> Race:
    n = draw(st.integers(2, 4))
    levels = st.sampled_from([0, 10, 20, 50, 90, 100])
    priorities = draw(st.lists(levels, min_size=n, max_size=n, unique=distinct))
    members = tuple(MemberCluster(f"m{i}", f"https://m{i}", ClusterKind.SHOAL, priority=p)
                    for i, p in enumerate(priorities))
    rules = DispatchRules(policy or draw(st.sampled_from(list(DispatchPolicy))),
                          guard_time_running=float(draw(st.integers(0, 100))),
                          time_scale=draw(st.sampled_from([0.0, 0.5, 1.0, 3.0])))
    copies = tuple(draw(copies_of(m.alias, ends)) for m in members)
    return Race(members, rules, copies, float(draw(st.integers(0, 900))))


def seen_at(c: CopyObservation, t: float) -> CopyObservation:
    """What a driver polling at `t` knew of the copy `c` turned out to be."""
    if c.ended_by(t):
        return c
    if c.running_since is not None and c.running_since <= t:
        return CopyObservation(c.alias, CopyState.RUNNING, c.running_since)
    return CopyObservation(c.alias)


@settings(max_examples=400, deadline=None)
@given(races())
def test_never_two_copies_kept_past_guard_and_the_largest_window(race: Race) -> None:
    out = decide(race.members, race.rules, race.copies, race.now)
    by_alias = {c.alias: c for c in race.copies}
    kept = [v.alias for v in out.verdicts if v.kept and not by_alias[v.alias].state.is_final]
    horizon = race.now - race.rules.guard_time_running - race.max_window
    old = [a for a in kept if (by_alias[a].running_since or race.now + 1) <= horizon]
    if old:
        assert kept == old, (kept, out)


@settings(max_examples=400, deadline=None)
@given(races(DispatchPolicy.FAC_PRIORITY, ends=False, distinct=True))
def test_a_lower_copy_never_wins_over_a_higher_one_that_ran_in_its_window(race: Race) -> None:
    out = decide(race.members, race.rules, race.copies, race.now)
    if out.winner is None:
        return
    priority = {m.alias: m.priority for m in race.members}
    won = next(c for c in race.copies if c.alias == out.winner)
    assert won.running_since is not None
    for c in race.copies:
        gap = priority[c.alias] - priority[won.alias]
        if gap > 0 and c.running_since is not None:
            assert c.running_since > won.running_since + gap * race.rules.time_scale, out


@settings(max_examples=300, deadline=None)
@given(races(), st.integers(0, 900).map(float))
def test_decisions_are_a_function_of_the_observations(race: Race, earlier: float) -> None:
    again = decide(race.members, race.rules, tuple(race.copies), race.now)
    assert again == decide(race.members, race.rules, race.copies, race.now)
    # What a driver saw at an earlier poll: its cancels stand, with their first reason.
    t = min(earlier, race.now)
    before = decide(race.members, race.rules, tuple(seen_at(c, t) for c in race.copies), t)
    after = {(c.alias, c.attempt): c for c in again.cancels}
    final = {c.alias for c in race.copies if c.state.is_final}
    for cancel in before.cancels:
        if cancel.alias not in final:
            assert after.get((cancel.alias, cancel.attempt)) == cancel, (before, again)
