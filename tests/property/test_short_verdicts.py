"""Searches answered from the numbers they read decide what full searches decide (issue 18,
`shoal.scheduler.actions.short_searches`).

1. Two models of one crowded random world, each with its own actions kept from one cycle to
   the next, driven in lockstep under `las` and `las-elastic`: one answers a class turned
   down short (the gains test, or nothing ranked behind it) from its `ShortVerdict` while
   it holds, the other searches in full (`Preemption.keeps_short = False`). Every cycle
   must decide the same binds, evictions and resizes, give the same reasons and leave the
   same lending each time it is settled.
2. Random traces replayed by the simulator under `las` with low thresholds (jobs cross
   thresholds, start, end and are preempted) give the same job records either way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.scheduler.actions.preempt import Preemption
from shoal.scheduler.actions.short_searches import ShortSearches
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.preemptor_class import PreemptorClasses, Verdict
from shoal.sim.simulator import SimConfig, simulate

from .lockstep import assert_same_cycle, change_both
from .strategies import World
from .test_kept_indexes import LAS, TraceCluster, traces
from .test_preemptor_walk import PROFILES, Runner, backlogs


@contextmanager
def counting(answers: list[int]) -> Iterator[None]:
    """Count the searches answered by a `ShortVerdict`, and the classes answered so
    before their job was asked whether it wants to preempt."""
    keep = PreemptorClasses.remember

    def remember(self: PreemptorClasses, *args: Any, **kwargs: Any) -> None:
        answers[0] = max(answers[0], self.short_answers)
        keep(self, *args, **kwargs)

    early = ShortSearches.short_verdict

    def short_verdict(self: ShortSearches, *args: Any) -> Verdict | None:
        found = early(self, *args)
        if found is not None:
            answers[1] += 1
        return found

    with patch.object(PreemptorClasses, "remember", remember), \
            patch.object(ShortSearches, "short_verdict", short_verdict):
        yield


@contextmanager
def full_searches() -> Iterator[None]:
    with patch.object(Preemption, "keeps_short", False):
        yield


@settings(max_examples=40, deadline=None)
@given(world=backlogs(), data=st.data())
def test_short_answers_decide_as_full_searches(world: World, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(["las", "las-elastic"]), label="profile")
    snapshot = world.snapshot()
    short = Runner(SchedulerModel.from_snapshot(snapshot), PROFILES[name], True, None)
    full = Runner(SchedulerModel.from_snapshot(snapshot), PROFILES[name], True, None)
    later = [j for j in world.jobs if not j.tasks]
    answers = [0, 0]
    for step in range(data.draw(st.integers(2, 7), label="cycles")):
        close = data.draw(st.booleans(), label="reasons")
        with counting(answers):
            got = short.cycle(close)
        with full_searches():
            want = full.cycle(close)
        assert_same_cycle(got, want, close, step)
        assert short.lendings == full.lendings, f"cycle {step}"
        change_both(data, short.model, full.model, later, step)
    event("answered short" if answers[0] else "none answered short")
    event("a class answered before asked" if answers[1] else "none answered before asked")


@settings(max_examples=20, deadline=None)
@given(trace=traces(), nodes=st.integers(1, 4))
def test_replays_decide_as_full_searches(trace: Any, nodes: int) -> None:
    config = SimConfig(cycle_on_events=True, check_invariants=True)
    answers = [0, 0]
    with counting(answers):
        fast = simulate(trace, TraceCluster(nodes), LAS, config)
    event("answered short" if answers[0] else "none answered short")
    with full_searches():
        slow = simulate(trace, TraceCluster(nodes), LAS, config)
    assert fast.jobs == slow.jobs
