"""The dispatch policy of a multi-cluster job (seed 000): which of its copies to keep and
which to cancel, as a pure function of what was observed of them and of `now`.

No I/O, no clock: the live dispatcher and the simulator's what-if
(`shoal.sim.multicluster`) call `decide` with their own `now` and act on the `Dispatch` it
answers; `Dispatch.wake_at` says when the answer next changes by time alone.

The rules (`DispatchRules`; times are seconds, a copy's times are when the driver saw them):

**FAC** (First-Available-Cluster). Every member gets a copy. The copy that entered RUNNING
earliest is kept once it has stayed RUNNING for `guard_time_running`, and every other copy is
cancelled then. A copy that ends inside its guard window does not win: the next earliest
running copy is measured from its own start. Two copies are never both kept past the guard
window. Ties in start time go to the higher priority, then the alias.

**FAC-priority**. When the copy on Cᵢ (priority pᵢ) is RUNNING, every copy on a member of
lower priority is cancelled at once. A copy on Cⱼ with pⱼ > pᵢ that has not run survives
(pⱼ − pᵢ) × `time_scale` seconds from when Cᵢ's copy ran; if it runs in that time it is
the higher one and Cᵢ's copy is cancelled at once; if not, it is cancelled when its window
runs out (a window closes only while the copy that opened it still runs). Copies of equal
priority race as under FAC: the earliest running is kept after its guard. The leading copy
is the winner once its guard is over and no copy of higher priority still has a window; so
no two copies are kept past guard + the largest survival window.

**Success.** A copy that SUCCEEDED before a winner was chosen wins: the work is done, every
other copy is cancelled.

**Retry rule.** A dispatch round fails when its chosen copy fails, is stopped by someone
else or is lost (its member says it does not exist — counted as FAILED), or when every copy
ended before one was kept. The job is then sent to every member again as round n + 1, up to
`retries` times (default 0); after that the job is FAILED. Copies of an earlier round that
are still alive are cancelled.

**Cancels are decisions, repeated.** A copy the policy gave up on gets a `Cancel` at every
call until it is seen final: a cancel its member acknowledged late, or lost, is issued
again, never forgotten. A cancelled copy that is still seen RUNNING never wins.

**Stopping.** With `stop_requested` every live copy is cancelled; the job is STOPPED once
all are final.

**Driving it.** A driver records each copy it sends as WAITING, stamps `running_since` when
it first sees the copy RUNNING (or takes the member's own start time) and `ended_at` when it
sees it final, and calls `decide` at every poll and at `wake_at`; it acts on `submits` and
`cancels` (storing them first, if it must survive a crash: the policy keeps nothing).

The answer is computed by replaying the instants at which something happened or a window
ended, up to `now`, from the observations alone: the same observations give the same
decisions, whenever and however often the driver asks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from shoal.api.federation import CopyState, DispatchPolicy, MemberCluster
from shoal.federation.dispatch_types import (
    Cancel,
    CopyObservation,
    CopyVerdict,
    Dispatch,
    DispatchRules,
    Submit,
)

__all__ = ["Cancel", "CopyObservation", "CopyVerdict", "Dispatch", "DispatchRules", "Submit",
           "decide"]


def _s(seconds: float) -> str:
    """Seconds as a user reads them: 40, 2.5 (a tenth is as fine as a reason needs; a live
    clock's instants have microseconds)."""
    return f"{seconds:.1f}".removesuffix(".0")


@dataclass(slots=True)
class _Race:
    """One dispatch round replayed instant by instant."""

    rules: DispatchRules
    priority: Mapping[str, int]
    copies: Mapping[str, CopyObservation]
    doomed: dict[str, tuple[float, str]] = field(default_factory=dict)
    winner: str | None = None
    won_why: str = ""

    def p(self, alias: str) -> int:
        return self.priority[alias]

    def tag(self, alias: str) -> str:
        return f"'{alias}' (priority {self.p(alias)})"

    def doom(self, alias: str, t: float, reason: str) -> None:
        if alias not in self.doomed and alias != self.winner:
            self.doomed[alias] = (t, reason)

    def open(self) -> list[CopyObservation]:
        return [c for a, c in self.copies.items() if a not in self.doomed]

    def live(self, t: float) -> list[CopyObservation]:
        """Copies not given up on that are RUNNING at `t`, leader first."""
        running = [c for c in self.open() if c.running_at(t)]
        return sorted(running, key=self._lead_key)

    def _lead_key(self, c: CopyObservation) -> tuple[float, float, int, str]:
        prioritised = self.rules.policy is DispatchPolicy.FAC_PRIORITY
        assert c.running_since is not None
        return (-self.p(c.alias) if prioritised else 0, c.running_since, -self.p(c.alias),
                c.alias)

    def windows(self, t: float) -> list[tuple[float, CopyObservation, CopyObservation]]:
        """(end, higher copy, lower running copy) of each survival window open at `t`."""
        if self.rules.policy is not DispatchPolicy.FAC_PRIORITY:
            return []
        live = self.live(t)
        out = []
        for j in self.open():
            if (j.running_since is not None and j.running_since <= t) or j.ended_by(t):
                continue
            for i in live:
                if self.p(i.alias) < self.p(j.alias):
                    assert i.running_since is not None
                    width = (self.p(j.alias) - self.p(i.alias)) * self.rules.time_scale
                    out.append((i.running_since + width, j, i))
        return sorted(out, key=lambda w: (w[0], w[1].alias, w[2].alias))

    def step(self, t: float) -> None:
        if self.winner is not None:
            return
        self._success(t)
        if self.winner is not None:
            return
        if self.rules.policy is DispatchPolicy.FAC_PRIORITY:
            self._priorities(t)
        self._guard(t)

    def _success(self, t: float) -> None:
        done = [c for c in self.open()
                if c.state is CopyState.SUCCEEDED and c.ended_by(t)]
        if not done:
            return
        first = min(done, key=lambda c: (c.ended_at, -self.p(c.alias), c.alias))
        self.winner = first.alias
        assert first.ended_at is not None
        self.won_why = f"succeeded first (at {_s(first.ended_at)} s): the work is done"
        for other in self.copies:
            self.doom(other, t, f"cancelled: copy on {self.tag(first.alias)} succeeded first")

    def _priorities(self, t: float) -> None:
        for i in self.live(t):
            if i.alias in self.doomed:
                continue
            for j in self.open():
                if j.alias != i.alias and self.p(j.alias) < self.p(i.alias):
                    self.doom(j.alias, t, f"cancelled at once: {self.tag(i.alias)} is running "
                                          f"and '{j.alias}' has priority {self.p(j.alias)} < "
                                          f"{self.p(i.alias)}")
        for end, j, i in self.windows(t):
            if end <= t:
                width = (self.p(j.alias) - self.p(i.alias)) * self.rules.time_scale
                self.doom(j.alias, t, f"survival window of {self.tag(j.alias)}, {_s(width)} s "
                                      f"after '{i.alias}' ran, ran out")

    def _guard(self, t: float) -> None:
        live = self.live(t)
        if not live:
            return
        leader = live[0]
        assert leader.running_since is not None
        guard = self.rules.guard_time_running
        if t < leader.running_since + guard:
            return
        everyone = self.rules.policy is DispatchPolicy.FAC
        for c in self.open():
            if c.alias != leader.alias and (everyone or self.p(c.alias) <= self.p(leader.alias)):
                self.doom(c.alias, t, f"cancelled: copy on {self.tag(leader.alias)} ran first "
                                      f"and stayed RUNNING for its {_s(guard)} s guard")
        if all(c.alias == leader.alias or c.ended_by(t) for c in self.open()):
            self.winner = leader.alias
            if self.rules.policy is DispatchPolicy.FAC_PRIORITY:
                self.won_why = (f"is the highest priority that ran (RUNNING since "
                                f"{_s(leader.running_since)} s), kept after its {_s(guard)} s "
                                f"guard and every higher copy's window")
            else:
                self.won_why = (f"entered RUNNING first (at {_s(leader.running_since)} s) and "
                                f"stayed RUNNING for the {_s(guard)} s guard")

    def instants(self, now: float) -> list[float]:
        """Every instant up to `now` at which the rules may change their answer."""
        points = {now}
        guard, scale = self.rules.guard_time_running, self.rules.time_scale
        for c in self.copies.values():
            for t in (c.running_since, c.ended_at):
                if t is not None:
                    points.add(t)
            if c.running_since is not None:
                points.add(c.running_since + guard)
                if self.rules.policy is DispatchPolicy.FAC_PRIORITY:
                    for j in self.copies.values():
                        gap = self.p(j.alias) - self.p(c.alias)
                        if gap > 0:
                            points.add(c.running_since + gap * scale)
        return sorted(t for t in points if t <= now)

    def wake_at(self, now: float) -> float | None:
        if self.winner is not None:
            return None
        later = [end for end, _, _ in self.windows(now) if end > now]
        later += [c.running_since + self.rules.guard_time_running for c in self.live(now)
                  if c.running_since is not None
                  and c.running_since + self.rules.guard_time_running > now]
        return min(later, default=None)


def _check(members: Sequence[MemberCluster], copies: Iterable[CopyObservation]) -> None:
    aliases = [m.alias for m in members]
    if len(set(aliases)) != len(aliases):
        raise ValueError(f"members: aliases must be unique, got {sorted(aliases)}")
    seen: set[tuple[str, int]] = set()
    for c in copies:
        if c.alias not in aliases:
            raise ValueError(f"copies: copy on {c.alias!r} is not on a member "
                             f"(members: {', '.join(aliases[:20])})")
        if (c.alias, c.attempt) in seen:
            raise ValueError(f"copies: two copies on {c.alias!r} in round {c.attempt}")
        seen.add((c.alias, c.attempt))


def decide(members: Sequence[MemberCluster], rules: DispatchRules,
           copies: Sequence[CopyObservation], now: float, *,
           stop_requested: bool = False) -> Dispatch:
    """What to do about one multi-cluster job at `now` (module text: the rules)."""
    _check(members, copies)
    attempt = max((c.attempt for c in copies), default=0)
    current = {c.alias: c for c in copies if c.attempt == attempt}
    race = _Race(rules, {m.alias: m.priority for m in members}, current)
    for t in race.instants(now):
        race.step(t)
    stale = tuple(Cancel(c.alias, c.attempt, now, f"cancelled: round {c.attempt} was given up")
                  for c in copies if c.attempt < attempt and not c.state.is_final)
    if stop_requested:
        for alias in current:
            race.doom(alias, now, "cancelled: the job was stopped")
        if race.winner is not None and not current[race.winner].state.is_final:
            race.doomed[race.winner] = (now, "cancelled: the job was stopped")
    cancels = stale + tuple(Cancel(a, attempt, t, why) for a, (t, why) in race.doomed.items()
                            if not current[a].state.is_final)
    verdicts = tuple(_verdict(race, c, now) for c in current.values())

    def answer(state: CopyState, on: str | None, why: str, *, winner: str | None = None,
               submits: tuple[Submit, ...] = (), wake_at: float | None = None) -> Dispatch:
        return Dispatch(state, on, winner, why, attempt, submits, cancels, verdicts, wake_at)

    if stop_requested:
        if all(c.state.is_final for c in copies):
            return answer(CopyState.STOPPED, None, "stopped by request")
        left = len(cancels)
        physical = CopyState.RUNNING if any(c.running_at(now) for c in current.values()) \
            else CopyState.WAITING
        return answer(physical, None,
                      f"stopping: {left} cop{'y' if left == 1 else 'ies'} still to cancel")
    failed = _round_failed(race, [m.alias for m in members])
    if failed is not None:
        if attempt < rules.retries:
            again = tuple(Submit(m.alias, attempt + 1, f"retry {attempt + 1} of "
                                 f"{rules.retries}: {failed}") for m in members)
            return answer(CopyState.WAITING, None,
                          f"retry {attempt + 1} of {rules.retries}: {failed}", submits=again)
        tail = f" (after {attempt} retr{'y' if attempt == 1 else 'ies'})" if attempt else ""
        return answer(CopyState.FAILED, race.winner, failed + tail, winner=race.winner)
    if race.winner is not None:
        chosen = current[race.winner]
        state = CopyState.SUCCEEDED if chosen.state is CopyState.SUCCEEDED else \
            _running_or_waiting(race, now)
        return answer(state, race.winner, f"copy on {race.tag(race.winner)} {race.won_why}",
                      winner=race.winner)
    live = race.live(now)
    # Under FAC-priority a copy below a running one would be cancelled at once: not sent.
    floor = race.p(live[0].alias) if live and rules.policy is DispatchPolicy.FAC_PRIORITY \
        else -1
    submits = tuple(Submit(m.alias, attempt, "sent to every member") for m in members
                    if m.alias not in current and m.priority >= floor)
    if live:
        lead = live[0]
        assert lead.running_since is not None
        why = f"copy on {race.tag(lead.alias)} leads, RUNNING since {_s(lead.running_since)} s"
        wake = race.wake_at(now)
        if wake is not None:
            why += f"; the race is open until {_s(wake)} s at least"
        return answer(CopyState.RUNNING, lead.alias, why, submits=submits, wake_at=wake)
    return answer(CopyState.WAITING, None, "no copy is running yet", submits=submits,
                  wake_at=race.wake_at(now))


def _running_or_waiting(race: _Race, now: float) -> CopyState:
    if race.winner is not None and race.copies[race.winner].running_at(now):
        return CopyState.RUNNING
    return CopyState.RUNNING if race.live(now) else CopyState.WAITING


def _round_failed(race: _Race, members: Sequence[str]) -> str | None:
    """Why the current round failed, or None if it has not."""
    if race.winner is not None:
        chosen = race.copies[race.winner]
        if chosen.state in (CopyState.FAILED, CopyState.STOPPED):
            assert chosen.ended_at is not None
            how = "was lost" if chosen.lost else f"ended {chosen.state.value}"
            return f"the chosen copy on {race.tag(chosen.alias)} {how} at {_s(chosen.ended_at)} s"
        return None
    if race.copies and all(a in race.copies for a in members) \
            and all(c.state.is_final for c in race.copies.values()):
        return "every copy ended before one was kept"
    return None


def _verdict(race: _Race, c: CopyObservation, now: float) -> CopyVerdict:
    if c.alias in race.doomed:
        return CopyVerdict(c.alias, c.attempt, False, race.doomed[c.alias][1])
    if c.alias == race.winner:
        return CopyVerdict(c.alias, c.attempt, True, f"kept: {race.won_why}")
    if c.state.is_final:
        how = "lost" if c.lost else c.state.value
        return CopyVerdict(c.alias, c.attempt, False, f"{how} before it was kept")
    if c.running_at(now):
        assert c.running_since is not None
        ends = c.running_since + race.rules.guard_time_running
        return CopyVerdict(c.alias, c.attempt, True,
                           f"RUNNING since {_s(c.running_since)} s; its guard ends at {_s(ends)} s")
    closing = [end for end, j, _ in race.windows(now) if j.alias == c.alias]
    if closing:
        return CopyVerdict(c.alias, c.attempt, True,
                           f"waiting; its survival window ends at {_s(min(closing))} s")
    return CopyVerdict(c.alias, c.attempt, True, "waiting for its member")
