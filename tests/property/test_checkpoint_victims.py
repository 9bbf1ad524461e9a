"""Issue 17's victim rule as a property: among running gangs of equal rank, a preemptor takes
the one whose eviction loses the least work since its last checkpoint
(`shoal.scheduler.work_lost`), whatever their start times, sizes and intervals.

Each example fills an 8-GPU node with two experiment gangs of 4 GPUs each — random start
times before `now`, random checkpoint intervals (or none) — and submits a production gang of
4 GPUs. Exactly one victim is needed, and either would do: the one evicted must lose no more
than the one spared (lost work computed here from its definition, not from the module)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Job, Node, Resources, SchedulerName, Task, TaskGroup, TaskState
from shoal.core import Snapshot
from shoal.scheduler import Profile, run_cycle

NOW = 10_000.0
GPUS = 4


def gang(name: str, priority: str, started: float | None = None, every: float | None = None,
         gpus: tuple[int, ...] = ()) -> Job:
    group = TaskGroup("w", 1, Resources.of(cpu=4000, memory=1024, gpu=GPUS))
    tasks = () if started is None else (
        Task(name, "w", 0, TaskState.RUNNING, "n0", gpus, started=started),)
    return Job(name, (group,), scheduler_name=SchedulerName.SHOAL, priority_class=priority,
               checkpoint_interval=every, tasks=tasks)


def lost(started: float, every: float | None) -> float:
    ran = NOW - started
    return GPUS * (ran if every is None else ran - every * int(ran // every))


starts = st.floats(min_value=0.0, max_value=NOW - 1, allow_nan=False)
intervals = st.none() | st.floats(min_value=1.0, max_value=5000.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(a_start=starts, a_every=intervals, b_start=starts, b_every=intervals)
def test_the_victim_loses_no_more_work_than_the_one_spared(
        a_start: float, a_every: float | None, b_start: float, b_every: float | None) -> None:
    jobs = (gang("a", "experiment", a_start, a_every, (0, 1, 2, 3)),
            gang("b", "experiment", b_start, b_every, (4, 5, 6, 7)),
            gang("urgent", "production"))
    node = Node("n0", Resources.of(cpu=64_000, memory=65_536, gpu=8))
    decisions = run_cycle(Snapshot((node,), jobs, now=NOW), Profile.load("elastic"))
    evicted = {e.task.job for e in decisions.evictions}
    assert len(evicted) == 1, decisions.evictions
    assert [b.task.job for b in decisions.binds] == ["urgent"]
    costs = {"a": lost(a_start, a_every), "b": lost(b_start, b_every)}
    (victim,) = evicted
    spared = "b" if victim == "a" else "a"
    assert costs[victim] <= costs[spared] + 1e-6 * max(1.0, costs[spared]), costs
