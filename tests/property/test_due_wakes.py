"""A wake already due asks no plugin when the next change is (`Simulator._wake_for_time`).

A cycle that evicts has a tick due at its own instant before it asks the time-dependent
plugins when the order next changes; nothing they say can bring a tick before it, so the
simulator does not ask. Random traces under `las` with low thresholds (jobs cross them,
start, end and are preempted) and under `fairshare`: a replay that asks the plugins after
every cycle, as before, and one that does not ask where a tick is due give the same job
records, samples and event count, and every wake the fast one left unasked would have
changed nothing (the plain one's tick stays where it was).
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.scheduler import Profile
from shoal.scheduler.session import Session
from shoal.sim.result import SimResult
from shoal.sim.simulator import SimConfig, Simulator
from shoal.sim.trace import Trace

from .test_kept_indexes import LAS, TraceCluster, traces
from .test_moot_wakes import FAIRSHARE


class AsksEveryTime(Simulator):
    """Asks the plugins after every cycle with jobs waiting (the plain path)."""

    unasked = 0

    def _wake_for_time(self, session: Session, now: float) -> None:
        due = self._tick_at
        soonest = now + self.config.cycle_interval
        if self._wakers:
            changes = [w.next_change(session) for w in self._wakers]
            known = [c for c in changes if c is not None]
            if not known:
                return
            soonest = max(soonest, min(known))
        self._schedule_tick(soonest)
        interval = self.config.cycle_interval
        if due is not None and due <= math.ceil((now + interval) / interval) * interval:
            AsksEveryTime.unasked += 1
            assert self._tick_at == due, f"the wake asked at {now} moved the due tick"


def replay(kind: type[Simulator], trace: Trace, nodes: int, profile: Profile) -> SimResult:
    return kind(trace, TraceCluster(nodes), profile, SimConfig(cycle_interval=30.0)).run()


@settings(max_examples=15, deadline=None)
@given(trace=traces(), nodes=st.integers(1, 3), fairshare=st.booleans())
def test_a_due_wake_asks_no_plugin_and_decides_the_same(trace: Any, nodes: int,
                                                         fairshare: bool) -> None:
    profile = FAIRSHARE if fairshare else LAS
    AsksEveryTime.unasked = 0
    fast = replay(Simulator, trace, nodes, profile)
    slow = replay(AsksEveryTime, trace, nodes, profile)
    event("wakes left unasked" if AsksEveryTime.unasked else "none left unasked")
    assert fast.jobs == slow.jobs
    assert fast.samples == slow.samples
    assert fast.events == slow.events
