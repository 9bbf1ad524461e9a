"""The simulator's skipped wakes (`Simulator._cycle`) would have decided nothing.

Under a time-dependent profile every cycle asks for a wake, and every cycle before it asks
for the same one again, so several wakes fall due at one instant. The simulator skips a
wake at the instant of a cycle that decided nothing when nothing happened since. Random
traces replayed under `las` with low thresholds (jobs cross them, start, end and are
preempted, so wakes pile up) and under `fairshare` (time-dependent, polled every interval):
a replay that runs every such cycle, and checks that each decides nothing, gives the same
job records, samples and event count as the one that skips them.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.scheduler import Profile
from shoal.sim.result import SimResult
from shoal.sim.simulator import SimConfig, Simulator
from shoal.sim.trace import Trace

from .test_kept_indexes import LAS, TraceCluster, traces

FAIRSHARE = Profile.from_yaml("""
name: fairshare-poll
actions: "enqueue, allocate, preempt"
tiers:
  - plugins: [{name: fairshare}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}]
""")


class RunsEveryWake(Simulator):
    """Runs the wakes the simulator skips, and requires each to decide nothing."""

    skips_moot_wakes = False
    checked = 0

    def _cycle(self, now: float) -> None:
        moot = not self._dirty and self._moot_at == now and self._time_dependent \
            and bool(self.model.waiting)
        super()._cycle(now)
        if moot:
            RunsEveryWake.checked += 1
            # `_moot_at` stays `now` only where this cycle decided nothing either.
            assert self._moot_at == now and not self._dirty, f"the wake at {now} decided"


class CountsSkips(Simulator):
    skipped = 0

    def _cycle(self, now: float) -> None:
        if not self._dirty and self._moot_at == now and self._time_dependent \
                and self.model.waiting:
            CountsSkips.skipped += 1
        super()._cycle(now)


def replay(kind: type[Simulator], trace: Trace, nodes: int, profile: Profile) -> SimResult:
    return kind(trace, TraceCluster(nodes), profile, SimConfig(cycle_interval=30.0)).run()


@settings(max_examples=15, deadline=None)
@given(trace=traces(), nodes=st.integers(1, 3), fairshare=st.booleans())
def test_skipped_wakes_decide_nothing(trace: Any, nodes: int, fairshare: bool) -> None:
    profile = FAIRSHARE if fairshare else LAS
    CountsSkips.skipped = RunsEveryWake.checked = 0
    fast = replay(CountsSkips, trace, nodes, profile)
    slow = replay(RunsEveryWake, trace, nodes, profile)
    assert CountsSkips.skipped == RunsEveryWake.checked
    event("wakes skipped" if CountsSkips.skipped else "none skipped")
    assert fast.jobs == slow.jobs
    assert fast.samples == slow.samples
    assert fast.events == slow.events
