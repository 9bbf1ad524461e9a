"""Incremental cycles decide what a full re-walk decides (issue 18).

A cycle over a kept model does only what changed: admissions judged as far as they are
read, strict FIFO stopping at its head, job classes known not to fit skipped, reasons reset
only where written (`SchedulerModel.incremental`). Two models of one random world are driven
in lockstep here — one incremental, one that judges every waiting job afresh each cycle —
through several cycles with jobs arriving, ending and being evicted between them, and every
cycle must decide the same binds, evictions, resizes and pending reasons. The incremental
one sometimes takes its decisions without reasons (`Session.decide`, as the simulator
does), which must not change what later cycles decide.
"""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import Decisions
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session

from .lockstep import assert_same_cycle, change_both
from .strategies import PROFILE_NAMES, World, worlds

CHECKS = settings(max_examples=150, deadline=None)
PROFILES = sorted({*PROFILE_NAMES, "fifo", "fifo-backfill", "strict-fifo", "las",
                   "las-elastic", "sjf", "evict-first", "lend-reclaim", "elastic",
                   "fairshare"})


def cycle(model: SchedulerModel, hooks: Hooks, world: World, close: bool) -> Decisions:
    session = Session(model, hooks)
    for action in world.profile.actions():
        action.execute(session)
    return session.close() if close else session.decide()


@CHECKS
@given(world=worlds(profiles=PROFILES), data=st.data())
def test_incremental_cycles_decide_as_a_full_walk(world: World, data: st.DataObject) -> None:
    snapshot = world.snapshot()
    live = SchedulerModel.from_snapshot(snapshot)
    fresh = SchedulerModel.from_snapshot(snapshot)
    fresh.incremental = False
    hooks = Hooks(world.profile.plugins())
    later = [j for j in world.jobs if not j.tasks]
    for step in range(data.draw(st.integers(2, 6), label="cycles")):
        close = data.draw(st.booleans(), label="reasons")
        got = cycle(live, hooks, world, close)
        want = cycle(fresh, hooks, world, True)
        assert_same_cycle(got, want, close, step)
        kinds = {p.reason.kind.value for p in want.pending}
        event(f"{world.profile_name}: {'Blocked' if 'Blocked' in kinds else 'no line'}, "
              f"{'binds' if want.binds else 'no binds'}")
        change_both(data, live, fresh, later, step)
