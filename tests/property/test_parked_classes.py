"""Classes parked as the allocate action's walk begins decide what asking each one does.

A class whose kept answer stands when the class walk starts (`Misfits.standing`) is parked
from its first job without being taken through the walk (`class_walk.walk_classes`): it is
taken up again, as any suspended class, after a placement moves what it reads, or asked
when reached if another virtual cluster's placements moved it first. Twin models — one
incremental, one that judges every waiting job afresh — are driven in lockstep under the
global profiles and `default`, on nodes of two GPU types with jobs that select one, in
virtual clusters with quotas, with gangs and task-by-task jobs; between cycles most often
only jobs arrive (what parks every class that was turned down), or jobs end or are stopped.
Cycles are run unworded (as the simulator does: kept answers carry over) or worded and
closed, when every waiting job's reason must match too.
"""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup, VirtualCluster
from shoal.api.decisions import Decisions
from shoal.api.resources import ResourceLimit
from shoal.scheduler import Profile
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session

from .lockstep import assert_same_cycle
from .test_class_walk import stop_whole

QUEUES = ("a", "b", "c")
TYPES = ("k80", "p100")
SHAPES = st.tuples(st.sampled_from(QUEUES), st.integers(1, 4), st.integers(1, 3), st.booleans(),
                   st.sampled_from([None, *TYPES]), st.sampled_from([0.0, 5_000.0, 50_000.0]))
"""(queue, GPUs per task, tasks, gang, GPU type selected, attained service of earlier runs)."""


def make_job(name: str, shape: tuple[str, int, int, bool, str | None, float], at: float
             ) -> Job:
    queue, gpus, tasks, gang, kind, attained = shape
    group = TaskGroup("w", tasks, Resources.of(cpu=1_000, memory=1_000, gpu=gpus),
                      node_selector={"gpu-type": kind} if kind else {})
    return Job(name, (group,), queue=queue,
               scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT,
               submitted=at, attained_gpu_seconds=attained)


def typed_nodes_and_capped_queues(nodes: int, limits: list[int | None]
                                  ) -> tuple[list[Node], list[VirtualCluster]]:
    """`nodes` nodes of each GPU type (4 GPUs, 16 CPUs each), and one virtual cluster per
    queue, capped at its limit's GPUs (None: uncapped)."""
    node_list = [Node(f"n{i}", Resources.of(cpu=16_000, memory=64_000, gpu=4),
                      labels={"gpu-type": TYPES[i % 2]}) for i in range(nodes * 2)]
    vcs = [VirtualCluster(q, max=ResourceLimit.of({"gpu": cap}) if cap else
                          ResourceLimit()) for q, cap in zip(QUEUES, limits, strict=True)]
    return node_list, vcs


def cycle(model: SchedulerModel, hooks: Hooks, profile: Profile, worded: bool) -> Decisions:
    session = Session(model, hooks, worded=worded)
    for action in profile.actions():
        action.execute(session)
    return session.close() if worded else session.decide()


@settings(max_examples=40, deadline=None)
@given(nodes=st.integers(1, 3),
       limits=st.lists(st.sampled_from([None, 4, 8]), min_size=3, max_size=3),
       jobs=st.lists(SHAPES, min_size=1, max_size=30),
       steps=st.lists(st.tuples(st.booleans(), st.sampled_from(["arrive", "arrive", "end",
                                                                "stop"]),
                                st.lists(SHAPES, max_size=3)), min_size=2, max_size=8),
       profile=st.sampled_from(["las", "las-elastic", "sjf", "default"]))
def test_parked_classes_decide_as_asking_each(
        nodes: int, limits: list[int | None],
        jobs: list[tuple[str, int, int, bool, str | None, float]],
        steps: list[tuple[bool, str, list[tuple[str, int, int, bool, str | None, float]]]],
        profile: str) -> None:
    made = [make_job(f"j{i:03d}", s, float(i)) for i, s in enumerate(jobs)]
    node_list, vcs = typed_nodes_and_capped_queues(nodes, limits)
    live, fresh = SchedulerModel(node_list, vcs), SchedulerModel(node_list, vcs)
    fresh.incremental = False
    live.add_jobs(made)
    fresh.add_jobs(made)
    chosen = Profile.load(profile)
    hooks = Hooks(chosen.plugins())
    count = len(made)
    for step, (worded, change, arrivals) in enumerate(steps):
        kept = len(live.class_verdicts.kept)
        got = cycle(live, hooks, chosen, worded)
        event(f"kept answers before the cycle: {'some' if kept else 'none'}")
        assert_same_cycle(got, cycle(fresh, hooks, chosen, True), worded, step)
        running = sorted(n for n, info in live.jobs.items() if info.running)
        if change == "end" and running:
            live.remove_job(running[0])
            fresh.remove_job(running[0])
        elif change == "stop" and running:
            stop_whole([live, fresh], running[-1])
        new = [make_job(f"j{count + i:03d}", s, float(count + i))
               for i, s in enumerate(arrivals)]
        count += len(new)
        live.add_jobs(new)
        fresh.add_jobs(new)
        live.now = fresh.now = live.now + 60.0
