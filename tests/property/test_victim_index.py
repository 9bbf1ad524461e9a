"""The preempt action's victim index and preemptor classes (issue 18) change nothing.

Worlds are backlogs on purpose: a few nodes full of running jobs of low priority classes
(gangs, jobs placed task by task, elastic jobs grown to their maximum, some still
protected, some with a node selector), started at different times so that `las` puts them
in different classes, and waiting jobs of a few shapes, many alike, in two virtual
clusters, one of which lends its guarantee.

1. The index offers what the plain scan offers. Over a session opened under a preempting
   profile, for every job the action would search for, in job order and after each
   eviction the action commits: `Preemption.candidates` equals the plain scan below (every
   running job of the preemptor's virtual cluster that ranks behind it and may give
   something up, its units in the victims' score), unit by unit; and the running sum of
   what they free on the preemptor's node pools equals the sum over the scan.
2. Whole cycles decide the same with and without the index and the classes: decisions
   (binds, evictions, resizes, pending reasons with their notes) are equal to those of the
   same cycle with both turned off, under `las`, a priority profile that preempts, one
   that preempts and reclaims lent guarantees, and `fairshare` (proportional reclaim).
3. So do runs of many cycles, where verdicts last from one cycle to the next: random
   traces of a few shapes replayed by the simulator (which keeps its actions, and so their
   verdicts, between cycles) give every job the same starts, ends and evictions with and
   without them, under the same profiles.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import (
    Elasticity,
    Job,
    JobState,
    Node,
    PriorityClass,
    Resources,
    ScaleStep,
    SchedulerName,
    Task,
    TaskGroup,
    TaskState,
    VirtualCluster,
)
from shoal.api.decisions import Decisions
from shoal.core import Snapshot
from shoal.scheduler import Profile, run_cycle
from shoal.scheduler.actions.preempt import Preemption
from shoal.scheduler.held_back import unit_key
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.queue_preemption import policy_of, within_queue_victim
from shoal.scheduler.session import Session
from shoal.scheduler.victims import VictimUnit, ordered, units_of
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob

from .strategies import profile

RULES = settings(max_examples=60, deadline=None)

GPUS = 4
PER_GPU = Resources.of(cpu=1_000, memory=1_000, gpu=1)
CLASSES = (PriorityClass("low", 10), PriorityClass("mid", 100), PriorityClass("high", 1000))
NOW = 50_000.0

PREEMPTING = Profile.from_yaml("""
name: priority-preempt
actions: "enqueue, allocate, backfill, preempt"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement}]
""")

#: The waiting jobs' shapes: (GPUs per task, tasks, selector).
SHAPES = ((1, 1, False), (2, 1, False), (4, 1, False), (2, 2, False), (1, 1, True),
          (4, 2, False))


@st.composite
def backlogs(draw: st.DrawFn) -> Snapshot:
    node_count = draw(st.integers(1, 6))
    nodes = tuple(Node(f"n{i}", PER_GPU.scale(GPUS), {"gpu-type": "A" if i % 2 else "B"})
                  for i in range(node_count))
    free = {n.name: list(range(GPUS)) for n in nodes}
    queues = ("a", "b")
    vcs = (VirtualCluster("a", min=PER_GPU.scale(GPUS * node_count // 2)),
           VirtualCluster("b"))
    jobs: list[Job] = []
    for r in range(draw(st.integers(0, 14))):
        name = f"run{r}"
        per_task = draw(st.sampled_from((1, 2)))
        tasks = draw(st.integers(1, 3))
        kind = draw(st.sampled_from(("gang", "pods", "elastic")))
        started = NOW - draw(st.sampled_from((10.0, 900.0, 2_000.0, 20_000.0, 40_000.0)))
        placed: list[Task] = []
        for i in range(tasks):
            node = next((n for n, g in free.items() if len(g) >= per_task), None)
            if node is None:
                break
            gpus = tuple(free[node][:per_task])
            del free[node][:per_task]
            placed.append(Task(name, "w", i, TaskState.RUNNING, node, gpus, started))
        if not placed:
            break
        elastic = Elasticity("w", 1, len(placed), ScaleStep.ANY) \
            if kind == "elastic" and len(placed) > 1 else None
        jobs.append(Job(
            name, (TaskGroup("w", len(placed), PER_GPU.scale(per_task)),),
            queue=draw(st.sampled_from(queues)),
            scheduler_name=SchedulerName.DEFAULT if kind == "pods" else SchedulerName.SHOAL,
            priority_class=draw(st.sampled_from(("low", "mid"))), submitted=started - 1,
            state=JobState.RUNNING, tasks=tuple(placed), elastic=elastic,
            protect_for=draw(st.sampled_from((0.0, 0.0, 600.0)))))
    for w in range(draw(st.integers(1, 16))):
        per_task, tasks, selector = draw(st.sampled_from(SHAPES))
        jobs.append(Job(
            f"wait{w}", (TaskGroup("w", tasks, PER_GPU.scale(per_task),
                                   node_selector={"gpu-type": "A"} if selector else {}),),
            queue=draw(st.sampled_from(queues)), scheduler_name=SchedulerName.SHOAL,
            priority_class=draw(st.sampled_from(("mid", "high"))), submitted=NOW - 100 + w))
    return Snapshot(nodes, tuple(jobs), vcs, CLASSES, now=NOW)


def plain_candidates(cycle: Preemption, preemptor: JobInfo) -> list[VictimUnit]:
    """The oracle: every running job of the preemptor's virtual cluster, looked at one by
    one, as the action did before the index."""
    session = cycle.session
    policy = policy_of(session, preemptor)
    rank = cycle.rank(preemptor)
    units: list[VictimUnit] = []
    for job in session.jobs.values():
        if job.queue != preemptor.queue or not job.running:
            continue
        theirs = cycle.rank(job)
        if within_queue_victim(policy, preemptor, job, theirs > rank, theirs == rank) \
                and cycle.takeable(job, preemptor):
            units.extend(units_of(job, session.now))
    return ordered(units, cycle.rank, session.job_order_key, session.now)


def frees(session: Session, preemptor: JobInfo, unit: VictimUnit) -> int:
    """GPUs the unit frees on the preemptor's node pools."""
    nodes = {s.ordinal for g in preemptor.groups_with_pending()
             for s in session.pool_for(g).nodes}
    return sum(unit.job.job.group(t.ref.group).resources.gpu for t in unit.tasks
               if session.cluster.by_name[t.node].ordinal in nodes)


@RULES
@given(snapshot=backlogs(), name=st.sampled_from(("las", "priority-preempt")))
def test_the_index_offers_what_the_plain_scan_offers(snapshot: Snapshot, name: str) -> None:
    chosen = profile(name) if name == "las" else PREEMPTING
    session = Session(snapshot, chosen.plugins())
    for action in chosen.actions():
        if action.name == "preempt":
            break
        action.execute(session)
    cycle = Preemption(session)
    for job in sorted(session.candidates, key=session.job_order_key):
        if not cycle.wants(job):
            continue
        offered = cycle.candidates(job)
        expected = plain_candidates(cycle, job)
        assert [unit_key(u) for u in offered] == [unit_key(u) for u in expected], job.name
        index = cycle.victim_index(job, policy_of(session, job))
        assert index is not None
        count = index.behind(cycle.rank(job))
        pools, _ = cycle._pool_nodes(job)
        assert index.gains(pools, count, lambda u, j=job: frees(session, j, u)) == \
            sum(frees(session, job, u) for u in expected)
        cycle.preempt_for(job)  # what it commits, the next comparison sees


@contextmanager
def plain() -> Iterator[None]:
    """The actions as they were: no class verdicts, no index."""
    with patch.object(Preemption, "class_key", lambda self, job: None), \
            patch.object(Preemption, "victim_index", lambda self, job, policy: None):
        yield


def decided(decisions: Decisions) -> tuple[object, ...]:
    return (decisions.binds, decisions.evictions, decisions.resizes,
            sorted((p.job, p.reason.kind, p.reason.message) for p in decisions.pending))


@RULES
@given(snapshot=backlogs(),
       name=st.sampled_from(("las", "priority-preempt", "lend-reclaim", "fairshare")))
def test_cycles_decide_as_without_index_and_classes(snapshot: Snapshot, name: str) -> None:
    chosen = PREEMPTING if name == "priority-preempt" else profile(name)
    fast = run_cycle(snapshot, chosen)
    with plain():
        slow = run_cycle(snapshot, chosen)
    assert decided(fast) == decided(slow)


class TraceCluster:
    def __init__(self, count: int) -> None:
        self.nodes = tuple(Node(f"n{i}", PER_GPU.scale(GPUS),
                                {"gpu-type": "A" if i % 2 else "B"}) for i in range(count))
        self.virtual_clusters = (VirtualCluster("a", min=PER_GPU.scale(GPUS * count // 2)),
                                 VirtualCluster("b"))
        self.priority_classes = CLASSES


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    jobs = []
    at = 0.0
    for n in range(draw(st.integers(2, 30))):
        at += draw(st.sampled_from((0.0, 0.0, 30.0, 400.0, 3_000.0)))
        per_task, tasks, selector = draw(st.sampled_from(SHAPES))
        jobs.append(TraceJob(
            f"j{n}", at, draw(st.sampled_from((100.0, 2_000.0, 9_000.0))), tasks,
            PER_GPU.scale(per_task), queue=draw(st.sampled_from(("a", "b"))),
            priority_class=draw(st.sampled_from(("low", "mid", "high"))),
            node_selector={"gpu-type": "A"} if selector else {},
            gang=draw(st.booleans()) or tasks == 1))
    return Trace.of(jobs, "drawn")


@settings(max_examples=40, deadline=None)
@given(trace=traces(), nodes=st.integers(1, 4),
       name=st.sampled_from(("las", "priority-preempt", "lend-reclaim", "fairshare")))
def test_runs_decide_as_without_index_and_classes(trace: Trace, nodes: int, name: str
                                                  ) -> None:
    chosen = PREEMPTING if name == "priority-preempt" else profile(name)
    config = SimConfig(cycle_on_events=True, check_invariants=True)
    fast = simulate(trace, TraceCluster(nodes), chosen, config)
    with plain():
        slow = simulate(trace, TraceCluster(nodes), chosen, config)
    assert fast.jobs == slow.jobs
