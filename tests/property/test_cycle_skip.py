"""`SchedulerModel.cycle_may_place`: when it says no, a cycle really places nothing.

The control loop skips the cycle a submission would trigger when the model says no cycle can
place anything (the cluster is full for every new job, and nothing was released since a
cycle that decided nothing). The claim is checked here over random worlds: settle a model by
running cycles until one decides nothing, then let jobs arrive — and, in some examples,
let a running job end or a waiting one be withdrawn — and whenever the model says a cycle is
moot, run that cycle anyway and require that it binds nothing.
"""

from __future__ import annotations

from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from shoal.api import Decisions, Job, Node, Resources, SchedulerName, TaskGroup
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.session import Hooks, Session

from .strategies import PROFILE_NAMES, World, worlds

CHECKS = settings(max_examples=120, deadline=None)


def cycle(model: SchedulerModel, world: World) -> Decisions:
    session = Session(model, Hooks(world.profile.plugins()))
    for action in world.profile.actions():
        action.execute(session)
    return session.close()


def settle(model: SchedulerModel, world: World) -> bool:
    for _ in range(8):
        if not cycle(model, world).changes_anything():
            model.settled()
            return True
    return False


@CHECKS
@given(world=worlds(), data=st.data())
def test_a_moot_cycle_places_nothing(world: World, data: st.DataObject) -> None:
    # Arrivals are drawn, where there are some, from the jobs a settled cluster leaves
    # waiting: those are the ones that find it full, which is where the claim has teeth.
    full = SchedulerModel.from_snapshot(world.snapshot())
    assume(settle(full, world))
    stuck = {name for name, info in full.waiting.items() if not info.running}
    waiting = [j for j in world.jobs if not j.tasks and (j.name in stuck or not stuck)]
    assume(waiting)
    arrivals = data.draw(st.lists(st.sampled_from(waiting), min_size=1, max_size=6,
                                  unique_by=lambda j: j.name), label="arrivals")
    later = {j.name for j in arrivals}
    model = SchedulerModel.from_snapshot(
        world.with_jobs(j for j in world.jobs if j.name not in later).snapshot())
    assume(settle(model, world))
    assert not model.cycle_may_place()  # settled, and nothing arrived yet

    for job in arrivals:
        model.add_job(job)
    change = data.draw(st.sampled_from(["none", "finish", "withdraw"]), label="change")
    running = [name for name, info in model.jobs.items() if info.running]
    if change == "finish" and running:
        model.remove_job(data.draw(st.sampled_from(running), label="finished"))
    elif change == "withdraw" and model.waiting:
        model.withdraw(data.draw(st.sampled_from(sorted(model.waiting)), label="withdrawn"))

    moot = not model.cycle_may_place()
    event(f"moot ({change})" if moot else "a cycle may place")
    decisions = cycle(model, world)
    if moot:
        assert not decisions.binds, f"a moot cycle bound {decisions.binds[:3]}"


@st.composite
def full_clusters(draw: st.DrawFn) -> tuple[World, list[Job]]:
    """A cluster whose GPUs are all taken by one-GPU jobs (filler, with one or two more left
    waiting, so that a GPU given back gets taken), and jobs that arrive next: GPU jobs of
    every size, as gangs or not, and now and then a CPU-only one."""
    nodes = tuple(Node(f"n{i}", Resources.of(cpu=64_000, memory=256_000, gpu=gpus))
                  for i, gpus in enumerate(draw(st.lists(st.integers(1, 4), min_size=1,
                                                        max_size=4))))
    slots = sum(n.capacity.gpu for n in nodes)
    filler = [Job(f"fill-{i}", (TaskGroup("w", 1, Resources.of(cpu=1000, memory=1000,
                                                                gpu=1)),),
                  scheduler_name=SchedulerName.SHOAL, submitted=float(i))
              for i in range(slots + draw(st.integers(1, 2)))]
    if draw(st.booleans()):  # a CPU-only job queued behind them: strict FIFO blocks it
        filler.append(Job("cpu-old", (TaskGroup("w", 1, Resources.of(cpu=1000, memory=1000)),),
                          scheduler_name=SchedulerName.SHOAL, submitted=50.0))
    arrivals = []
    for i in range(draw(st.integers(1, 5))):
        replicas = draw(st.integers(1, 3))
        gpu = draw(st.sampled_from([0, 1, 1, 2, 4]))
        arrivals.append(Job(f"new-{i}", (TaskGroup("w", replicas, Resources.of(
            cpu=1000, memory=1000, gpu=gpu)),), scheduler_name=SchedulerName.SHOAL,
            min_available=draw(st.sampled_from([None, 1])), submitted=100.0 + i))
    name = draw(st.sampled_from(PROFILE_NAMES))
    return World(nodes, (), (), tuple(filler), profile_name=name), arrivals


@CHECKS
@given(case=full_clusters(), data=st.data())
def test_arrivals_on_a_full_cluster(case: tuple[World, list[Job]],
                                    data: st.DataObject) -> None:
    world, arrivals = case
    model = SchedulerModel.from_snapshot(world.snapshot())
    assert settle(model, world)
    for job in arrivals:
        model.add_job(job)
    change = data.draw(st.sampled_from(["none", "none", "finish", "cancel", "withdraw"]),
                       label="change")
    running = sorted(name for name, info in model.jobs.items() if info.running)
    queued = sorted(name for name, info in model.waiting.items() if not info.running)
    if change == "finish" and running:
        model.remove_job(data.draw(st.sampled_from(running), label="ended"))
    elif change == "cancel" and queued:  # a job that held nothing leaves the queue
        model.remove_job(data.draw(st.sampled_from(queued), label="cancelled"))
    elif change == "withdraw" and model.waiting:
        model.withdraw(data.draw(st.sampled_from(sorted(model.waiting)), label="withdrawn"))
    moot = not model.cycle_may_place()
    event(f"moot ({change})" if moot else f"a cycle may place ({change})")
    decisions = cycle(model, world)
    if moot:
        assert not decisions.binds, f"a moot cycle bound {decisions.binds[:3]}"
    elif (change == "none" and world.profile_name != "strict-fifo"
          and any(g.resources.gpu == 0 for j in arrivals for g in j.groups)):
        # The other side: a CPU-only arrival fits, and the cycle is not skipped for nothing.
        # (Under strict FIFO the waiting filler at the head blocks it.)
        assert decisions.binds


def test_a_strict_fifo_head_that_leaves_unblocks_the_queue() -> None:
    """The rare case the generator seldom draws: a waiting head of a strict FIFO queue is
    cancelled while it holds nothing; the CPU job it blocked must then be placed, even though
    the job that arrived meanwhile fits nowhere."""
    one_gpu = Resources.of(cpu=1000, memory=1000, gpu=1)
    jobs = (Job("fill-0", (TaskGroup("w", 1, one_gpu),), submitted=0.0),
            Job("fill-1", (TaskGroup("w", 1, one_gpu),), submitted=1.0),
            Job("cpu-old", (TaskGroup("w", 1, Resources.of(cpu=1000, memory=1000)),),
                submitted=2.0))
    world = World((Node("n0", Resources.of(cpu=8000, memory=8000, gpu=1)),), (), (), jobs,
                  profile_name="strict-fifo")
    model = SchedulerModel.from_snapshot(world.snapshot())
    assert settle(model, world)
    assert set(model.waiting) == {"fill-1", "cpu-old"}
    model.add_job(Job("new-0", (TaskGroup("w", 1, Resources.of(gpu=2)),), submitted=3.0))
    assert not model.cycle_may_place()
    model.remove_job("fill-1")
    assert model.cycle_may_place()
    assert [b.task.job for b in cycle(model, world).binds] == ["cpu-old"]
