"""A judged verdict outlives capacity coming back while its room, counted again on the
nodes as they are with what its victims held when it was kept, still falls short (issue 18,
`shoal.scheduler.actions.judged_searches`): it decides what searching in full decides.

1. Crowded worlds of two virtual clusters (small jobs filling nodes of 8 GPUs, wide jobs
   waiting), driven in lockstep with judged verdicts and without: between cycles running
   jobs end, lose a task or arrive, on any node and in either virtual cluster, so capacity
   comes back ahead of and behind the waiting jobs' ranks; every cycle must decide the same
   and leave the same lending.
2. Unit cases: a release behind the rank, which leaves the room as short, is answered by
   the recount (and not without it); a release ahead of the rank that makes room is not.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import Job, Node, SchedulerName, TaskGroup
from shoal.core import Snapshot
from shoal.scheduler import Profile
from shoal.scheduler.actions.judged_searches import JudgedSearches
from shoal.scheduler.actions.preempt import Preempt
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session

from .test_pfor_judged_verdicts import GPU, _running, crowded, cycle_both
from .test_preemptor_walk import PROFILES, Runner


@contextmanager
def counting_recounts(found: list[int]) -> Iterator[None]:
    """Count the searches answered after capacity came back (`KeptJudgements.recounted`
    moved)."""
    answer = JudgedSearches.judged_answer

    def counted(self: JudgedSearches, *args: Any) -> bool | None:
        kept = self.judgements
        before = 0 if kept is None else kept.recounted
        result = answer(self, *args)
        if kept is not None and kept.recounted != before:
            found.append(1)
        return result

    with patch.object(JudgedSearches, "judged_answer", counted):
        yield


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_recounted_verdicts_decide_as_full_searches(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(("las", "las-elastic")), label="profile")
    by_class = data.draw(st.booleans(), label="by_class")
    snapshot = data.draw(crowded(), label="world")
    kept = Runner(SchedulerModel.from_snapshot(snapshot), PROFILES[name], by_class, None)
    full = Runner(SchedulerModel.from_snapshot(snapshot), PROFILES[name], by_class, None)
    answers: list[int] = []
    recounts: list[int] = []
    for step in range(data.draw(st.integers(2, 6), label="cycles")):
        close = data.draw(st.booleans(), label="reasons")
        with counting_recounts(recounts):
            cycle_both(kept, full, close, step, answers)
        change = data.draw(st.sampled_from(("finish", "finish", "shrink", "arrive", "tick")),
                           label="change")
        running = sorted(n for n, j in kept.model.jobs.items() if j.running)
        chosen = data.draw(st.sampled_from(running), label="job") if running else None
        for each in (kept.model, full.model):
            if change == "finish" and chosen is not None:
                each.remove_job(chosen)
            elif change == "shrink" and chosen is not None:
                each.release_task(each.jobs[chosen].running[0].ref)
            elif change == "arrive":
                each.add_job(Job(f"s{step}", (TaskGroup("w", 1, GPU.scale(2)),),
                                 queue="a" if step % 2 else "b",
                                 scheduler_name=SchedulerName.SHOAL, submitted=10.0 + step))
            each.now += 1.0 if change != "tick" else 600.0
    event(f"{name}: {'recounted verdicts answered' if recounts else 'none recounted'}")


def _two_cycles(keeps: bool, recounts: bool, jobs: tuple[Job, ...], ends: str
                ) -> tuple[list[list[str]], int]:
    """Two `las` cycles on two nodes of 8 GPUs, `ends` removed in between: the jobs each
    evicted, and the searches answered after capacity came back."""
    nodes = (Node("n0", GPU.scale(8)), Node("n1", GPU.scale(8)))
    model = SchedulerModel.from_snapshot(Snapshot(nodes, jobs, now=100_000.0))
    profile = Profile.load("las")
    hooks = Hooks(profile.plugins())
    actions = profile.actions()
    preempt = next(a for a in actions if isinstance(a, Preempt))
    evicted = []
    with patch.object(JudgedSearches, "keeps_judged", keeps), \
            patch.object(JudgedSearches, "recounts_judged", recounts):
        for cycle in range(2):
            if cycle == 1:
                model.remove_job(ends)
            session = Session(model, hooks)
            for action in actions:
                action.execute(session)
            evicted.append(sorted({e.task.job for e in session.decisions.evictions}))
            model.now += 1.0
    return evicted, preempt.judgements.recounted


def _wide_waits(*running: Job) -> tuple[Job, ...]:
    return (*running, Job("w", (TaskGroup("w", 1, GPU.scale(8)),),
                          scheduler_name=SchedulerName.SHOAL, submitted=1.0))


def test_a_release_behind_the_rank_is_answered_by_the_recount() -> None:
    """`w` (one task of 8 GPUs) waits: 4 GPUs held ahead of it on each node, `old` (2 GPUs
    on n1, running long) behind it. With `old` evicted n1 would have 6 free: turned down on
    room. `old` then ends: capacity came back, but where it held what the verdict counted
    as freed — the room counted again is as short, and the search is answered."""
    jobs = _wide_waits(_running("new0", "n0", (0, 1, 2, 3), 99_990.0),
                       _running("new1", "n1", (0, 1, 2, 3), 99_990.0),
                       _running("old", "n1", (4, 5), 0.0))
    want, _ = _two_cycles(False, True, jobs, "old")
    assert want == [[], []]
    assert _two_cycles(True, True, jobs, "old") == (want, 1)
    assert _two_cycles(True, False, jobs, "old") == (want, 0)


def test_a_release_that_makes_room_voids_the_judged_verdict() -> None:
    """As above, with `old0` (2 GPUs, behind `w`) on n0 too: turned down on room (6 on each
    node). `new0` (4 GPUs on n0, ahead of `w`) then ends: n0 has 6 free, and with `old0`
    evicted 8, so `w` evicts `old0`. A verdict that held without counting its room again
    would answer it wrongly."""
    jobs = _wide_waits(_running("new0", "n0", (0, 1, 2, 3), 99_990.0),
                       _running("old0", "n0", (4, 5), 0.0),
                       _running("new1", "n1", (0, 1, 2, 3), 99_990.0),
                       _running("old", "n1", (4, 5), 0.0))
    want, _ = _two_cycles(False, True, jobs, "new0")
    assert want == [[], ["old0"]]
    assert _two_cycles(True, True, jobs, "new0") == (want, 0)
