"""Elastic jobs over random clusters, step rules, priorities and task endings, under the
`elastic` profile (job-level preemption and reclaim in elastic mode, then growth), with a
team guaranteed part of the GPUs and one that borrows: after every cycle, every elastic job
whose guaranteed part is placed runs at a size its step rule allows, within [min, max]; no
node gives out more than it has; a job that loses tasks loses only elastic surplus or
everything (a gang is never cut below its minimum); and evictions for another job happen
only in a cycle where that job was placed (all or nothing). Evicted tasks that take cycles to
stop, as under `shoal up`, are never placed meanwhile and never let a gang start in part."""

from __future__ import annotations

from collections.abc import Mapping, Set

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import (
    Elasticity,
    Job,
    Node,
    Resources,
    ScaleStep,
    SchedulerName,
    TaskGroup,
    TaskRef,
    VirtualCluster,
)
from shoal.api.elastic import step_allows
from shoal.scheduler import Profile, run_cycle
from shoal.scheduler.model import SchedulerModel

ELASTIC = Profile.load("elastic")
PRIORITIES = st.sampled_from(["experiment", "normal", "production"])


@st.composite
def elasticities(draw: st.DrawFn, name: str) -> Elasticity:
    step = draw(st.sampled_from(list(ScaleStep)))
    factor = draw(st.integers(2, 3)) if step is ScaleStep.FACTOR else 1
    allowed = [n for n in range(1, 17) if step_allows(step, factor, n)]
    low, high = sorted(draw(st.lists(st.sampled_from(allowed), min_size=2, max_size=2)))
    return Elasticity("w", low, high, step, factor, draw(st.sampled_from([0.0, 2.0])))


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[Node], list[VirtualCluster], list[Job]]:
    nodes = [Node(f"n{i}", Resources.of(cpu=64_000, memory=256_000,
                                        gpu=draw(st.integers(2, 8))))
             for i in range(draw(st.integers(1, 2)))]
    # Two teams: `owed` is guaranteed part of the GPUs, `lent` nothing (it borrows).
    owed = draw(st.integers(0, sum(n.capacity.gpu for n in nodes)))
    vcs = [VirtualCluster("owed", min=Resources.of(gpu=owed)), VirtualCluster("lent")]
    queues = st.sampled_from(["owed", "lent", "default"])
    jobs = []
    for i in range(draw(st.integers(2, 6))):
        gpu = draw(st.integers(1, 2))
        if draw(st.booleans()):
            elastic = draw(elasticities(f"e{i}"))
            jobs.append(Job(f"e{i}", (TaskGroup("w", elastic.max_replicas,
                                                 Resources.of(cpu=1000, gpu=gpu)),),
                            scheduler_name=draw(st.sampled_from(list(SchedulerName))),
                            submitted=float(i), elastic=elastic, queue=draw(queues),
                            priority_class=draw(PRIORITIES)))
        else:
            jobs.append(Job(f"r{i}", (TaskGroup("w", draw(st.integers(1, 4)),
                                                 Resources.of(cpu=1000, gpu=gpu)),),
                            scheduler_name=SchedulerName.SHOAL, submitted=float(i),
                            queue=draw(queues), priority_class=draw(PRIORITIES)))
    return nodes, vcs, jobs


def check(model: SchedulerModel, nodes: list[Node], stopping: Set[TaskRef] = frozenset(),
          kept: Set[str] = frozenset()) -> None:
    """`stopping`: evicted tasks held back while they stop; their jobs wait for them (a
    job of the default scheduler, placed task by task, may run part of its minimum).
    `kept`: jobs that may run at a size their step rule does not allow (`odd_sizes_kept`)."""
    waiting_for = {ref.job for ref in stopping}
    for info in model.jobs.values():
        elastic = info.job.elastic
        if elastic is not None and info.running and not info.pending \
                and info.name not in waiting_for:
            size = info.elastic_size()
            assert elastic.allows(size) or info.name in kept, \
                f"{info.name} runs {size} tasks under {elastic}"
    for physical in nodes:
        state = model.node(physical.name)
        assert min(state.cpu, state.gpu) >= 0, physical.name


def running_surplus(model: SchedulerModel) -> dict[str, frozenset[int]]:
    """The surplus workers each non-preemptable elastic job runs now, for `odd_sizes_kept`."""
    return {info.name: frozenset(t.ref.index for t in info.running
                                 if info.is_surplus(t.ref.group, t.ref.index))
            for info in model.jobs.values()
            if info.job.elastic is not None and not info.job.evictable}


def odd_sizes_kept(before: Mapping[str, frozenset[int]], model: SchedulerModel) -> set[str]:
    """The jobs a cycle may leave at a size their step rule does not allow: a
    non-preemptable one (`spec.preemptable: false`, issue 16) whose workers ending left it
    there, since nothing may evict its tasks; it runs on at that size until its missing
    workers fit (the elastic action's Repair). The cycle may restore its guaranteed part
    (its minimum comes first), but never place a surplus worker that makes the size odd:
    the job runs no surplus worker it did not run before the cycle (`before`:
    `running_surplus` then)."""
    now = running_surplus(model)
    return {name for name, surplus in now.items() if surplus <= before.get(name, frozenset())}


@settings(max_examples=200, deadline=None)
@given(world=worlds(), data=st.data())
def test_elastic_jobs_run_only_at_allowed_sizes(
        world: tuple[list[Node], list[VirtualCluster], list[Job]], data: st.DataObject) -> None:
    nodes, vcs, jobs = world
    model = SchedulerModel(nodes, vcs)
    cycles = data.draw(st.integers(1, 8), label="cycles")
    # Jobs arrive over the cycles: a later, higher-priority one finds the cluster taken.
    arrivals = [data.draw(st.integers(0, cycles - 1), label="arrives") for _ in jobs]
    for now in range(cycles):
        model.add_jobs([job for job, at in zip(jobs, arrivals, strict=True) if at == now])
        model.now = float(now)
        decisions = run_cycle(model, ELASTIC)
        check(model, nodes)
        event("a cycle evicted" if decisions.evictions else "a cycle evicted nothing")
        for evict in decisions.evictions:
            event(f"an eviction: {evict.reason.split(' for ')[0].split(' (')[0]}")
            if not evict.reason.startswith("shrunk from"):  # not an elastic repair
                assert any(b.task.job != evict.task.job for b in decisions.binds), evict
            victim = model.jobs[evict.task.job]
            # A gang gives up surplus or everything; a job placed task by task (the default
            # scheduler) may lose single tasks, as pods do (issue 16).
            assert victim.is_surplus(evict.task.group, evict.task.index) or \
                not victim.running or not victim.job.gang, \
                f"{evict.task} taken, {victim.name} cut, not evicted"
        # A task ends badly and is retried: a guaranteed one waits for allocation again, a
        # surplus one leaves its job at a size the next cycle may have to repair.
        running = sorted((t.ref for info in model.jobs.values() for t in info.running),
                         key=str)
        ended = data.draw(st.sampled_from([None, *running]), label="ends")
        if ended is not None:
            model.release_task(ended)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_reclaim_takes_back_only_surplus_and_only_when_the_owner_starts(
        data: st.DataObject) -> None:
    """A borrower's elastic job grows into a lender's idle guarantee; the lender's jobs then
    arrive. Whatever is evicted is elastic surplus, for a job placed in the same cycle, and
    the lender is never kept from what it is owed by surplus that could be taken."""
    gpus = data.draw(st.integers(2, 8), label="gpus")
    nodes = [Node("n0", Resources.of(cpu=64_000, memory=256_000, gpu=gpus))]
    owed = data.draw(st.integers(1, gpus), label="owed")
    vcs = [VirtualCluster("owed", min=Resources.of(gpu=owed)), VirtualCluster("lent")]
    elastic = data.draw(elasticities("e"), label="elastic")
    model = SchedulerModel(nodes, vcs)
    model.add_job(Job("grower", (TaskGroup("w", elastic.max_replicas,
                                           Resources.of(cpu=1000, gpu=1)),),
                      queue="lent", scheduler_name=SchedulerName.SHOAL, elastic=elastic))
    arrivals = {data.draw(st.integers(1, 6), label="arrives"): data.draw(
        st.integers(1, owed), label="asks") for _ in range(data.draw(st.integers(1, 3)))}
    for now in range(8):
        if now in arrivals:
            model.add_job(Job(f"owner{now}", (TaskGroup("w", arrivals[now],
                                                        Resources.of(cpu=1000, gpu=1)),),
                              queue="owed", scheduler_name=SchedulerName.SHOAL,
                              submitted=float(now)))
        model.now = float(now)
        decisions = run_cycle(model, ELASTIC)
        check(model, nodes)
        for evict in decisions.evictions:
            event(f"an eviction: {evict.reason.split(' (')[0].split(' for ')[0]}")
            assert evict.task.job == "grower", evict
            assert model.jobs["grower"].is_surplus(evict.task.group, evict.task.index)
            assert any(b.task.job.startswith("owner") for b in decisions.binds), evict
        grower = model.jobs["grower"]
        freeable = max(0, grower.elastic_size() - elastic.min_replicas) \
            if grower.running and not grower.pending else 0
        free = model.node("n0").gpu
        idle = model.quota.get("owed").idle.gpu
        for info in model.jobs.values():
            if info.name.startswith("owner") and not info.running:
                need = info.job.replicas
                assert need > min(idle, free + freeable), (
                    f"{info.name} waits for {need} GPUs with {free} free, {freeable} "
                    f"surplus and {idle} owed")


@settings(max_examples=200, deadline=None)
@given(world=worlds(), data=st.data())
def test_evicted_tasks_stopping_slowly_never_start_a_gang_in_part(
        world: tuple[list[Node], list[VirtualCluster], list[Job]], data: st.DataObject) -> None:
    """As under `shoal up`: an evicted task is held back until its process has stopped, which
    takes a random number of cycles. A held-back task is never placed, and no job ever runs
    with fewer tasks than its gang minimum while some of its tasks are still stopping."""
    nodes, vcs, jobs = world
    model = SchedulerModel(nodes, vcs)
    cycles = data.draw(st.integers(2, 10), label="cycles")
    arrivals = [data.draw(st.integers(0, cycles - 1), label="arrives") for _ in jobs]
    stopping: set[TaskRef] = set()
    for now in range(cycles):
        model.add_jobs([job for job, at in zip(jobs, arrivals, strict=True) if at == now])
        for ref in sorted(stopping, key=str):
            if data.draw(st.booleans(), label=f"{ref} stopped"):
                stopping.discard(ref)
                model.task_stopped(ref)
        model.now = float(now)
        decisions = run_cycle(model, ELASTIC)
        check(model, nodes, stopping)
        assert not stopping & {b.task for b in decisions.binds}, "a stopping task placed"
        for evict in decisions.evictions:
            model.hold_back(evict.task)
            stopping.add(evict.task)
        event("tasks still stopping" if stopping else "nothing stopping")
        for info in model.jobs.values():
            if info.running and info.job.gang:
                assert len(info.running) >= info.gang_minimum, (
                    f"{info.name} runs {len(info.running)} of its minimum "
                    f"{info.gang_minimum}")
