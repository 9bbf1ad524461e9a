"""What the preempt action keeps for `las` under backlog (issue 18, fourth round) is what the
plain definitions give.

Random traces of a few shapes are replayed by the simulator under `las` with low thresholds
(so jobs cross them within a short trace), with cycles on every event and on las's
crossings: jobs start, stop, are evicted and change class between cycles, and the simulator
keeps its actions — and so what they keep — from one cycle to the next.

1. A virtual cluster's victim index kept across cycles (`victim_index.KeptIndexes`) is,
   whenever the action asks for it, the index built afresh: the same units (job, tasks,
   kind), each job's in its own order, by rank worst first (within a rank in any order:
   only the score reads it, and sorts them), the same ranks, and for the preemptor asking,
   what the units behind its rank free on its node pools and the order they are offered in.
2. The model's jobs holding tasks (`SchedulerModel.active`) are exactly the jobs whose
   `running` is not empty, after every cycle and every change between cycles, in kept
   models driven through random worlds under 11 profiles.
3. Runs decide the same with and without the kept indexes and without the preemptors
   `answered` by a verdict before asking whether they want to preempt: every job's
   starts, ends and evictions are equal.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Node, Resources, VirtualCluster
from shoal.api.queue_policy import QueuePreemption
from shoal.scheduler import Profile
from shoal.scheduler.actions import preempt
from shoal.scheduler.actions.preempt import Preemption
from shoal.scheduler.held_back import unit_key
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session
from shoal.scheduler.victim_index import QueueVictims
from shoal.scheduler.victims import VictimUnit, ordered, units_of
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob

from .strategies import PROFILE_NAMES, World, worlds

RULES = settings(max_examples=40, deadline=None)

GPUS = 4
PER_GPU = Resources.of(cpu=1_000, memory=1_000, gpu=1)
LAS = Profile.from_yaml("""
name: las-low
actions: "enqueue, allocate, preempt"
configurations:
  - name: allocate
    arguments: {ordering: global}
tiers:
  - plugins: [{name: las, arguments: {thresholds: [600, 4000]}}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}]
""")


class TraceCluster:
    def __init__(self, count: int) -> None:
        self.nodes = tuple(Node(f"n{i}", PER_GPU.scale(GPUS),
                                {"gpu-type": "A" if i % 2 else "B"}) for i in range(count))
        self.virtual_clusters = (VirtualCluster("a"), VirtualCluster("b"))
        self.priority_classes = ()


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    jobs = []
    at = 0.0
    for n in range(draw(st.integers(2, 30))):
        at += draw(st.sampled_from((0.0, 0.0, 30.0, 400.0, 3_000.0)))
        per_task = draw(st.sampled_from((1, 2, 4)))
        tasks = draw(st.sampled_from((1, 1, 2)))
        jobs.append(TraceJob(
            f"j{n}", at, draw(st.sampled_from((100.0, 700.0, 2_000.0, 9_000.0))), tasks,
            PER_GPU.scale(per_task), queue=draw(st.sampled_from(("a", "b"))),
            node_selector={"gpu-type": "A"} if draw(st.booleans()) else {},
            gang=draw(st.booleans()) or tasks == 1))
    return Trace.of(jobs, "drawn")


def built_afresh(cycle: Preemption, queue: str) -> list[tuple[Any, ...]]:
    """The oracle: the virtual cluster's takeable running jobs worst first, their units
    listed from scratch."""
    now = cycle.session.now
    return [unit_key(u) for job in cycle.running(queue) if cycle.takeable(job, None)
            for u in units_of(job, now)]


def afresh(cycle: Preemption, queue: str) -> list[VictimUnit]:
    now = cycle.session.now
    return [u for job in cycle.running(queue) if cycle.takeable(job, None)
            for u in units_of(job, now)]


def by_job(units: list[VictimUnit]) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for unit in units:
        out.setdefault(unit.job.name, []).append(unit_key(unit))
    return out


def frees(cycle: Preemption, preemptor: JobInfo, tasks: tuple[Any, ...]) -> int:
    session = cycle.session
    nodes = {s.ordinal for g in preemptor.groups_with_pending()
             for s in session.pool_for(g).nodes}
    return sum(preemptor_gpus(task, session) for task in tasks
               if session.cluster.by_name[task.node].ordinal in nodes)


def preemptor_gpus(task: Any, session: Session) -> int:
    gpus: int = session.jobs[task.ref.job].job.group(task.ref.group).resources.gpu
    return gpus


@RULES
@given(trace=traces(), nodes=st.integers(1, 4))
def test_a_kept_victim_index_is_the_one_built_afresh(trace: Trace, nodes: int) -> None:
    asked = Preemption.victim_index
    reused = [0]

    def checked(self: Preemption, preemptor: JobInfo, policy: QueuePreemption
                ) -> QueueVictims | None:
        kept = self.kept_indexes
        before = 0 if kept is None else kept.reused
        index = asked(self, preemptor, policy)
        if index is None:
            return index
        if kept is not None and kept.reused > before:
            reused[0] += 1
        want = built_afresh(self, preemptor.queue)
        # The same units, each job's in its own order, by rank worst first (within a rank
        # in no particular order: nothing but the score reads it, which sorts them).
        assert by_job(index.units) == by_job(afresh(self, preemptor.queue))
        assert sorted(unit_key(u) for u in index.units) == sorted(want)
        assert index.ranks == [self.rank(u.job) for u in index.units]
        assert index.ranks == sorted(index.ranks, reverse=True)
        count = index.behind(self.rank(preemptor))
        pools, _ = self._pool_nodes(preemptor)
        expected = sum(frees(self, preemptor, u.tasks) for u in index.units[:count])
        assert index.gains(pools, count, lambda u: frees(self, preemptor, u.tasks)) \
            == expected
        session = self.session
        assert [unit_key(u) for u in index.offered(count)] == [unit_key(u) for u in ordered(
            index.units[:count], self.rank, session.job_order_key, session.now)]
        return index

    config = SimConfig(cycle_on_events=True, check_invariants=True)
    with patch.object(Preemption, "victim_index", checked):
        simulate(trace, TraceCluster(nodes), LAS, config)


def test_a_las_backlog_reuses_kept_indexes() -> None:
    """Kept indexes are in use under las: a backlog in two virtual clusters reuses some."""
    jobs = [TraceJob(f"j{n}", 10.0 * n, 5_000.0 + 300.0 * (n % 7), 1,
                     PER_GPU.scale(1 + n % 2), queue="a" if n % 3 else "b")
            for n in range(60)]
    actions: list[Any] = []
    made = preempt.Preempt.__init__

    def spy(self: preempt.Preempt, arguments: Any) -> None:
        made(self, arguments)
        actions.append(self)

    with patch.object(preempt.Preempt, "__init__", spy):
        simulate(Trace.of(jobs, "backlog"), TraceCluster(2), LAS,
                 SimConfig(cycle_on_events=True))
    assert actions and actions[0].indexes.reused > 0
    assert actions[0].classes.skipped > 0


def holding(model: SchedulerModel) -> dict[str, JobInfo]:
    return {name: info for name, info in model.jobs.items() if info.running}


@settings(max_examples=100, deadline=None)
@given(world=worlds(profiles=sorted({*PROFILE_NAMES, "las", "las-elastic", "elastic",
                                     "fairshare", "lend-reclaim", "evict-first"})),
       data=st.data())
def test_the_active_jobs_are_those_holding_tasks(world: World, data: st.DataObject) -> None:
    snapshot = world.snapshot()
    live = SchedulerModel.from_snapshot(snapshot)
    hooks = Hooks(world.profile.plugins())
    actions = world.profile.actions()  # kept, as a driver keeps them
    later = [j for j in world.jobs if not j.tasks]
    assert live.active == holding(live)
    for step in range(data.draw(st.integers(2, 6), label="cycles")):
        session = Session(live, hooks)
        for action in actions:
            action.execute(session)
        session.decide()
        assert live.active == holding(live), f"cycle {step}"
        change(data, live, later, step)
        assert live.active == holding(live), f"after cycle {step}"


def change(data: st.DataObject, model: SchedulerModel, later: list[Any], step: int
           ) -> None:
    """Between cycles, as `lockstep.change_both` moves a pair: a running job ends, loses a
    task, or a job arrives; then the clock moves on."""
    kind = data.draw(st.sampled_from(["none", "finish", "evict", "arrive"]), label="change")
    running = sorted(holding(model))
    if kind == "finish" and running:
        model.remove_job(data.draw(st.sampled_from(running), label="finished"))
    elif kind == "evict" and running:
        name = data.draw(st.sampled_from(running), label="evicted")
        model.release_task(model.jobs[name].running[0].ref)
    elif kind == "arrive" and later:
        template = data.draw(st.sampled_from(later), label="template")
        model.add_job(replace(template, name=f"{template.name}-again{step}",
                              submitted=template.submitted + 0.5))
    model.now += data.draw(st.sampled_from([1.0, 60.0, 3600.0]), label="elapsed")


@contextmanager
def unkept() -> Iterator[None]:
    """The action as it was: indexes built afresh each cycle, every preemptor asked
    whether it wants to preempt."""
    with patch.object(preempt, "KeptIndexes", lambda: None), \
            patch.object(Preemption, "answered", lambda self, job: False):
        yield


@RULES
@given(trace=traces(), nodes=st.integers(1, 4))
def test_runs_decide_as_without_kept_indexes_and_answers(trace: Trace, nodes: int) -> None:
    config = SimConfig(cycle_on_events=True, check_invariants=True)
    fast = simulate(trace, TraceCluster(nodes), LAS, config)
    with unkept():
        slow = simulate(trace, TraceCluster(nodes), LAS, config)
    assert fast.jobs == slow.jobs
