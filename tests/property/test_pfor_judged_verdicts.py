"""The preempt action answers a search its early judgement turned down on room from what
that search read, while no capacity came back and nothing was filed behind its rank
(issue 18, `shoal.scheduler.actions.judged_searches`), and such a search's class verdict
lasts across cycles while the world stands; both decide what searching in full decides.

1. Two models of one random world, each with its actions kept from one cycle to the next,
   are driven in lockstep: one keeps judged verdicts (and lets them last), the other
   (`JudgedSearches.keeps_judged = False`) searches in full. Under `las`, `las-elastic` and
   a priority profile that preempts, with jobs arriving, ending and changing between
   cycles, every cycle must decide the same binds, evictions and resizes, give the same
   reasons, and leave the same lending each time it is settled.
2. Random traces replayed by the simulator under `las` with low thresholds give the same
   job records either way.
3. A unit case where a judged verdict answers a search after the world moved.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from unittest.mock import patch

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import (
    Job,
    Node,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskState,
    VirtualCluster,
)
from shoal.core import Snapshot
from shoal.scheduler import Profile
from shoal.scheduler.actions.judged_searches import JudgedSearches
from shoal.scheduler.actions.preempt import Preempt
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session
from shoal.sim.simulator import SimConfig, simulate

from .lockstep import assert_same_cycle, change_both
from .strategies import World, worlds
from .test_kept_indexes import LAS, TraceCluster, traces
from .test_preemptor_walk import PROFILES, Runner, backlogs, with_never

GPU = Resources.of(cpu=1_000, memory=1_024, gpu=1)


@contextmanager
def searching_in_full() -> Iterator[None]:
    with patch.object(JudgedSearches, "keeps_judged", False):
        yield


@contextmanager
def counting_answers(answers: list[int]) -> Iterator[None]:
    """Count the searches answered by a judged verdict."""
    answer = JudgedSearches.judged_answer

    def counted(self: JudgedSearches, *args: Any) -> bool | None:
        found = answer(self, *args)
        if found is not None:
            answers.append(1)
        return found

    with patch.object(JudgedSearches, "judged_answer", counted):
        yield


@settings(max_examples=40, deadline=None)
@given(world=st.one_of(backlogs(), backlogs(), worlds(profiles=("las",))), data=st.data())
def test_judged_verdicts_decide_as_full_searches(world: World, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(PROFILES)), label="profile")
    world = with_never(world, data.draw(st.lists(st.booleans(), min_size=3, max_size=3),
                                        label="never"))
    limit = data.draw(st.sampled_from([None, None, 1]), label="max_preemptors")
    by_class = data.draw(st.booleans(), label="by_class")
    snapshot = world.snapshot()
    kept = Runner(SchedulerModel.from_snapshot(snapshot), PROFILES[name], by_class, limit)
    full = Runner(SchedulerModel.from_snapshot(snapshot), PROFILES[name], by_class, limit)
    later = [j for j in world.jobs if not j.tasks]
    answers: list[int] = []
    for step in range(data.draw(st.integers(2, 6), label="cycles")):
        close = data.draw(st.booleans(), label="reasons")
        cycle_both(kept, full, close, step, answers)
        change_both(data, kept.model, full.model, later, step)
    event(f"{name}: {'judged verdicts answered' if answers else 'none answered'}")


def cycle_both(kept: Runner, full: Runner, close: bool, step: int, answers: list[int]
               ) -> None:
    """One cycle of each, `kept` with judged verdicts (counted in `answers`), `full`
    searching in full: the same decisions, reasons and lendings."""
    with counting_answers(answers):
        got = kept.cycle(close)
    with searching_in_full():
        want = full.cycle(close)
    assert_same_cycle(got, want, close, step)
    assert kept.lendings == full.lendings, f"cycle {step}"


@st.composite
def crowded(draw: st.DrawFn) -> Snapshot:
    """Nodes of 8 GPUs filled with small jobs of two virtual clusters started at spread
    times (so that `las` ranks some behind the waiting ones), and waiting jobs too wide
    for what one node could free: searches that pass the gains test and are turned down
    by room."""
    nodes = tuple(Node(f"n{i}", GPU.scale(8)) for i in range(draw(st.integers(2, 3))))
    jobs: list[Job] = []
    for node in nodes:
        used, cap = 0, 8 - draw(st.sampled_from((0, 1, 2)))  # room for arrivals
        while used < cap and draw(st.integers(0, 5)) > 0:
            size = min(draw(st.sampled_from((1, 2, 4))), cap - used)
            name = f"r{len(jobs)}"
            job = Job(name, (TaskGroup("w", 1, GPU.scale(size)),),
                      queue=draw(st.sampled_from(("a", "b"))),
                      scheduler_name=SchedulerName.SHOAL, submitted=0.0)
            started = draw(st.sampled_from((0.0, 50_000.0, 99_000.0, 99_990.0)))
            jobs.append(replace(job, tasks=(Task(name, "w", 0, TaskState.RUNNING, node.name,
                                                 tuple(range(used, used + size)), started),)))
            used += size
    for i in range(draw(st.integers(1, 5))):
        wide = draw(st.sampled_from((4, 8, 8)))
        jobs.append(Job(f"w{i}", (TaskGroup("w", draw(st.integers(1, 2)), GPU.scale(wide)),),
                        queue=draw(st.sampled_from(("a", "b"))),
                        scheduler_name=SchedulerName.SHOAL, submitted=1.0 + i))
    return Snapshot(nodes, tuple(jobs), (VirtualCluster("a"), VirtualCluster("b")),
                    now=100_000.0)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_crowded_cycles_decide_as_full_searches(data: st.DataObject) -> None:
    """Between cycles a small job arrives (placed without capacity coming back), a job
    ends, or the clock moves; every cycle decides the same with judged verdicts and
    without."""
    name = data.draw(st.sampled_from(("las", "las-elastic")), label="profile")
    by_class = data.draw(st.booleans(), label="by_class")
    snapshot = data.draw(crowded(), label="world")
    kept = Runner(SchedulerModel.from_snapshot(snapshot), PROFILES[name], by_class, None)
    full = Runner(SchedulerModel.from_snapshot(snapshot), PROFILES[name], by_class, None)
    answers: list[int] = []
    for step in range(data.draw(st.integers(2, 6), label="cycles")):
        close = data.draw(st.booleans(), label="reasons")
        cycle_both(kept, full, close, step, answers)
        change = data.draw(st.sampled_from(("arrive", "arrive", "finish", "tick", "none")),
                           label="change")
        running = sorted(n for n, j in kept.model.jobs.items() if j.running)
        for each in (kept.model, full.model):
            if change == "arrive":
                each.add_job(Job(f"s{step}", (TaskGroup("w", 1, GPU),),
                                 queue="a" if step % 2 else "b",
                                 scheduler_name=SchedulerName.SHOAL, submitted=10.0 + step))
            elif change == "finish" and running:
                each.remove_job(running[step % len(running)])
            each.now += 1.0 if change != "tick" else 600.0
    event(f"{name}: {'judged verdicts answered' if answers else 'none answered'}")


@settings(max_examples=10, deadline=None)
@given(trace=traces(), nodes=st.integers(1, 4))
def test_replays_decide_as_full_searches(trace: Any, nodes: int) -> None:
    config = SimConfig(cycle_on_events=True, check_invariants=True)
    answers: list[int] = []
    with counting_answers(answers):
        fast = simulate(trace, TraceCluster(nodes), LAS, config)
    event("judged verdicts answered" if answers else "none answered")
    with searching_in_full():
        slow = simulate(trace, TraceCluster(nodes), LAS, config)
    assert fast.jobs == slow.jobs


def _running(name: str, node: str, gpus: tuple[int, ...], started: float) -> Job:
    return replace(Job(name, (TaskGroup("w", 1, GPU.scale(len(gpus))),),
                       scheduler_name=SchedulerName.SHOAL, submitted=0.0),
                   tasks=(Task(name, "w", 0, TaskState.RUNNING, node, gpus, started),))


def _evictions(keeps: bool, nodes: tuple[Node, ...], jobs: tuple[Job, ...], tick: float
               ) -> list[list[str]]:
    """Two `las` cycles, `tick` seconds apart: the jobs each evicted."""
    model = SchedulerModel.from_snapshot(Snapshot(nodes, jobs, now=100_000.0))
    profile = Profile.load("las")
    hooks = Hooks(profile.plugins())
    actions = profile.actions()
    evicted = []
    with patch.object(JudgedSearches, "keeps_judged", keeps):
        for _ in range(2):
            session = Session(model, hooks)
            for action in actions:
                action.execute(session)
            decisions = session.decide()
            evicted.append(sorted({e.task.job for e in decisions.evictions}))
            model.now += tick
    return evicted


def test_a_job_placed_behind_in_its_cycle_voids_the_judged_verdict() -> None:
    """`w` (two tasks of 4 GPUs) waits; `back` (1 GPU, attained service behind `w`'s) is
    placed on n1 by the allocate action, leaving 3 GPUs free there. `w`'s search in that
    cycle is turned down by room (`old0` frees 4 on n0; `old2` on n2 frees 1; `back`,
    placed in the cycle, is not offered). In the next cycle `back` is offered, nothing else
    moved: with it evicted, n1 holds a task of `w`. A judged verdict kept from the first
    cycle would answer it wrongly. (The table files `back` again once its bind is applied,
    which `grown_behind` sees too; `keep_judged` does not count on that.)"""
    nodes = tuple(Node(f"n{i}", GPU.scale(8)) for i in range(3))
    jobs = (_running("old0", "n0", (0, 1, 2, 3), 0.0),
            _running("new0", "n0", (4, 5, 6, 7), 99_990.0),
            _running("new1", "n1", (0, 1, 2, 3), 99_990.0),
            _running("old2", "n2", (0,), 0.0),
            _running("new2", "n2", (1, 2, 3, 4, 5, 6, 7), 99_990.0),
            Job("w", (TaskGroup("w", 2, GPU.scale(4)),), scheduler_name=SchedulerName.SHOAL,
                submitted=1.0),
            Job("back", (TaskGroup("w", 1, GPU),), scheduler_name=SchedulerName.SHOAL,
                submitted=2.0, attained_gpu_seconds=50_000.0))
    want = _evictions(False, nodes, jobs, 1.0)
    assert want == [[], ["back", "old0"]]
    assert _evictions(True, nodes, jobs, 1.0) == want


def test_a_job_crossing_behind_voids_the_judged_verdict() -> None:
    """`w` (one task of 8 GPUs) waits; `old0` on n0 and `old1` on n1 rank behind it, so the
    gains test passes, but no node would have 8 free. An hour later, with no capacity
    given back, `mid0` (4 GPUs on n0) has crossed las's first threshold to behind `w`:
    with it evicted too, n0 holds `w`. A judged verdict kept from the first cycle would
    answer it wrongly."""
    nodes = tuple(Node(f"n{i}", GPU.scale(8)) for i in range(2))
    jobs = (_running("old0", "n0", (0, 1, 2, 3), 0.0),
            _running("mid0", "n0", (4, 5, 6, 7), 99_500.0),
            _running("old1", "n1", (0, 1, 2, 3), 0.0),
            _running("new1", "n1", (4, 5, 6, 7), 99_999.0),
            Job("w", (TaskGroup("w", 1, GPU.scale(8)),), scheduler_name=SchedulerName.SHOAL,
                submitted=1.0))
    want = _evictions(False, nodes, jobs, 1_000.0)
    assert want[0] == [] and want[1]
    assert _evictions(True, nodes, jobs, 1_000.0) == want


def _answered(keeps: bool) -> tuple[list[int], int]:
    """`w` (one task of 8 GPUs) waits: 4 GPUs free on n0, 2 on n1, and `old` (2 GPUs on
    n1, running long) ranks behind it, so the gains test passes, but no node would have 8
    free with `old` evicted. In the second cycle `tiny` (1 GPU) is placed: the world moved,
    no capacity came back, and nothing was filed behind `w`'s rank."""
    nodes = (Node("n0", GPU.scale(8)), Node("n1", GPU.scale(8)))
    jobs = (_running("new0", "n0", (0, 1, 2, 3), 99_990.0),
            _running("new1", "n1", (0, 1, 2, 3), 99_990.0),
            _running("old", "n1", (4, 5), 0.0),
            Job("w", (TaskGroup("w", 1, GPU.scale(8)),), scheduler_name=SchedulerName.SHOAL,
                submitted=1.0))
    model = SchedulerModel.from_snapshot(Snapshot(nodes, jobs, now=100_000.0))
    profile = Profile.load("las")
    hooks = Hooks(profile.plugins())
    actions = profile.actions()
    preempt = next(a for a in actions if isinstance(a, Preempt))
    answers: list[int] = []
    with patch.object(JudgedSearches, "keeps_judged", keeps), counting_answers(answers):
        for cycle in range(2):
            if cycle == 1:
                model.add_job(Job("tiny", (TaskGroup("w", 1, GPU),),
                                  scheduler_name=SchedulerName.SHOAL, submitted=2.0))
            session = Session(model, hooks)
            for action in actions:
                action.execute(session)
            assert not session.decisions.evictions
            answers.append(0)
            assert [b.task.job for b in session.decisions.binds] == ([] if cycle == 0
                                                                     else ["tiny"])
    return answers, preempt.judgements.answers


def test_a_judged_verdict_answers_after_the_world_moved() -> None:
    """The properties above would pass with nothing answered: here the second cycle's
    search for `w` is answered by the first cycle's judged verdict, and searched in full
    without them."""
    answers, counted = _answered(True)
    assert answers == [0, 1, 0] and counted == 1
    answers, counted = _answered(False)
    assert answers == [0, 0] and counted == 0
