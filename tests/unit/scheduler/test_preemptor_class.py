"""Preemptors by class and the victim index (issue 18): what makes two waiting jobs one class,
how long a verdict holds, and the index's bisection and running sums."""

from __future__ import annotations

from dataclasses import replace

from shoal.api import Job, Node, Resources, SchedulerName, Task, TaskGroup, TaskState
from shoal.core import Snapshot
from shoal.scheduler import Profile
from shoal.scheduler.actions.preempt import Preempt, Preemption
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.preemptor_class import PreemptorClasses, Verdict, preemptor_class
from shoal.scheduler.session import Hooks, Session
from shoal.scheduler.victim_index import QueueVictims
from shoal.scheduler.victims import units_of

LAS = Profile.load("las")
GPU = Resources.of(cpu=1_000, memory=1_000, gpu=1)


def waiting(name: str, gpus: int, at: float, selector: dict[str, str] | None = None) -> Job:
    return Job(name, (TaskGroup("w", 1, GPU.scale(gpus), node_selector=selector or {}),),
               scheduler_name=SchedulerName.SHOAL, submitted=at)


def session_of(jobs: list[Job], now: float = 10_000.0) -> Session:
    nodes = (Node("n0", GPU.scale(4), {"gpu-type": "A"}),)
    return Session(Snapshot(nodes, tuple(jobs), now=now), LAS.plugins())


def test_alike_waiting_jobs_are_one_class_and_what_differs_makes_another() -> None:
    session = session_of([waiting("a", 2, 1.0), waiting("b", 2, 2.0), waiting("c", 4, 3.0),
                          waiting("d", 2, 4.0, {"gpu-type": "A"})])
    cycle = Preemption(session)
    key = {name: preemptor_class(session, session.jobs[name], cycle.rank)
           for name in "abcd"}
    assert key["a"] == key["b"]  # submission time and name are no part of it
    assert key["a"] != key["c"]  # the request is
    assert key["a"] != key["d"]  # and the selector


def test_a_job_holding_tasks_has_no_class() -> None:
    job = waiting("a", 2, 1.0)
    holding = replace(Job(job.name, (TaskGroup("w", 2, GPU.scale(2)),),
                          scheduler_name=SchedulerName.SHOAL, submitted=1.0),
                      tasks=(Task("a", "w", 0, TaskState.RUNNING, "n0", (0, 1), 0.0),))
    session = session_of([holding])
    assert session.jobs["a"].pending  # a gang still waiting for its second task
    assert preemptor_class(session, session.jobs["a"], Preemption(session).rank) is None


def test_a_verdict_holds_within_an_execution_until_a_commit() -> None:
    classes = PreemptorClasses()
    classes.begin()
    classes.enter("world")
    classes.remember("k", (0, 0, 0), Verdict(("note",), True), lasting=False)
    assert classes.verdict("k", (0, 0, 0), lasting=True) == Verdict(("note",), True)
    assert classes.verdict("k", (1, 0, 0), lasting=True) is None  # something was committed
    classes.begin()  # the next execution
    assert classes.verdict("k", (0, 0, 0), lasting=True) is None


def test_a_lasting_verdict_holds_while_the_world_stands() -> None:
    classes = PreemptorClasses()
    classes.begin()
    classes.enter("world")
    classes.remember("k", (0, 0, 0), Verdict((), True), lasting=True)
    classes.begin()
    classes.enter("world")
    assert classes.verdict("k", (3, 0, 0), lasting=True) == Verdict((), True)
    assert classes.verdict("k", (3, 0, 0), lasting=False) is None  # after its own commit
    classes.enter("another world")
    assert classes.verdict("k", (3, 0, 0), lasting=True) is None


def test_the_index_bisects_by_rank_and_sums_what_a_prefix_frees() -> None:
    nodes = (Node("n0", GPU.scale(8)),)
    jobs = [Job(f"r{i}", (TaskGroup("w", 1, GPU.scale(i + 1)),),
                scheduler_name=SchedulerName.SHOAL, submitted=0.0,
                tasks=(Task(f"r{i}", "w", 0, TaskState.RUNNING, "n0",
                            tuple(range(i * (i + 1) // 2, i * (i + 1) // 2 + i + 1)), 0.0),))
            for i in range(3)]
    session = Session(Snapshot(nodes, tuple(jobs), now=1.0), LAS.plugins())
    units = [u for i in (2, 1, 0) for u in units_of(session.jobs[f"r{i}"], 1.0)]
    ranks = {"r2": (3,), "r1": (2,), "r0": (1,)}
    index = QueueVictims(units, lambda u: ranks[u.job.name], lambda us: us[::-1])
    assert [index.behind(r) for r in ((4,), (3,), (2,), (1,), (0,))] == [0, 0, 1, 2, 3]
    assert [index.gains("all", k, lambda u: u.gpus) for k in range(4)] == [0, 3, 5, 6]
    assert [u.job.name for u in index.offered(2)] == ["r0", "r1"]  # in the order given


def test_verdicts_last_across_cycles_in_a_kept_model() -> None:
    # One node held by a long-running job of a worse las class; two alike waiting jobs of
    # the best class need more than it frees: the second is answered by the first's
    # verdict, and in the next cycle, the world unchanged, the first is too.
    nodes = (Node("n0", GPU.scale(8)),)
    big = replace(Job("big", (TaskGroup("w", 1, GPU.scale(2)),),
                      scheduler_name=SchedulerName.SHOAL, submitted=0.0),
                  tasks=(Task("big", "w", 0, TaskState.RUNNING, "n0", (0, 1), 0.0),))
    other = replace(Job("other", (TaskGroup("w", 1, GPU.scale(2)),),
                        scheduler_name=SchedulerName.SHOAL, submitted=0.0),
                    tasks=(Task("other", "w", 0, TaskState.RUNNING, "n0", (2, 3), 99_000.0),))
    model = SchedulerModel.from_snapshot(Snapshot(
        nodes, (big, other, waiting("a", 8, 1.0), waiting("b", 8, 2.0)), now=100_000.0))
    hooks = Hooks(LAS.plugins())
    actions = LAS.actions()
    preempt = next(a for a in actions if isinstance(a, Preempt))
    for _ in range(2):
        session = Session(model, hooks)
        for action in actions:
            action.execute(session)
        assert not session.decisions.evictions and not session.decisions.binds
    assert preempt.classes.skipped == 3  # b in the first cycle; a and b in the second
