"""The atomic reservation of fixed-size nodes in the scheduler model: carved when capacity
frees up (before jobs take it), restored where recorded after a rebuild, given back when a
node goes, and seen by introspection. The scenario tables (tests/scenario/cases/
vc-fixed-nodes-*.yaml) show the placement rules; these follow the model across cycles."""

from __future__ import annotations

from dataclasses import replace

from shoal.api import (
    FixedSizeNode,
    FixedSizeNodes,
    Job,
    Node,
    PendingKind,
    PlacementPolicy,
    ResourceLimit,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskRef,
    TaskState,
    VirtualCluster,
    VirtualNodePlacement,
)
from shoal.api.decisions import Decisions
from shoal.api.objects import VIRTUAL_CLUSTER_LABEL
from shoal.core import Snapshot
from shoal.scheduler import run_cycle
from shoal.scheduler.introspection import virtual_cluster_status
from shoal.scheduler.model import SchedulerModel

NODES = tuple(Node(f"n{i}", Resources.of(cpu=32_000, gpu=8)) for i in range(2))


def gpu(n: int) -> Resources:
    return Resources.of(cpu=1000 * max(n, 1), gpu=n)


def fixed(*sizes: int, policy: PlacementPolicy = PlacementPolicy.STRICT_SPREAD,
          labels: dict[str, str] | None = None) -> tuple[FixedSizeNodes, ...]:
    return (FixedSizeNodes(tuple(FixedSizeNode(Resources.of(cpu=1000 * s, gpu=s), labels or {})
                                 for s in sizes), policy),)


def job(name: str, queue: str, gpus: int, replicas: int = 1, at: float = 0.0,
        tasks: tuple[Task, ...] = (), selector: dict[str, str] | None = None) -> Job:
    return Job(name, (TaskGroup("w", replicas, gpu(gpus), node_selector=selector or {}),),
               queue=queue, scheduler_name=SchedulerName.DEFAULT, submitted=at, tasks=tasks)



def binds(decisions: Decisions) -> dict[str, tuple[str, str | None]]:
    return {str(b.task): (b.node, b.virtual_node) for b in decisions.binds}


def test_a_queued_reservation_is_carved_when_capacity_frees_before_jobs_take_it() -> None:
    vc = VirtualCluster("late", fixed_size_nodes=fixed(8, 8))
    model = SchedulerModel(NODES, [vc])
    model.add_job(job("hog", "default", 4, tasks=(
        Task("hog", "w", 0, TaskState.RUNNING, "n0", (0, 1, 2, 3), 0.0),)))
    model.add_job(job("mine", "late", 8))
    first = run_cycle(model)
    assert first.reservations == [] and first.binds == []
    [waiting] = [p.reason for p in first.pending if p.job == "mine"]
    assert waiting.kind is PendingKind.RESERVATION and "STRICT_SPREAD" in waiting.message
    assert virtual_cluster_status(model)["late"].reservation.startswith("fixedSizeNodes[0]")

    # hog ends and a default job arrives that would take the freed GPUs: the carving
    # comes first, in the same cycle, and the VC's job runs on its virtual node.
    model.remove_job("hog")
    model.add_job(job("grab", "default", 4, at=1.0))
    second = run_cycle(model)
    [change] = second.reservations
    assert change.virtual_cluster == "late"
    assert change.placements == (VirtualNodePlacement("n0", tuple(range(8))),
                                 VirtualNodePlacement("n1", tuple(range(8))))
    assert binds(second) == {"mine/w/0": ("n0", "late/0")}
    [grab] = [p.reason for p in second.pending if p.job == "grab"]
    assert grab.kind is PendingKind.INSUFFICIENT_RESOURCES
    status = virtual_cluster_status(model)["late"]
    assert status.reservation == "reserved"
    assert [(v.name, v.node, v.used.gpu, v.available.gpu) for v in status.virtual_nodes] == \
        [("late/0", "n0", 8, 0), ("late/1", "n1", 0, 8)]
    assert status.virtual_nodes[0].labels[VIRTUAL_CLUSTER_LABEL] == "late"
    assert status.guaranteed.gpu == 16 and status.used.gpu == 8 and status.borrowed.gpu == 0


def test_tasks_on_virtual_nodes_are_not_charged_to_the_quota_tree() -> None:
    # 16 GPUs, 4 carved for `tune` (max 2 flexible). default borrows 8 of the 12 left; tune
    # runs 4 on its virtual node and 2 more on the flexible part, and no more.
    tune = VirtualCluster("tune", max=ResourceLimit.of({"gpu": 2}), fixed_size_nodes=fixed(4))
    model = SchedulerModel(NODES, [tune])
    model.add_job(job("wide", "default", 4, replicas=2))
    model.add_job(job("trials", "tune", 1, replicas=7, at=1.0))
    decisions = run_cycle(model)
    placed = binds(decisions)
    on_virtual = [t for t, (_, v) in placed.items() if v == "tune/0"]
    assert len(on_virtual) == 4 and all(t.startswith("trials/") for t in on_virtual)
    assert sum(1 for t, (_, v) in placed.items() if t.startswith("trials/") and v is None) \
        == 2
    assert sum(1 for t in placed if t.startswith("wide/")) == 2
    status = virtual_cluster_status(model)
    assert status["tune"].used.gpu == 6 and status["tune"].ceiling.get("gpu") == 6
    assert model.quota.get("tune").usage.gpu == 2  # only the flexible part


def test_a_rebuilt_model_restores_the_carving_and_counts_its_tasks_on_it() -> None:
    vc = VirtualCluster("tune", fixed_size_nodes=fixed(2, 2, policy=PlacementPolicy.PACK))
    model = SchedulerModel(NODES, [vc])
    model.add_job(job("a", "tune", 1, replicas=3))
    decisions = run_cycle(model)
    [change] = decisions.reservations
    # What a driver stores: the carving, and the tasks on the physical nodes of the binds.
    tasks = tuple(Task("a", "w", b.task.index, TaskState.RUNNING, b.node, b.gpus, 0.0)
                  for b in decisions.binds)
    rebuilt = SchedulerModel.from_snapshot(Snapshot(
        NODES, (replace(job("a", "tune", 1, replicas=3), tasks=tasks),),
        (replace(vc, reservation=change.placements),)))
    assert rebuilt.reserve() == []  # nothing to carve again
    assert rebuilt.reservations.placements["tune"] == change.placements
    assert rebuilt.quota.get("tune").usage.is_zero()
    before = {v.name: v.used for v in virtual_cluster_status(model)["tune"].virtual_nodes}
    after = {v.name: v.used for v in virtual_cluster_status(rebuilt)["tune"].virtual_nodes}
    assert before == after and sum(u.gpu for u in after.values()) == 3


def test_a_recorded_carving_that_no_longer_fits_is_carved_again() -> None:
    vc = VirtualCluster("tune", fixed_size_nodes=fixed(4),
                        reservation=(VirtualNodePlacement("gone", (0, 1, 2, 3)),))
    model = SchedulerModel(NODES, [vc])
    assert "tune" in model.reservations.queued
    # The driver hears that its record is void, then where the carving is now.
    gone, change = model.reserve()
    assert gone.placements is None and "no longer fits" in gone.reason
    assert change.placements is not None and change.placements[0].node == "n0"


def test_cordoning_a_host_gives_the_whole_reservation_back_and_queues_it_again() -> None:
    vc = VirtualCluster("tune", fixed_size_nodes=fixed(8, 8))
    model = SchedulerModel(NODES, [vc])
    model.add_job(job("a", "tune", 8))
    decisions = run_cycle(model)
    assert binds(decisions) == {"a/w/0": ("n0", "tune/0")}
    model.release_task(TaskRef("a", "w", 0))
    model.cordon("n0")
    [change] = model.reserve()
    assert change.placements is None and "n0" in change.reason
    assert "tune/1" not in model.cluster.by_name  # the n1 virtual node went back too
    assert model.node("n1").free().gpu == 8
    assert model.quota.capacity.gpu == 8  # n1 only: the fixed part is in the tree again
    waiting = run_cycle(model)
    assert [p.reason.kind for p in waiting.pending] == [PendingKind.RESERVATION]
    model.uncordon("n0")
    again = run_cycle(model)
    assert [c.placements is not None for c in again.reservations] == [True]
    assert binds(again) == {"a/w/0": ("n0", "tune/0")}


def test_virtual_node_labels_are_matched_by_node_selectors() -> None:
    groups = (FixedSizeNodes((FixedSizeNode(gpu(2), {"role": "ps"}),
                              FixedSizeNode(gpu(2), {"role": "worker"})),
                             PlacementPolicy.STRICT_SPREAD),)
    model = SchedulerModel(NODES, [VirtualCluster("vc", fixed_size_nodes=groups,
                                                  max=ResourceLimit.of({"gpu": 0}))])
    model.add_job(job("w", "vc", 2, selector={"role": "worker"}))
    model.add_job(job("x", "vc", 2, at=1.0, selector={"role": "worker"}))
    decisions = run_cycle(model)
    # No physical node has the label: only the `worker` virtual node (on n1) can take them.
    assert binds(decisions) == {"w/w/0": ("n1", "vc/1")}
    [(name, reason)] = [(p.job, p.reason) for p in decisions.pending]
    assert name == "x" and reason.kind is PendingKind.QUEUE_LIMIT


def test_a_carving_never_takes_the_room_a_vc_queued_behind_it_needs() -> None:
    # Found by tests/property/test_fixed_nodes.py. Four 4-GPU nodes; carvable all together
    # (the spec check), but carving `pack` where it first fits (n0) and then `pair` (4 on
    # n1, 2 beside `pack` on n0) leaves two nodes for `three`'s STRICT_SPREAD of three.
    nodes = [Node(f"n{i}", Resources.of(cpu=4000, gpu=4)) for i in range(4)]
    vcs = [VirtualCluster("pack", fixed_size_nodes=fixed(1, 1, policy=PlacementPolicy.PACK)),
           VirtualCluster("pair", fixed_size_nodes=fixed(2, 4)),
           VirtualCluster("three", fixed_size_nodes=fixed(1, 1, 1))]
    model = SchedulerModel(nodes, vcs)
    changes = model.reserve()
    assert [c.virtual_cluster for c in changes] == ["pack", "pair", "three"]
    three = changes[2].placements
    assert three is not None and len({p.node for p in three}) == 3


def test_a_vc_whose_place_now_would_strand_the_others_is_carved_where_it_is_planned() -> None:
    # Found by tests/property/test_fixed_nodes.py: carved where it first fits (alone, or as
    # part of a carving of all three), `one` leaves the 4-GPU virtual node of `big` no whole
    # node. Carved where the plan of all three puts it, it does not.
    nodes = [Node(f"n{i}", Resources.of(cpu=4000, gpu=4)) for i in range(4)]
    vcs = [VirtualCluster("one", fixed_size_nodes=fixed(1, policy=PlacementPolicy.PACK)),
           VirtualCluster("three", fixed_size_nodes=fixed(1, 1, 1,
                                                          policy=PlacementPolicy.SPREAD)),
           VirtualCluster("big", fixed_size_nodes=fixed(1, 4, policy=PlacementPolicy.PACK))]
    model = SchedulerModel(nodes, vcs)
    changes = model.reserve()
    assert [c.virtual_cluster for c in changes] == ["one", "three", "big"]
    assert all(c.placements is not None for c in changes)


# ---- job-scoped virtual clusters ----------------------------------------------------------

def own(job_: Job, vc: VirtualCluster) -> Job:
    return replace(job_, virtual_cluster=vc)


def test_a_jobs_own_virtual_cluster_is_created_charged_and_removed_with_it() -> None:
    team = VirtualCluster("team", min=gpu(8))
    model = SchedulerModel(NODES, [team])
    pg = own(job("pg", "team", 2, replicas=3), VirtualCluster(
        "ignored", min=gpu(2), fixed_size_nodes=fixed(2, 2, policy=PlacementPolicy.SPREAD)))
    model.add_job(pg)
    assert "job:pg" not in model.quota.queues  # created by the cycle, not on arrival
    decisions = run_cycle(model)
    assert [c.virtual_cluster for c in decisions.reservations] == ["job:pg"]
    placed = binds(decisions)
    assert sorted(v or "-" for _, v in placed.values()) == ["-", "job:pg/0", "job:pg/1"]
    vc = model.quota.get("job:pg")
    assert vc.parent is not None and vc.parent.name == "team"
    assert vc.usage.gpu == 2  # the third task, on the flexible part; two on its bundles
    status = virtual_cluster_status(model)
    assert status["job:pg"].running_tasks == 3 and "job:pg" in status["team"].children
    assert status["team"].used.gpu == 6

    model.remove_job("pg")  # the job ended: its virtual cluster goes, all given back
    assert "job:pg" not in model.quota.queues and "job:pg/0" not in model.cluster.by_name
    assert model.quota.get("team").children == [] and model.quota.get("team").usage.is_zero()
    assert all(model.node(n.name).free() == n.allocatable_resources for n in NODES)
    assert model.quota.capacity.gpu == 16


def test_a_restarted_model_charges_a_running_job_to_its_own_cluster() -> None:
    vc = VirtualCluster("x", fixed_size_nodes=fixed(4))
    model = SchedulerModel(NODES)
    model.add_job(own(job("pg", "default", 4, replicas=2), vc))
    decisions = run_cycle(model)
    [change] = decisions.reservations
    tasks = tuple(Task("pg", "w", b.task.index, TaskState.RUNNING, b.node, b.gpus, 0.0)
                  for b in decisions.binds)
    stored = own(replace(job("pg", "default", 4, replicas=2), tasks=tasks),
                 replace(vc, reservation=change.placements))
    rebuilt = SchedulerModel.from_snapshot(Snapshot(NODES, (stored,)))
    assert rebuilt.reserve() == []
    assert rebuilt.jobs["pg"].account == "job:pg"
    assert rebuilt.reservations.placements["job:pg"] == change.placements
    # One task on its bundle (outside the quota tree), one on the flexible part.
    assert rebuilt.quota.get("job:pg").usage.gpu == 4
    assert rebuilt.quota.get("default").usage.gpu == 4


def test_the_admission_check_refuses_a_job_whose_cluster_could_never_be_created() -> None:
    from shoal.scheduler.actions.enqueue import admission_check

    team = VirtualCluster("team", max=ResourceLimit.of({"gpu": 4}))
    too_big = own(job("a", "team", 1), VirtualCluster("a", min=gpu(8)))
    reason = admission_check(too_big, NODES, [team])
    assert reason is not None and reason.kind is PendingKind.UNSCHEDULABLE
    assert "can never be created in 'team'" in reason.message
    spread = own(job("b", "default", 1), VirtualCluster("b", fixed_size_nodes=fixed(1, 1, 1)))
    reason = admission_check(spread, NODES, [team])
    assert reason is not None and "STRICT_SPREAD needs 3 distinct nodes" in reason.message
    fine = own(job("c", "team", 1), VirtualCluster("c", min=gpu(4)))
    assert admission_check(fine, NODES, [team]) is None


def test_a_vc_holds_one_flexible_virtual_node_per_physical_node() -> None:
    # tune: one 2-GPU fixed-size node; five 1-GPU tasks, bin-packed. Two go to the virtual
    # node; the other three, on the flexible part, make one flexible node per physical node
    # they are on, each the sum of what its tasks hold there.
    model = SchedulerModel(NODES, [VirtualCluster("tune", fixed_size_nodes=fixed(2))])
    model.add_job(job("a", "tune", 1, replicas=3))
    model.add_job(job("b", "tune", 1, replicas=2, at=1.0))
    decisions = run_cycle(model)
    placed = binds(decisions)
    assert sum(1 for _, v in placed.values() if v == "tune/0") == 2
    flexible = virtual_cluster_status(model)["tune"].flexible_nodes
    per_node: dict[str, int] = {}
    for _, (node, virtual) in placed.items():
        if virtual is None:
            per_node[node] = per_node.get(node, 0) + 1
    assert [(f.name, f.node, f.used.gpu) for f in flexible] == \
        [(f"tune/flexible/{n}", n, g) for n, g in sorted(per_node.items())]
    assert len({f.node for f in flexible}) == len(flexible)
    assert sum(f.used.gpu for f in flexible) == 3
    assert virtual_cluster_status(model)["default"].flexible_nodes == ()


def test_job_clusters_are_created_by_priority_in_a_priority_queue_and_in_order_in_fifo(
        ) -> None:
    from shoal.api import QueueingPolicy

    def first_created(queueing: QueueingPolicy) -> str:
        team = VirtualCluster("team", min=gpu(8), max=ResourceLimit.of({"gpu": 8}),
                              queueing=queueing)
        model = SchedulerModel(NODES, [team])
        low = own(job("low", "team", 1), VirtualCluster("x", min=gpu(8)))
        high = own(replace(job("high", "team", 1, at=1.0), priority_class="production"),
                   VirtualCluster("x", min=gpu(8)))
        model.add_jobs([low, high])
        model.reserve()
        made = [n for n in model.quota.queues if n.startswith("job:")]
        assert len(made) == 1  # team can guarantee one of them only
        return made[0]

    assert first_created(QueueingPolicy.PRIORITY) == "job:high"
    assert first_created(QueueingPolicy.FIFO) == "job:low"


# ---- flexible parts kept for an idle time --------------------------------------------------

def test_a_vcs_flexible_part_is_kept_for_its_idle_time_then_given_back() -> None:
    # One 8-GPU node. tune (idle timeout 60 s) ran a 4-GPU trial that just ended; other's
    # job waits for 8 GPUs. For 60 s the 4 GPUs stay tune's: other cannot start, and tune's
    # next trial reuses them; after 60 s of idleness they go back and other starts.
    node = [Node("n0", Resources.of(cpu=32_000, gpu=8))]
    tune = VirtualCluster("tune", idle_timeout=60.0)
    model = SchedulerModel(node, [tune])
    model.add_job(job("t1", "tune", 4))
    assert binds(run_cycle(model)) == {"t1/w/0": ("n0", None)}
    model.now = 10.0
    model.remove_job("t1")  # ended
    status = virtual_cluster_status(model)["tune"]
    assert [(f.node, f.used.gpu, f.kept.gpu) for f in status.flexible_nodes] == [("n0", 0, 4)]
    assert status.used.gpu == 4  # still charged to tune: nobody else takes it
    model.add_job(job("other", "default", 8, at=11.0))
    model.now = 20.0
    decisions = run_cycle(model)
    assert decisions.binds == [] and [p.job for p in decisions.pending] == ["other"]
    model.add_job(job("t2", "tune", 2, at=21.0))
    model.now = 30.0
    assert binds(run_cycle(model)) == {"t2/w/0": ("n0", "tune/flexible/n0")}
    model.now = 40.0
    model.remove_job("t2")  # the kept part is whole again; its idle time starts anew
    model.now = 99.0
    assert run_cycle(model).binds == []  # 59 s idle: still kept
    model.now = 100.0
    assert binds(run_cycle(model)) == {"other/w/0": ("n0", None)}
    assert virtual_cluster_status(model)["tune"].used.is_zero()
    assert "tune/flexible/n0" not in model.cluster.by_name


def test_without_an_idle_timeout_the_flexible_part_goes_back_at_once() -> None:
    node = [Node("n0", Resources.of(cpu=32_000, gpu=8))]
    model = SchedulerModel(node, [VirtualCluster("tune")])
    model.add_job(job("t1", "tune", 4))
    run_cycle(model)
    model.remove_job("t1")
    assert model.quota.get("tune").usage.is_zero() and model.node("n0").free().gpu == 8
    assert model.holds.kept == {}


def test_kept_parts_count_against_the_vcs_max_and_go_with_a_cordoned_node() -> None:
    tune = VirtualCluster("tune", idle_timeout=60.0, max=ResourceLimit.of({"gpu": 4}))
    model = SchedulerModel(NODES, [tune])
    model.add_job(job("t1", "tune", 4))
    run_cycle(model)
    [task] = model.jobs["t1"].running
    model.remove_job("t1")
    model.add_job(job("t2", "tune", 2, at=1.0))  # fits only in the kept part (max 4)
    assert binds(run_cycle(model)) == {"t2/w/0": (task.node, f"tune/flexible/{task.node}")}
    model.add_job(job("t3", "tune", 4, at=2.0))
    waiting = run_cycle(model)
    assert [(p.job, p.reason.kind) for p in waiting.pending] == \
        [("t3", PendingKind.QUEUE_LIMIT)]
    model.release_task(TaskRef("t2", "w", 0))
    model.withdraw("t2")
    model.cordon(task.node)
    assert model.holds.kept == {} and model.quota.get("tune").usage.is_zero()


def test_a_higher_priority_jobs_cluster_is_carved_before_one_queued_earlier() -> None:
    from shoal.api import QueueingPolicy

    def carved(queueing: QueueingPolicy) -> list[str]:
        # Two 4-GPU nodes, one GPU of each busy: 6 free, 3 per node. `low` asks one 4-GPU
        # bundle (granted, but no node has 4 free: it queues for its carving); `high`, later,
        # a 2-GPU bundle.
        team = VirtualCluster("team", queueing=queueing)
        nodes = [Node(f"n{i}", Resources.of(cpu=8000, gpu=4)) for i in range(2)]
        model = SchedulerModel(nodes, [team])
        model.add_job(job("hog", "default", 1, replicas=2, tasks=tuple(
            Task("hog", "w", i, TaskState.RUNNING, f"n{i}", (0,), 0.0) for i in range(2))))
        model.add_job(own(job("low", "team", 1), VirtualCluster(
            "x", fixed_size_nodes=fixed(4, policy=PlacementPolicy.PACK))))
        assert model.reserve() == [] and "job:low" in model.reservations.queued
        model.add_job(own(replace(job("high", "team", 1, at=1.0), priority_class="production"),
                          VirtualCluster("x", fixed_size_nodes=fixed(2))))
        return [c.virtual_cluster for c in model.reserve()]

    assert carved(QueueingPolicy.PRIORITY) == ["job:high"]  # ahead of low in the line
    assert carved(QueueingPolicy.FIFO) == []  # behind low, which cannot be carved yet


def test_a_selector_matching_only_a_too_small_virtual_node_is_refused_with_a_reason() -> None:
    # The job's own cluster has one 2-GPU virtual node labelled pool=mine; its task asks
    # 4 GPUs and selects that label, so no physical node matches and the virtual node is
    # too small: a verdict, not `max()` of no nodes.
    from shoal.scheduler.actions.enqueue import admission_check

    tight = own(job("t", "default", 4, selector={"pool": "mine"}),
                VirtualCluster("t", fixed_size_nodes=fixed(2, labels={"pool": "mine"})))
    reason = admission_check(tight, NODES, [])
    assert reason is not None and reason.kind is PendingKind.UNSCHEDULABLE
    assert "more than any of the 1 matching node" in reason.message
    # It asks one CPU per GPU, so CPU is short too: the first short dimension is named.
    assert reason.resource == "cpu" and "gpu=4" in reason.message
