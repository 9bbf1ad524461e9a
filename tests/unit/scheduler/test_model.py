"""The persistent scheduler model: deltas between cycles give the same decisions as a model
rebuilt from a snapshot; tasks held back while their evicted processes stop."""

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup, TaskRef
from shoal.api.decisions import PendingKind
from shoal.core import Snapshot
from shoal.scenario import apply
from shoal.scheduler import Profile, run_cycle
from shoal.scheduler.model import SchedulerModel

NODES = tuple(Node(f"n{i}", Resources.of(cpu=8000, gpu=4)) for i in range(2))


def gang(name: str, tasks: int, gpu: int, at: float) -> Job:
    return Job(name, (TaskGroup("w", tasks, Resources.of(cpu=1000 * max(gpu, 1), gpu=gpu)),),
               scheduler_name=SchedulerName.SHOAL, submitted=at)


def cycle(model: SchedulerModel) -> list[str]:
    decisions = run_cycle(model)
    return sorted(f"{b.task}@{b.node}:{b.gpus}" for b in decisions.binds)


def test_binds_stay_in_the_model_and_releases_free_capacity() -> None:
    model = SchedulerModel(NODES)
    model.add_job(gang("a", 2, 4, 0.0))
    model.add_job(gang("b", 1, 4, 1.0))
    assert cycle(model) == ["a/w/0@n0:(0, 1, 2, 3)", "a/w/1@n1:(0, 1, 2, 3)"]
    assert cycle(model) == []  # nothing changed: a holds both nodes, b still waits
    assert set(model.waiting) == {"b"}
    model.remove_job("a")  # a finished
    assert cycle(model) == ["b/w/0@n0:(0, 1, 2, 3)"]
    assert not model.waiting


def test_release_task_requeues_it() -> None:
    model = SchedulerModel(NODES)
    model.add_job(gang("a", 1, 2, 0.0))
    cycle(model)
    model.release_task(TaskRef("a", "w", 0))
    assert model.node("n0").gpu == 4 and model.quota.root.usage == Resources()
    assert set(model.waiting) == {"a"}
    assert cycle(model) == ["a/w/0@n0:(0, 1)"]


def test_incremental_model_matches_snapshot_rebuild() -> None:
    jobs = {j.name: j for j in (gang("a", 3, 2, 0.0), gang("b", 2, 2, 1.0),
                                gang("c", 1, 4, 2.0))}
    model = SchedulerModel(NODES)
    model.add_jobs(jobs.values())
    incremental = cycle(model)
    rebuilt = run_cycle(Snapshot(NODES, tuple(jobs.values())))
    assert incremental == sorted(f"{b.task}@{b.node}:{b.gpus}" for b in rebuilt.binds)
    # and a second cycle over the applied snapshot agrees with the live model
    after = apply(jobs, rebuilt, now=1.0)
    again = run_cycle(Snapshot(NODES, tuple(after.values())))
    assert cycle(model) == sorted(f"{b.task}@{b.node}:{b.gpus}" for b in again.binds)


def test_fit_bounds_survive_cycles_until_capacity_is_released() -> None:
    model = SchedulerModel(NODES)
    # a's two tasks take 6 of each node's 8 CPUs: 4 CPUs free in all, but 2 per node.
    model.add_job(Job("a", (TaskGroup("w", 2, Resources.of(cpu=6000, gpu=1)),),
                      scheduler_name=SchedulerName.SHOAL))
    cycle(model)
    request = Resources.of(cpu=3000, gpu=1)
    model.add_job(Job("late", (TaskGroup("w", 1, request),), submitted=1.0))
    assert cycle(model) == []  # the quota has room, no node has
    pool = next(iter(model.cluster.pools.values()))
    assert model.fit_memo.bound(pool, request) == 0
    model.add_job(Job("later", (TaskGroup("w", 1, request),), submitted=2.0))
    assert cycle(model) == []
    assert model.fit_memo.bound(pool, request) == 0  # still known, across cycles
    model.remove_job("a")
    assert model.fit_memo.bound(pool, request) is None  # released: forgotten
    assert cycle(model) == ["late/w/0@n0:(0,)", "later/w/0@n0:(1,)"]


def test_a_discarded_gang_leaves_fit_bounds_as_they_were() -> None:
    """A gang whose first group is placed and whose second then does not fit is discarded
    whole: what its first group took off the pool's fit bound comes back with it. Kept
    lowered (3 - 2), the bound said 1 of the 3 free slots fit and turned away a pair that
    fits; a kept model, skipping the pair, then worded its wait otherwise than a fresh
    walk (tests/property/test_reason_report.py)."""
    request = Resources.of(cpu=1000, gpu=1)
    v100 = {"gpu-type": "V100"}
    model = SchedulerModel([Node("v", Resources.of(cpu=8000, gpu=4), labels=v100),
                            Node("c", Resources.of(cpu=6000, gpu=4))])
    model.add_job(Job("hold", (TaskGroup("w", 1, request, node_selector=v100),),
                      scheduler_name=SchedulerName.SHOAL))
    assert cycle(model) == ["hold/w/0@v:(0,)"]
    model.add_jobs([
        # 4 of the 3 that fit now: the pool's bound, 3, is learnt.
        Job("big", (TaskGroup("w", 4, request, node_selector=v100),),
            scheduler_name=SchedulerName.SHOAL, submitted=1.0),
        # Its 2 on the V100 pool fit; then only c has room for one of its 2 big ones.
        Job("split", (TaskGroup("a", 2, request, node_selector=v100),
                      TaskGroup("b", 2, Resources.of(cpu=5500))),
            scheduler_name=SchedulerName.SHOAL, min_available=4, submitted=2.0),
        Job("pair", (TaskGroup("w", 2, request, node_selector=v100),),
            scheduler_name=SchedulerName.SHOAL, submitted=3.0)])
    assert cycle(model) == ["pair/w/0@v:(1,)", "pair/w/1@v:(2,)"]


def test_finish_task_frees_without_requeueing_and_withdraw_stops_wanting() -> None:
    model = SchedulerModel(NODES)
    model.add_job(gang("a", 2, 2, 0.0))
    model.add_job(gang("b", 3, 4, 1.0))  # cannot fit beside a
    cycle(model)
    model.finish_task(TaskRef("a", "w", 0))
    assert model.quota.root.usage.gpu == 2
    assert "a" not in model.waiting  # a finished task is not placed again
    model.finish_task(TaskRef("a", "w", 0))  # a second report changes nothing
    assert model.quota.root.usage.gpu == 2
    model.withdraw("b")
    assert "b" not in model.waiting and not model.jobs["b"].pending
    assert cycle(model) == []


def test_a_gang_waits_while_its_held_back_tasks_are_stopping() -> None:
    """Tasks held back after an eviction (their processes still stopping) are not placed,
    and a gang is not started from the rest: it waits whole, then starts whole."""
    model = SchedulerModel([Node("n0", Resources.of(cpu=64_000, memory=512_000, gpu=4))])
    model.add_job(Job("gang", (TaskGroup("w", 3, Resources.of(cpu=1000, gpu=1)),),
                      scheduler_name=SchedulerName.SHOAL))
    for index in (0, 1):
        model.hold_back(TaskRef("gang", "w", index))
    for profile in ("default", "elastic"):
        decided = run_cycle(model, Profile.load(profile))
        assert decided.binds == [] and decided.evictions == []
        (reason,) = [p.reason for p in decided.pending]
        assert reason.kind is PendingKind.GANG and "2 of them are still stopping" in \
            reason.message
    model.task_stopped(TaskRef("gang", "w", 0))
    assert run_cycle(model, Profile.load("default")).binds == []
    model.task_stopped(TaskRef("gang", "w", 1))
    model.task_stopped(TaskRef("gang", "w", 1))  # twice: no harm
    assert sorted(b.task.index for b in run_cycle(model, Profile.load("default")).binds) \
        == [0, 1, 2]
