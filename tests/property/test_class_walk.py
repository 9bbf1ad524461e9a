"""The allocate action's class walk decides what walking every waiting job decides.

Many jobs of few shapes, in a few virtual clusters, on a small cluster where most wait: the
class lines (`shoal.scheduler.class_lines`) hold long lines, so classes are suspended and
taken up again as jobs are placed (`shoal.scheduler.actions.class_walk`). An incremental
model and one that judges every waiting job afresh are driven in lockstep, with jobs ending
and arriving between cycles; every cycle must bind the same tasks and, when reasons are
read, give every waiting job the same one.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup, VirtualCluster
from shoal.scheduler import Profile
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session

from .lockstep import twins_on_small_nodes

QUEUES = ("a", "b", "c")
SHAPES = st.tuples(st.integers(1, 3), st.integers(1, 2), st.booleans(), st.booleans())
"""(cpus per task, tasks, gang (else task by task), gang minimum below its size)."""


def make_job(name: str, queue: str, shape: tuple[int, int, bool, int], at: float) -> Job:
    cpus, tasks, gang, partly = shape
    group = TaskGroup("w", tasks, Resources.of(cpu=1_000 * cpus, memory=1_000))
    return Job(name, (group,), queue=queue,
               scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT,
               min_available=1 if gang and partly and tasks > 1 else None, submitted=at)


def cycle(model: SchedulerModel, hooks: Hooks, profile: Profile, close: bool
          ) -> dict[str, object]:
    session = Session(model, hooks)
    for action in profile.actions():
        action.execute(session)
    out = (session.close() if close else session.decide()).to_dict()
    if not close:
        del out["pending"]
    return out


@settings(max_examples=120, deadline=None)
@given(nodes=st.integers(1, 4),
       jobs=st.lists(st.tuples(st.sampled_from(QUEUES), SHAPES), min_size=1, max_size=60),
       steps=st.lists(st.tuples(st.booleans(), st.integers(0, 3),
                                st.lists(st.tuples(st.sampled_from(QUEUES), SHAPES),
                                         max_size=6)), min_size=1, max_size=6),
       profile=st.sampled_from(["default", "spread"]))
def test_class_walk_decides_as_a_full_walk(
        nodes: int, jobs: list[tuple[str, tuple[int, int, bool, int]]],
        steps: list[tuple[bool, int, list[tuple[str, tuple[int, int, bool, int]]]]],
        profile: str) -> None:
    made = [make_job(f"j{i:03d}", q, s, float(i)) for i, (q, s) in enumerate(jobs)]
    twins = twins_on_small_nodes(profile, nodes, QUEUES, made)
    chosen, hooks, live, fresh = twins.profile, twins.hooks, twins.live, twins.fresh
    bound: dict[str, None] = {}
    """Jobs that got a task bound, in order: the first ones end first."""
    count = len(made)
    for step, (close, ends, arrivals) in enumerate(steps):
        got = cycle(live, hooks, chosen, close)
        want = cycle(fresh, hooks, chosen, True)
        if not close:
            del want["pending"]
        assert got == want, f"cycle {step}"
        binds = got["binds"]
        assert isinstance(binds, list)
        bound.update(dict.fromkeys(b["job"] for b in binds))
        for name in list(bound)[:ends]:
            live.remove_job(name)
            fresh.remove_job(name)
            del bound[name]
        new = [make_job(f"j{count + i:03d}", q, s, float(count + i))
               for i, (q, s) in enumerate(arrivals)]
        count += len(new)
        live.add_jobs(new)
        fresh.add_jobs(new)


GLOBAL_PROFILES = ["las", "las-elastic", "sjf"]
"""Profiles with `ordering: global` whose job order is fixed for a job that waits holding
nothing (`static_order`): the class lines are merged into the one order of the cluster."""

GPU_SHAPES = st.tuples(st.integers(1, 3), st.integers(1, 2), st.booleans(),
                       st.sampled_from([0.0, 1_800.0, 5_000.0, 50_000.0]),
                       st.sampled_from([None, 60.0, 3_600.0]))
"""(GPUs per task, tasks, gang, attained service of earlier runs, runtime estimate)."""


def make_gpu_job(name: str, queue: str, shape: tuple[int, int, bool, float, float | None],
                 at: float) -> Job:
    gpus, tasks, gang, attained, estimate = shape
    group = TaskGroup("w", tasks, Resources.of(cpu=1_000, memory=1_000, gpu=gpus))
    return Job(name, (group,), queue=queue,
               scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT,
               submitted=at, attained_gpu_seconds=attained, runtime_estimate=estimate)


def stop_whole(models: list[SchedulerModel], name: str) -> None:
    """Stop every task of a running job and keep the service its run had with the job, as
    the simulator does when it evicts a whole gang: it waits again, holding nothing, with a
    worse attained-service class than when it started."""
    for model in models:
        info = model.jobs[name]
        service = info.run_service(model.now)
        for task in list(info.running):
            model.release_task(task.ref)
        info.job = replace(info.job, attained_gpu_seconds=info.job.attained_gpu_seconds
                           + service)


@settings(max_examples=120, deadline=None)
@given(nodes=st.integers(1, 3),
       jobs=st.lists(st.tuples(st.sampled_from(QUEUES), GPU_SHAPES), min_size=1, max_size=40),
       steps=st.lists(st.tuples(st.booleans(), st.integers(0, 2), st.integers(0, 2),
                                st.sampled_from([1.0, 600.0, 3_600.0, 40_000.0]),
                                st.lists(st.tuples(st.sampled_from(QUEUES), GPU_SHAPES),
                                         max_size=5)), min_size=1, max_size=6),
       profile=st.sampled_from(GLOBAL_PROFILES))
def test_global_class_walk_decides_as_a_full_walk(
        nodes: int, jobs: list[tuple[str, tuple[int, int, bool, float, float | None]]],
        steps: list[tuple[bool, int, int, float,
                          list[tuple[str, tuple[int, int, bool, float, float | None]]]]],
        profile: str) -> None:
    """Under `ordering: global` the class walk merges every virtual cluster's lines into
    one order; jobs run up service as the clock moves, and whole jobs are stopped and wait
    again in a worse class, so the lines hold jobs of several las classes at once."""
    made = [make_gpu_job(f"j{i:03d}", q, s, float(i)) for i, (q, s) in enumerate(jobs)]
    node_list = [Node(f"n{i}", Resources.of(cpu=16_000, memory=64_000, gpu=4))
                 for i in range(nodes)]
    vcs = [VirtualCluster(q) for q in QUEUES]
    live, fresh = SchedulerModel(node_list, vcs), SchedulerModel(node_list, vcs)
    fresh.incremental = False
    live.add_jobs(made)
    fresh.add_jobs(made)
    chosen = Profile.load(profile)
    hooks = Hooks(chosen.plugins())
    count = len(made)
    for step, (close, ends, stops, elapsed, arrivals) in enumerate(steps):
        got = cycle(live, hooks, chosen, close)
        event(f"{profile}: {'lines' if live.class_lines.lines else 'no lines'}")
        want = cycle(fresh, hooks, chosen, True)
        if not close:
            del want["pending"]
        assert got == want, f"cycle {step}"
        running = sorted(n for n, info in live.jobs.items() if info.running)
        for name in running[:ends]:
            live.remove_job(name)
            fresh.remove_job(name)
        for name in running[ends:ends + stops]:
            stop_whole([live, fresh], name)
        new = [make_gpu_job(f"j{count + i:03d}", q, s, float(count + i))
               for i, (q, s) in enumerate(arrivals)]
        count += len(new)
        live.add_jobs(new)
        fresh.add_jobs(new)
        live.now = fresh.now = live.now + elapsed
