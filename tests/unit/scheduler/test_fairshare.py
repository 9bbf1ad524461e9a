"""The fairshare plugin's score, its index, and the fairshare action's rules that the
scenario tables cannot show (they rebuild the model every cycle): a shrink is remembered
by the model and freezes the job, givers that may not give, gangs that need more than one
step, and when the action asks drivers to come back."""

from __future__ import annotations

import pytest

from shoal.api import Elasticity, Job, Node, Resources, SchedulerName, TaskGroup
from shoal.api.lifecycle import JobState, TaskState
from shoal.api.objects import Task
from shoal.scheduler import Profile, run_cycle
from shoal.scheduler.fairshare_index import FairShareIndex
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.plugins.fairshare import FairShare, FairShareArguments
from shoal.scheduler.session import Session

WORKER = Resources.of(cpu=1000, memory=1024, gpu=1)


def profile(window: float = 0.0, ratio: float = 1.5) -> Profile:
    return Profile.from_dict({
        "name": "fs", "actions": "enqueue, allocate, backfill, fairshare",
        "configurations": [{"name": "fairshare", "arguments": {
            "freezingWindow": window, "unevenRatio": ratio}}],
        "tiers": [{"plugins": [{"name": "fairshare"}, {"name": "priority"}, {"name": "gang"}]},
                  {"plugins": [{"name": "predicates"}, {"name": "capacity"},
                               {"name": "placement"}]}]})


def elastic_job(name: str, size: int, first_gpu: int, started: float = -1000.0,
                most: int = 8, least: int = 1, **fields: object) -> Job:
    tasks = tuple(Task(name, "w", i, TaskState.RUNNING, "n0", (first_gpu + i,), started)
                  for i in range(size))
    return Job(name, (TaskGroup("w", most, WORKER),), scheduler_name=SchedulerName.SHOAL,
               elastic=Elasticity("w", least, most), tasks=tasks, state=JobState.RUNNING,
               **fields)  # type: ignore[arg-type]


def model_of(*jobs: Job, gpus: int = 8, now: float = 0.0) -> SchedulerModel:
    model = SchedulerModel([Node("n0", Resources.of(cpu=64_000, memory=512_000, gpu=gpus))],
                           now=now)
    model.add_jobs(jobs)
    return model


def sizes(model: SchedulerModel) -> dict[str, int]:
    return {name: info.elastic_size() for name, info in model.jobs.items()}


# ---- the index ---------------------------------------------------------------------------

def test_index_ends_and_rekey() -> None:
    index = FairShareIndex()
    for name, key in (("a", 3.0), ("b", 1.0), ("c", 2.0)):
        index.add(name, (key,))
    assert (index.left_most(), index.right_most(), len(index)) == ("b", "a", 3)
    index.rekey("b", (5.0,))  # b grew: it moves right
    assert (index.left_most(), index.right_most()) == ("c", "b")
    assert list(index) == ["c", "a", "b"]
    assert list(index.reversed()) == ["b", "a", "c"]
    index.remove("c")
    assert index.left_most() == "a" and "c" not in index
    index.discard("c")  # already gone: nothing to do
    with pytest.raises(KeyError):
        index.add("a", (0.0,))


def test_index_ties_fall_to_the_name_and_empty_ends_are_none() -> None:
    index = FairShareIndex()
    assert index.left_most() is None and index.right_most() is None
    index.add("y", (1.0,))
    index.add("x", (1.0,))
    assert (index.left_most(), index.right_most()) == ("x", "y")


# ---- the score ---------------------------------------------------------------------------

def test_score_weights_resources_divides_by_priority_and_counts_earlier_runs() -> None:
    plugin = FairShare(FairShareArguments.model_validate(
        {"gpuWeight": 2.0, "cpuWeight": 0.5, "memoryWeight": 0.25, "quantum": 10.0}))
    task = Resources.of(cpu=2000, memory=4096, gpu=1)  # 2 + 1 + 1 = 4 per second
    job = Job("j", (TaskGroup("w", 2, task),), scheduler_name=SchedulerName.SHOAL,
              attained_gpu_seconds=30.0, priority_class="offline",
              tasks=(Task("j", "w", 0, TaskState.RUNNING, "n0", (0,), 100.0),
                     Task("j", "w", 1, TaskState.RUNNING, "n0", (1,), 150.0)),
              state=JobState.RUNNING)
    model = SchedulerModel([Node("n0", Resources.of(cpu=8000, memory=16_384, gpu=2))],
                           now=200.0)
    model.add_jobs([job])
    info = model.jobs["j"]
    assert info.priority == 100
    # (100 s + 50 s) × 4 + 30 GPU-seconds × gpuWeight 2, over the offline class's 100.
    assert plugin.score(info, 200.0) == pytest.approx((150 * 4 + 60) / 100)
    assert plugin.rate(info) == pytest.approx(8 / 100)
    assert plugin.key(info, 200.0) == pytest.approx((150 * 4 + 60 + 8 * 10) / 100)


def test_higher_priority_is_served_first_for_the_same_service() -> None:
    low = elastic_job("low", 2, 0, priority_class="experiment")
    high = elastic_job("high", 2, 2, priority_class="production")
    model = model_of(low, high)
    session = Session(model, Profile.load("fairshare").plugins())
    assert session.job_order_key(model.jobs["high"]) < session.job_order_key(model.jobs["low"])


def test_next_change_only_while_a_job_both_runs_and_waits() -> None:
    plugin = FairShare(FairShareArguments(quantum=30.0))
    model = model_of(now=5.0)
    assert plugin.next_change(Session(model, [plugin])) is None
    # Running jobs and a waiting one that holds nothing: their order is fixed.
    model.add_jobs([elastic_job("e", 1, 0),
                    Job("waits", (TaskGroup("w", 9, WORKER),),
                        scheduler_name=SchedulerName.SHOAL)])
    assert plugin.next_change(Session(model, [plugin])) is None
    # Placed task by task, one of two running: its key grows while it waits for the other.
    model.add_jobs([Job("half", (TaskGroup("w", 2, WORKER),), tasks=(
        Task("half", "w", 0, TaskState.RUNNING, "n0", (7,), 0.0),))])
    assert plugin.next_change(Session(model, [plugin])) == 35.0


# ---- the action --------------------------------------------------------------------------

def test_a_shrunk_job_is_frozen_in_a_kept_model_and_drivers_are_woken_when_it_thaws() -> None:
    # 6 + 2 on 8 GPUs; with a 50 s window the first rebalance freezes both jobs until 60.
    model = model_of(elastic_job("big", 6, 0), elastic_job("small", 2, 6), now=10.0)
    first = run_cycle(model, profile(window=50.0))
    assert sizes(model) == {"big": 5, "small": 3}
    assert [e.task.job for e in first.evictions] == ["big"]
    assert model.jobs["big"].resized == 10.0
    for now in (20.0, 59.0):
        model.now = now
        session = Session(model, profile(window=50.0).plugins())
        for action in profile(window=50.0).actions():
            action.execute(session)
        assert not session.close().changes_anything(), now
        assert session.regrow_at == 60.0  # when big and small thaw
    model.now = 60.0
    run_cycle(model, profile(window=50.0))
    assert sizes(model) == {"big": 4, "small": 4}


def test_scale_cooldown_holds_when_longer_than_the_window() -> None:
    big = elastic_job("big", 6, 0)
    cooled = Job(big.name, big.groups, scheduler_name=big.scheduler_name,
                 elastic=Elasticity("w", 1, 8, scale_cooldown=2000.0), tasks=big.tasks,
                 state=JobState.RUNNING)
    model = model_of(cooled, elastic_job("small", 2, 6), now=10.0)  # big started at -1000
    decisions = run_cycle(model, profile(window=0.0))
    assert not decisions.evictions and sizes(model) == {"big": 6, "small": 2}


@pytest.mark.parametrize("fields", [{"preemptable": False}, {"protect_for": 5000.0}])
def test_a_giver_that_may_not_give_is_left_alone(fields: dict[str, object]) -> None:
    model = model_of(elastic_job("big", 6, 0, **fields), elastic_job("small", 2, 6),
                     now=10.0)
    decisions = run_cycle(model, profile())
    assert not decisions.evictions and sizes(model) == {"big": 6, "small": 2}


def test_a_waiting_gang_takes_one_step_from_each_of_several_givers() -> None:
    # Full node: a and b at 4 each. `new` (a gang of 2) waits with key 0. One step from the
    # right-most giver frees 1 GPU — not enough — so the next giver gives one step too.
    model = model_of(elastic_job("a", 4, 0), elastic_job("b", 4, 4, started=-900.0),
                     now=10.0)
    model.add_jobs([Job("new", (TaskGroup("w", 2, WORKER),),
                        scheduler_name=SchedulerName.SHOAL, submitted=5.0)])
    decisions = run_cycle(model, profile())
    assert sorted(str(e.task) for e in decisions.evictions) == ["a/w/3", "b/w/3"]
    assert sorted(str(b.task) for b in decisions.binds) == ["new/w/0", "new/w/1"]
    assert {r.job: r.replicas for r in decisions.resizes} == {"a": 3, "b": 3}


def test_nothing_is_evicted_for_a_taker_that_would_still_not_fit() -> None:
    model = model_of(elastic_job("a", 4, 0), elastic_job("b", 4, 4), now=10.0)
    model.add_jobs([Job("huge", (TaskGroup("w", 3, WORKER),),
                        scheduler_name=SchedulerName.SHOAL, submitted=5.0)])
    decisions = run_cycle(model, profile())
    assert not decisions.evictions and not decisions.binds
    assert sizes(model) == {"a": 4, "b": 4, "huge": 0}
    assert [p.job for p in decisions.pending] == ["huge"]


def test_without_the_plugin_the_action_keys_units_with_its_defaults() -> None:
    bare = Profile.from_dict({
        "name": "bare", "actions": "enqueue, allocate, fairshare",
        "configurations": [{"name": "fairshare", "arguments": {"freezingWindow": 0}}],
        "tiers": [{"plugins": [{"name": "gang"}]},
                  {"plugins": [{"name": "predicates"}, {"name": "capacity"}]}]})
    model = model_of(elastic_job("big", 6, 0), elastic_job("small", 2, 6), now=10.0)
    run_cycle(model, bare)
    assert sizes(model) == {"big": 5, "small": 3}



def wake_up(model: SchedulerModel, used: Profile) -> float | None:
    session = Session(model, used.plugins())
    for action in used.actions():
        action.execute(session)
    session.close()
    return session.regrow_at


def test_drivers_come_back_a_quantum_later_only_while_two_jobs_could_rebalance() -> None:
    # Even shares: nothing to do now, but the keys drift; one quantum (60 s) on, a cycle.
    model = model_of(elastic_job("a", 4, 0), elastic_job("b", 4, 4), now=10.0)
    assert wake_up(model, profile()) == 70.0
    # One job alone on a full node wants more and could give, but to no one: no wake-up.
    alone = model_of(elastic_job("a", 8, 0, most=16), now=10.0)
    assert wake_up(alone, profile()) is None
