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

from dataclasses import replace

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import Decisions
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session

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


def moves(decisions: Decisions) -> dict[str, object]:
    out = decisions.to_dict()
    del out["pending"]
    return out


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
        assert moves(got) == moves(want), f"cycle {step}"
        if close:
            assert got.to_dict()["pending"] == want.to_dict()["pending"], f"cycle {step}"
        kinds = {p.reason.kind.value for p in want.pending}
        event(f"{world.profile_name}: {'Blocked' if 'Blocked' in kinds else 'no line'}, "
              f"{'binds' if want.binds else 'no binds'}")
        # Between cycles: a running job ends, or a task is evicted, or one more job of
        # the same shape as a waiting one arrives; or the clock moves on.
        change = data.draw(st.sampled_from(["none", "finish", "evict", "arrive"]),
                           label="change")
        running = sorted(name for name, info in live.jobs.items() if info.running)
        if change == "finish" and running:
            name = data.draw(st.sampled_from(running), label="finished")
            live.remove_job(name)
            fresh.remove_job(name)
        elif change == "evict" and running:
            name = data.draw(st.sampled_from(running), label="evicted")
            ref = live.jobs[name].running[0].ref
            live.release_task(ref)
            fresh.release_task(ref)
        elif change == "arrive" and later:
            template = data.draw(st.sampled_from(later), label="template")
            job = replace(template, name=f"{template.name}-again{step}",
                          submitted=template.submitted + 0.5)
            live.add_job(job)
            fresh.add_job(job)
        live.now = fresh.now = live.now + data.draw(st.sampled_from([1.0, 60.0, 3600.0]),
                                                      label="elapsed")
