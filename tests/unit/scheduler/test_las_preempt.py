"""The las plugin (discretised least-attained-service) and the preempt action: ordering by
attained service, whole-job all-or-nothing preemption within a virtual cluster, and a model
that stays consistent after evictions."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from shoal.api import (
    Job,
    Node,
    ResourceLimit,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskRef,
    TaskState,
    VirtualCluster,
)
from shoal.api.decisions import Decisions
from shoal.api.resources import total
from shoal.scheduler import Profile, ProfileError
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.plugins.las import LasArguments, LeastAttainedService
from shoal.scheduler.session import Session

HOUR = 3600.0


def nodes(count: int = 1, gpus: int = 4) -> tuple[Node, ...]:
    return tuple(Node(f"n{i}", Resources.of(cpu=16_000, memory=65_536, gpu=gpus))
                 for i in range(count))


def gang(name: str, tasks: int, gpu: int, at: float, queue: str = "default",
         attained: float = 0.0) -> Job:
    return Job(name, (TaskGroup("w", tasks, Resources.of(cpu=1000, gpu=gpu)),), queue=queue,
               scheduler_name=SchedulerName.SHOAL, submitted=at,
               attained_gpu_seconds=attained)


def running(job: Job, placement: list[str], started: float | None) -> Job:
    """The job with each task i running on placement[i] since `started`."""
    tasks = tuple(Task(job.name, "w", i, TaskState.RUNNING, node, started=started)
                  for i, node in enumerate(placement))
    return replace(job, tasks=tasks)


def cycle(model: SchedulerModel, now: float, profile: Profile | None = None) -> Decisions:
    """One cycle as the simulator runs it."""
    profile = profile or Profile.load("las")
    model.now = now
    session = Session(model, profile.plugins())
    for action in profile.actions():
        action.execute(session)
    decisions = session.close()
    assert_consistent(model)
    return decisions


def binds(decisions: Decisions) -> list[str]:
    return [f"{b.task}@{b.node}" for b in decisions.binds]


def evictions(decisions: Decisions) -> list[str]:
    return [f"{e.task}@{e.node}" for e in decisions.evictions]


def assert_consistent(model: SchedulerModel) -> None:
    """Node capacity, GPU indices, quota usage, holding counts and the waiting set all agree
    with the tasks the model says are running."""
    used_gpus = {s.name: 0 for s in model.cluster.states}
    used_cpu = {s.name: 0 for s in model.cluster.states}
    masks = {s.name: 0 for s in model.cluster.states}
    requests = []
    for info in model.jobs.values():
        assert info.holding == len(info.running), info.name
        held = {(t.ref.group, t.ref.index) for t in info.running}
        pending = {(g, i) for g, q in info.pending.items() for i in q}
        assert not held & pending, info.name
        assert len(held) + len(pending) == info.job.replicas, info.name
        assert (info.name in model.waiting) == bool(info.pending), info.name
        for task in info.running:
            request = info.job.group(task.ref.group).resources
            requests.append(request)
            used_gpus[task.node] += request.gpu
            used_cpu[task.node] += request.cpu
            assert len(task.gpus) == request.gpu
            for index in task.gpus:
                assert not masks[task.node] >> index & 1, f"GPU {index} held twice"
                masks[task.node] |= 1 << index
    for state in model.cluster.states:
        assert state.gpu == state.allocatable.gpu - used_gpus[state.name], state.name
        assert state.cpu == state.allocatable.cpu - used_cpu[state.name], state.name
        assert state.gpu_free_mask == ((1 << state.allocatable.gpu) - 1) & ~masks[state.name]
    assert model.quota.root.usage == total(requests)


# ---- the las plugin ------------------------------------------------------------------------


def las_session(model: SchedulerModel, now: float) -> tuple[Session, LeastAttainedService]:
    model.now = now
    session = Session(model, Profile.load("las").plugins())
    las = next(p for p in session.hooks.plugins if isinstance(p, LeastAttainedService))
    return session, las


def test_queue_index_follows_the_thresholds() -> None:
    model = SchedulerModel(nodes())
    for name, attained in (("a", 0.0), ("b", HOUR - 1), ("c", HOUR), ("d", 10 * HOUR - 1),
                           ("e", 10 * HOUR), ("f", 1e9)):
        model.add_job(gang(name, 1, 8, 0.0, attained=attained))
    _, las = las_session(model, 0.0)
    assert [las.queue_index(model.jobs[n]) for n in "abcdef"] == [0, 0, 1, 1, 2, 2]


def test_more_attained_service_goes_after_a_newer_job_with_less() -> None:
    model = SchedulerModel(nodes())
    model.add_job(gang("old", 1, 4, 0.0, attained=2 * HOUR))    # queue 1
    model.add_job(gang("new", 1, 4, 100.0, attained=0.5 * HOUR))  # queue 0
    model.add_job(gang("newer", 1, 4, 200.0))                    # queue 0, FIFO after new
    session, _ = las_session(model, 300.0)
    order = sorted(model.jobs.values(), key=session.job_order_key)
    assert [j.name for j in order] == ["new", "newer", "old"]
    assert binds(cycle(model, 300.0)) == ["new/w/0@n0"]


def test_attained_service_counts_running_time_times_gpus_at_now() -> None:
    model = SchedulerModel(nodes(2))
    # Two 2-GPU tasks running since t=100, plus 100 GPU-seconds from an earlier run.
    model.add_job(running(gang("r", 2, 2, 0.0, attained=100.0), ["n0", "n1"], 100.0))
    # A task without a start time counts from now.
    model.add_job(running(gang("u", 1, 1, 0.0), ["n0"], None))
    session, las = las_session(model, 600.0)
    assert las.attained(model.jobs["r"]) == 100.0 + 500.0 * 4
    assert las.attained(model.jobs["u"]) == 0.0
    assert las.queue_index(model.jobs["r"]) == 0
    # 3600 - 2100 = 1500 GPU-seconds to the first threshold at 4 GPUs: 375 s from now; `u`
    # (1 GPU, from 0) would need 3600 s.
    assert las.next_change(session) == 600.0 + 375.0
    _, later = las_session(model, 975.0)
    assert later.queue_index(model.jobs["r"]) == 1


def test_next_change_is_none_when_no_running_job_has_a_threshold_ahead() -> None:
    model = SchedulerModel(nodes())
    model.add_job(running(gang("r", 1, 4, 0.0, attained=20 * HOUR), ["n0"], 0.0))
    model.add_job(gang("w", 1, 4, 1.0))
    session, las = las_session(model, 10.0)
    assert las.next_change(session) is None


def test_thresholds_must_increase() -> None:
    assert LasArguments(thresholds=[10.0]).thresholds == [10.0]
    for bad in ([10.0, 10.0], [20.0, 10.0], [-1.0], [float("inf")]):
        with pytest.raises(ValueError, match="thresholds"):
            LasArguments(thresholds=bad)
    with pytest.raises(ProfileError):
        Profile.from_dict({"actions": "allocate", "tiers": [
            {"plugins": [{"name": "las", "arguments": {"thresholds": [2.0, 1.0]}}]}]})


def test_las_profile_is_time_dependent() -> None:
    plugins = Profile.load("las").plugins()
    assert any(getattr(p, "time_dependent", False) for p in plugins)
    assert [a.name for a in Profile.load("las").actions()] == ["enqueue", "allocate",
                                                               "preempt"]


# ---- preempt ---------------------------------------------------------------------------------


def test_preempt_evicts_the_demoted_running_job_for_a_new_short_one() -> None:
    model = SchedulerModel(nodes())
    model.add_job(gang("long", 1, 4, 0.0))
    assert binds(cycle(model, 0.0)) == ["long/w/0@n0"]
    model.add_job(gang("short", 1, 4, 900.0))
    # At 900 `long` has 3600 GPU-seconds: queue 1; `short` (queue 0) takes its place.
    decisions = cycle(model, 900.0)
    assert evictions(decisions) == ["long/w/0@n0"]
    assert binds(decisions) == ["short/w/0@n0"]
    assert "short" in decisions.evictions[0].reason
    # The model requeued the victim: waiting, its task pending, holding nothing.
    long = model.jobs["long"]
    assert set(model.waiting) == {"long"}
    assert list(long.pending["w"]) == [0] and long.holding == 0 and not long.running
    assert [t.ref for t in model.jobs["short"].running] == [TaskRef("short", "w", 0)]
    assert model.node("n0").gpu == 0
    pending = decisions.pending_by_job()
    assert set(pending) == {"long"} and "preempted" in pending["long"].message
    # The driver carries the run's service into the requeued job (the simulator does this
    # when it applies the eviction); `long` then waits behind `short`: no thrashing back.
    long.job = replace(long.job, attained_gpu_seconds=long.job.attained_gpu_seconds + 3600.0)
    again = cycle(model, 905.0)
    assert not again.evictions and not again.binds


def test_preempt_takes_the_worst_ranked_victim() -> None:
    model = SchedulerModel(nodes(2))
    model.add_job(running(gang("q2", 1, 4, 0.0, attained=20 * HOUR), ["n0"], 0.0))
    model.add_job(running(gang("q1", 1, 4, 1.0, attained=2 * HOUR), ["n1"], 0.0))
    model.add_job(gang("p", 1, 4, 2.0))
    decisions = cycle(model, 10.0)
    assert evictions(decisions) == ["q2/w/0@n0"]
    assert binds(decisions) == ["p/w/0@n0"]
    assert model.jobs["q1"].holding == 1


def test_ties_in_rank_evict_the_most_recently_started_first() -> None:
    model = SchedulerModel(nodes(2))
    # Same queue (1) and submission time: equal rank; `late` started later.
    model.add_job(running(gang("early", 1, 4, 0.0, attained=2 * HOUR), ["n0"], 0.0))
    model.add_job(running(gang("late", 1, 4, 0.0, attained=2 * HOUR), ["n1"], 5.0))
    model.add_job(gang("p", 1, 4, 8.0))
    decisions = cycle(model, 10.0)
    assert evictions(decisions) == ["late/w/0@n1"]
    assert binds(decisions) == ["p/w/0@n1"]


def test_no_preemption_when_evicting_every_candidate_would_not_do() -> None:
    model = SchedulerModel(nodes())
    # `ahead` (queue 0, older than p) is no candidate; `behind` frees only 2 of 4 GPUs.
    model.add_job(running(gang("ahead", 1, 2, 0.0), ["n0"], 0.0))
    model.add_job(running(gang("behind", 1, 2, 1.0, attained=2 * HOUR), ["n0"], 0.0))
    model.add_job(gang("p", 1, 4, 2.0))
    before = (model.node("n0").gpu, model.node("n0").gpu_free_mask)
    decisions = cycle(model, 10.0)
    assert not decisions.evictions and not decisions.binds
    assert (model.node("n0").gpu, model.node("n0").gpu_free_mask) == before
    assert model.jobs["behind"].holding == 1 and set(model.waiting) == {"p"}


def test_no_preemption_when_freed_gpus_are_fragmented() -> None:
    model = SchedulerModel(nodes(2))
    # Each node: 2 GPUs of a job ahead of p, 2 of a job behind it. Evicting both jobs behind
    # frees 4 GPUs in all, but not 4 on one node: p's 4-GPU task still does not fit.
    model.add_job(running(gang("ahead", 2, 2, 0.0), ["n0", "n1"], 0.0))
    model.add_job(running(gang("b0", 1, 2, 1.0, attained=2 * HOUR), ["n0"], 0.0))
    model.add_job(running(gang("b1", 1, 2, 1.0, attained=2 * HOUR), ["n1"], 0.0))
    model.add_job(gang("p", 1, 4, 2.0))
    decisions = cycle(model, 10.0)
    assert not decisions.evictions and not decisions.binds
    assert model.jobs["b0"].holding == 1 and model.jobs["b1"].holding == 1


def test_a_gang_victim_is_evicted_whole() -> None:
    model = SchedulerModel(nodes(2))
    model.add_job(running(gang("big", 2, 4, 0.0, attained=2 * HOUR), ["n0", "n1"], 0.0))
    model.add_job(gang("p", 1, 4, 1.0))
    decisions = cycle(model, 10.0)
    # p needs one node, but `big` goes as a whole gang: both tasks.
    assert sorted(evictions(decisions)) == ["big/w/0@n0", "big/w/1@n1"]
    assert binds(decisions) == ["p/w/0@n0"]
    big = model.jobs["big"]
    assert sorted(big.pending["w"]) == [0, 1] and big.holding == 0
    assert model.node("n1").gpu == 4


def test_a_gang_preemptor_gets_its_whole_minimum() -> None:
    model = SchedulerModel(nodes(2))
    model.add_job(running(gang("v0", 1, 4, 0.0, attained=2 * HOUR), ["n0"], 0.0))
    model.add_job(running(gang("v1", 1, 4, 0.0, attained=3 * HOUR), ["n1"], 0.0))
    model.add_job(gang("p", 2, 4, 1.0))
    decisions = cycle(model, 10.0)
    assert sorted(evictions(decisions)) == ["v0/w/0@n0", "v1/w/0@n1"]
    assert sorted(binds(decisions)) == ["p/w/0@n0", "p/w/1@n1"]


def test_victims_the_preemptor_does_not_need_are_spared() -> None:
    model = SchedulerModel(nodes(2))
    # Worst first, `worst` (n0) is evicted first but frees only 2 GPUs next to `ahead`;
    # evicting `next` frees n1, where p fits. `worst` is then not needed and stays.
    model.add_job(running(gang("ahead", 1, 2, 0.0), ["n0"], 0.0))
    model.add_job(running(gang("worst", 1, 2, 1.0, attained=20 * HOUR), ["n0"], 0.0))
    model.add_job(running(gang("next", 1, 4, 1.0, attained=2 * HOUR), ["n1"], 0.0))
    model.add_job(gang("p", 1, 4, 2.0))
    decisions = cycle(model, 10.0)
    assert evictions(decisions) == ["next/w/0@n1"]
    assert binds(decisions) == ["p/w/0@n1"]
    assert model.jobs["worst"].holding == 1


def test_no_victims_from_other_virtual_clusters() -> None:
    vcs = (VirtualCluster("a"), VirtualCluster("b"))
    model = SchedulerModel(nodes(), vcs)
    model.add_job(running(gang("other", 1, 4, 0.0, queue="b", attained=20 * HOUR),
                          ["n0"], 0.0))
    model.add_job(gang("p", 1, 4, 1.0, queue="a"))
    decisions = cycle(model, 10.0)
    assert not decisions.evictions and not decisions.binds


def test_victims_come_from_the_preemptors_virtual_cluster_only() -> None:
    vcs = (VirtualCluster("a"), VirtualCluster("b"))
    model = SchedulerModel(nodes(2), vcs)
    model.add_job(running(gang("other", 1, 4, 0.0, queue="b", attained=20 * HOUR),
                          ["n0"], 0.0))
    model.add_job(running(gang("mine", 1, 4, 0.0, queue="a", attained=2 * HOUR),
                          ["n1"], 0.0))
    model.add_job(gang("p", 1, 4, 1.0, queue="a"))
    decisions = cycle(model, 10.0)
    assert evictions(decisions) == ["mine/w/0@n1"]
    assert binds(decisions) == ["p/w/0@n1"]


def test_equal_keys_do_not_preempt() -> None:
    model = SchedulerModel(nodes())
    # Same LAS queue, same submission time: neither ranks ahead, whatever the names say.
    model.add_job(running(gang("b", 1, 4, 5.0), ["n0"], 10.0))
    model.add_job(gang("a", 1, 4, 5.0))
    decisions = cycle(model, 20.0)
    assert not decisions.evictions and not decisions.binds


def test_a_newer_job_of_the_same_las_queue_does_not_preempt() -> None:
    model = SchedulerModel(nodes())
    model.add_job(running(gang("first", 1, 4, 0.0), ["n0"], 0.0))
    model.add_job(gang("second", 1, 4, 1.0))
    assert not cycle(model, 10.0).evictions


def test_jobs_placed_in_this_cycle_are_never_victims() -> None:
    model = SchedulerModel(nodes())
    # `v` holds 2 GPUs since before; p (queue 0) needs 4 and does not fit; `x` (queue 1 from
    # an earlier run) takes the 2 free GPUs in this cycle's allocate. Evicting `v` alone
    # would not do, and `x` was just placed: nothing is evicted.
    model.add_job(running(gang("v", 1, 2, 0.0, attained=2 * HOUR), ["n0"], 0.0))
    model.add_job(gang("p", 1, 4, 1.0))
    model.add_job(gang("x", 1, 2, 2.0, attained=2 * HOUR))
    decisions = cycle(model, 10.0)
    assert binds(decisions) == ["x/w/0@n0"]
    assert not decisions.evictions


def test_unschedulable_jobs_do_not_preempt() -> None:
    model = SchedulerModel(nodes())
    model.add_job(running(gang("v", 1, 4, 0.0, attained=20 * HOUR), ["n0"], 0.0))
    model.add_job(gang("huge", 1, 8, 1.0))  # more GPUs than any node has
    decisions = cycle(model, 10.0)
    assert not decisions.evictions
    assert decisions.pending_by_job()["huge"].kind == "Unschedulable"


def test_max_preemptors_per_cycle() -> None:
    doc: dict[str, Any] = {
        "name": "las-one", "actions": "enqueue, allocate, preempt",
        "configurations": [{"name": "allocate", "arguments": {"ordering": "global"}},
                           {"name": "preempt", "arguments": {"max_preemptors": 1}}],
        "tiers": [{"plugins": [{"name": "las"}, {"name": "gang"}]},
                  {"plugins": [{"name": "predicates"}, {"name": "capacity"},
                               {"name": "placement"}]}]}
    model = SchedulerModel(nodes(2))
    model.add_job(running(gang("v0", 1, 4, 0.0, attained=2 * HOUR), ["n0"], 0.0))
    model.add_job(running(gang("v1", 1, 4, 0.0, attained=3 * HOUR), ["n1"], 0.0))
    model.add_job(gang("p", 1, 4, 1.0))
    model.add_job(gang("q", 1, 4, 2.0))
    decisions = cycle(model, 10.0, Profile.from_dict(doc))
    assert evictions(decisions) == ["v1/w/0@n1"]
    assert binds(decisions) == ["p/w/0@n1"]
    # Without the limit both start.
    model2 = SchedulerModel(nodes(2))
    for job in ("v0", "v1", "p", "q"):
        model2.add_job(model.jobs[job].job if job in ("p", "q") else
                       running(gang(job, 1, 4, 0.0, attained=(2 if job == "v0" else 3)
                                    * HOUR), ["n0" if job == "v0" else "n1"], 0.0))
    both = cycle(model2, 10.0)
    assert sorted(evictions(both)) == ["v0/w/0@n0", "v1/w/0@n1"]
    assert sorted(binds(both)) == ["p/w/0@n1", "q/w/0@n0"]


def test_preemption_is_deterministic() -> None:
    def scenario() -> dict[str, Any]:
        model = SchedulerModel(nodes(3))
        model.add_job(running(gang("a", 2, 2, 0.0, attained=20 * HOUR), ["n0", "n1"], 0.0))
        model.add_job(running(gang("b", 1, 2, 1.0, attained=2 * HOUR), ["n0"], 0.0))
        model.add_job(running(gang("c", 1, 4, 2.0, attained=3 * HOUR), ["n2"], 0.0))
        model.add_job(gang("p", 2, 2, 3.0))
        model.add_job(gang("q", 1, 4, 4.0))
        out = [cycle(model, 10.0).to_dict(), cycle(model, 15.0).to_dict()]
        return {"cycles": out, "waiting": sorted(model.waiting)}
    first = scenario()
    assert first == scenario()
    assert first["cycles"][0]["evictions"]


def test_what_a_preemption_frees_beyond_its_need_serves_the_next_job() -> None:
    model = SchedulerModel(nodes())
    model.add_job(running(gang("v", 1, 4, 0.0, attained=2 * HOUR), ["n0"], 0.0))
    model.add_job(gang("p1", 1, 2, 1.0))
    model.add_job(gang("p2", 1, 2, 2.0))
    decisions = cycle(model, 10.0)
    assert evictions(decisions) == ["v/w/0@n0"]
    assert binds(decisions) == ["p1/w/0@n0", "p2/w/0@n0"]
    assert set(model.waiting) == {"v"}


def test_a_victim_elsewhere_frees_quota_for_a_preemptor_at_its_queue_limit() -> None:
    # Virtual cluster `a` may use 4 GPUs. `v` holds them on the V100 node; p wants the idle
    # A100 node and waits on the quota only: evicting `v` frees quota, not p's node.
    vcs = (VirtualCluster("a", max=ResourceLimit.of({"gpu": 4})),)
    cluster = tuple(Node(name, Resources.of(cpu=16_000, gpu=4), labels={"gpu-type": kind})
                    for name, kind in (("n0", "V100"), ("n1", "A100")))
    model = SchedulerModel(cluster, vcs)
    model.add_job(running(gang("v", 1, 4, 0.0, queue="a", attained=2 * HOUR), ["n0"], 0.0))
    model.add_job(Job("p", (TaskGroup("w", 1, Resources.of(cpu=1000, gpu=4),
                                      node_selector={"gpu-type": "A100"}),),
                      queue="a", scheduler_name=SchedulerName.SHOAL, submitted=1.0))
    decisions = cycle(model, 10.0)
    assert evictions(decisions) == ["v/w/0@n0"]
    assert binds(decisions) == ["p/w/0@n1"]


def test_a_victim_on_nodes_the_preemptor_cannot_use_is_not_evicted() -> None:
    cluster = tuple(Node(name, Resources.of(cpu=16_000, gpu=4), labels={"gpu-type": kind})
                    for name, kind in (("n0", "V100"), ("n1", "A100")))
    model = SchedulerModel(cluster)
    model.add_job(running(gang("v", 1, 4, 0.0, attained=20 * HOUR), ["n0"], 0.0))
    model.add_job(running(gang("w", 1, 4, 0.0, attained=2 * HOUR), ["n1"], 0.0))
    model.add_job(Job("p", (TaskGroup("w", 1, Resources.of(cpu=1000, gpu=4),
                                      node_selector={"gpu-type": "A100"}),),
                      scheduler_name=SchedulerName.SHOAL, submitted=1.0))
    decisions = cycle(model, 10.0)
    # `v` ranks worst but runs on the V100 node: only `w` is evicted.
    assert evictions(decisions) == ["w/w/0@n1"]
    assert binds(decisions) == ["p/w/0@n1"]
