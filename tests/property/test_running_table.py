"""The preempt action's running table (issue 18) is what a walk of every running job gives.

Random traces of a few shapes are replayed by the simulator under `las` and `las-elastic`
(the simulator keeps its actions, and so the table, between cycles), with cycles on every
event and on las's crossings, so jobs start, stop, are evicted, shrink and cross thresholds
between the table's readings.

1. Kept == recomputed, every time the action lists its running jobs: per virtual cluster
   the table's listing is `running_order.worst_first` over all jobs, ranked afresh; every
   filed rank is the job's exact attained-service class now (its earlier runs plus
   `(now - started) x GPUs` per task, against the thresholds); and `version` moved since
   the last reading if what the preemptor classes' world reads of the running jobs moved.
2. Runs decide the same with and without the table: every job's starts, ends and
   evictions are equal.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Node, Resources, TaskState, VirtualCluster
from shoal.scheduler import Profile
from shoal.scheduler.actions import preempt
from shoal.scheduler.actions.preempt import Preemption
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.plugins.las import LeastAttainedService
from shoal.scheduler.running_order import worst_first
from shoal.scheduler.running_table import RunningTable
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceJob

RULES = settings(max_examples=40, deadline=None)

GPUS = 4
PER_GPU = Resources.of(cpu=1_000, memory=1_000, gpu=1)

#: Low thresholds, so that jobs cross them within a short trace.
LAS_YAML = """
name: {name}
actions: "enqueue, allocate, preempt{extra}"
configurations:
  - name: allocate
    arguments: {{ordering: global}}
tiers:
  - plugins: [{{name: las, arguments: {{thresholds: [600, 4000]}}}}, {{name: gang}}]
  - plugins: [{{name: predicates}}, {{name: capacity}}, {{name: placement}}]
"""
PROFILES = {
    "las": Profile.from_yaml(LAS_YAML.format(name="las-low", extra="")),
    "las-elastic": Profile.from_yaml(LAS_YAML.format(name="las-elastic-low",
                                                     extra=", elastic")),
}


class TraceCluster:
    def __init__(self, count: int) -> None:
        self.nodes = tuple(Node(f"n{i}", PER_GPU.scale(GPUS)) for i in range(count))
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
            gang=draw(st.booleans()) or tasks == 1))
    return Trace.of(jobs, "drawn")


def exact_rank(las: LeastAttainedService, job: JobInfo, now: float) -> tuple[Any, ...]:
    """The job's attained-service class now, from scratch."""
    attained = job.job.attained_gpu_seconds + job.run_service(now, job.running)
    return (bisect.bisect_right(las.thresholds, attained),)


def seen(job: JobInfo, rank: tuple[Any, ...], now: float) -> tuple[Any, ...]:
    """What the preemptor classes' world reads of a running job."""
    protect = job.job.protect_for
    return (job.job.name, job.account, rank, len(job.running),
            sum(t.state is TaskState.RELEASING for t in job.running),
            protect > 0 and sum(t.started is not None and now - t.started < protect
                                for t in job.running))


@RULES
@given(trace=traces(), nodes=st.integers(1, 3), name=st.sampled_from(sorted(PROFILES)))
def test_the_kept_table_is_the_walk_every_time(trace: Trace, nodes: int, name: str) -> None:
    listed = Preemption.running
    last: dict[int, tuple[int, frozenset[tuple[Any, ...]]]] = {}
    checks = [0]

    walks: dict[int, tuple[Preemption, dict[str, list[JobInfo]]]] = {}

    def checked(self: Preemption, queue: str) -> list[JobInfo]:
        first = self._running is None
        out = listed(self, queue)
        table = self.table
        if table is None:
            return out
        if not first:
            # Each virtual cluster is listed when first asked for, as the table stood at the
            # first listing: the walk made then.
            kept = walks.get(id(self))
            if kept is not None and kept[0] is self:
                assert [j.name for j in out] == [j.name for j in kept[1].get(queue, [])]
            return out
        session = self.session
        las = next(p for p in session.hooks.job_orders
                   if isinstance(p, LeastAttainedService))
        now = session.now
        ranks = {job: exact_rank(las, job, now) for job in session.jobs.values()
                 if job.running}
        assert {j.name: r for j, r in table.ranks()} == {j.name: r for j, r in ranks.items()}
        walked = worst_first(session.jobs.values(), self.fresh, now, ranks.__getitem__,
                             session.job_order_key, False)
        walks[id(self)] = (self, walked)
        assert [j.name for j in out] == [j.name for j in walked.get(queue, [])]
        world = frozenset(seen(job, rank, now) for job, rank in ranks.items())
        before = last.get(id(table))
        if before is not None and before[1] != world:
            assert table.version != before[0]
        last[id(table)] = (table.version, world)
        checks[0] += 1
        return out

    indexed = Preemption.victim_index

    def listing_first(self: Preemption, preemptor: JobInfo, policy: Any) -> Any:
        # The kept victim index no longer reads the listing: take it, to check it, where
        # the index is asked (it changes no decision: the same table is listed either way).
        self.running(preemptor.queue)
        return indexed(self, preemptor, policy)

    config = SimConfig(cycle_on_events=True, check_invariants=True)
    with patch.object(Preemption, "running", checked), \
            patch.object(Preemption, "victim_index", listing_first):
        simulate(trace, TraceCluster(nodes), PROFILES[name], config)


@contextmanager
def untabled() -> Iterator[None]:
    """The action as it was: its running jobs walked every time."""
    with patch.object(preempt, "RunningTable", lambda: None):
        yield


@RULES
@given(trace=traces(), nodes=st.integers(1, 3), name=st.sampled_from(sorted(PROFILES)))
def test_runs_decide_as_without_the_table(trace: Trace, nodes: int, name: str) -> None:
    config = SimConfig(cycle_on_events=True, check_invariants=True)
    fast = simulate(trace, TraceCluster(nodes), PROFILES[name], config)
    with untabled():
        slow = simulate(trace, TraceCluster(nodes), PROFILES[name], config)
    assert fast.jobs == slow.jobs


def test_a_las_backlog_lists_from_the_table() -> None:
    """The table is in use under las: jobs are filed, and most readings re-file none."""
    jobs = [TraceJob(f"j{n}", 10.0 * n, 5_000.0, 1, PER_GPU.scale(1 + n % 2),
                     queue="a" if n % 3 else "b") for n in range(40)]
    tables: list[Any] = []
    refresh = Preemption._refresh

    def spy(self: Preemption, table: RunningTable) -> None:
        if not tables:
            tables.append(table)
        refresh(self, table)

    with patch.object(Preemption, "_refresh", spy):
        simulate(Trace.of(jobs, "backlog"), TraceCluster(2), PROFILES["las"],
                 SimConfig(cycle_on_events=True))
    assert tables, "the las profile's preempt action never read a kept table"
    assert tables[0].refiled > 0
