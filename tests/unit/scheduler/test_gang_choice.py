"""Which of a gang's pending tasks start it (`shoal.scheduler.gang_choice`): any
`minAvailable` of them, split across its task groups as room allows, and the bounds the
cheap checks use hold for every such choice."""

from __future__ import annotations

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup
from shoal.api.objects import QueueingPolicy
from shoal.core import Snapshot
from shoal.scheduler import Profile, run_cycle
from shoal.scheduler.gang_choice import GangNeed, least_request, room_suffices
from shoal.scheduler.jobs import JobInfo


def job(*groups: tuple[str, int, int], min_available: int) -> Job:
    """A gang of (group name, replicas, GPUs per task) groups."""
    return Job("j", tuple(TaskGroup(name, replicas, Resources.of(cpu=1000 * max(gpu, 1), gpu=gpu))
                          for name, replicas, gpu in groups),
               scheduler_name=SchedulerName.SHOAL, min_available=min_available)


def test_the_minimum_is_split_across_groups_as_room_allows() -> None:
    """minAvailable 3 of `a` (2 × 3 GPUs) and `b` (2 × 1 GPU) on one 5-GPU node: the first
    three in task order (a, a, b) need 7 GPUs and do not fit; a then places the one replica
    that fits and b makes up the other two — 5 GPUs."""
    snapshot = Snapshot((Node("n0", Resources.of(cpu=16_000, memory=65_536, gpu=5)),),
                        (job(("a", 2, 3), ("b", 2, 1), min_available=3),))
    decisions = run_cycle(snapshot, Profile.default())
    placed = sorted((b.task.group, b.task.index) for b in decisions.binds)
    assert placed == [("a", 0), ("b", 0), ("b", 1)], decisions.pending


def test_least_request_takes_the_smallest_tasks_per_dimension() -> None:
    """Per dimension the `count` smallest amounts among the pending tasks, so no choice asks
    less in any dimension."""
    info = JobInfo(job(("a", 2, 3), ("b", 1, 1), min_available=2), 0, "default",
                   QueueingPolicy.PRIORITY)
    least = least_request(info, GangNeed(2))
    assert least.gpu == 1 + 3
    assert least.cpu == 1000 + 3000  # b's task (1 GPU) and one of a's (3 GPUs)


def test_room_suffices_caps_each_group_at_its_pending_tasks() -> None:
    assert room_suffices(GangNeed(3), [("a", 10, 1), ("b", 2, 2)])
    assert not room_suffices(GangNeed(3), [("a", 10, 1), ("b", 1, 2)])


def test_room_suffices_needs_each_groups_floor() -> None:
    # Room for 3 in all, but group a (floor 1) has room for none of its own.
    assert not room_suffices(GangNeed(3, (("a", 1),)), [("a", 0, 1), ("b", 5, 5)])
    assert room_suffices(GangNeed(3, (("a", 1),)), [("a", 1, 1), ("b", 5, 5)])


def master_workers(master_gpu: int, workers: int, min_available: int) -> Job:
    """A gang of one master (`minAvailable: 1` of its own) and `workers` one-GPU workers."""
    master = Resources.of(cpu=1000 * max(master_gpu, 1), gpu=master_gpu)
    return Job("j", (TaskGroup("master", 1, master,
                               min_available=1),
                     TaskGroup("worker", workers, Resources.of(cpu=1000, gpu=1))),
               scheduler_name=SchedulerName.SHOAL, min_available=min_available)


def test_least_request_counts_a_groups_floor_in_full() -> None:
    """The master's floor is in every choice: the bound is its 4 GPUs plus the cheapest
    worker, not the two cheapest tasks (two workers)."""
    info = JobInfo(master_workers(4, 3, min_available=2), 0, "default",
                   QueueingPolicy.PRIORITY)
    need = GangNeed(2, tuple(info.shortfalls()))
    assert need.floors == (("master", 1),)
    assert least_request(info, need).gpu == 4 + 1


def test_a_gang_below_a_groups_minimum_does_not_start() -> None:
    """Workers fit (3 GPUs free) but the master (4 GPUs) does not: minAvailable 2 would be
    met by two workers, the master's own minimum is not, so nothing starts."""
    snapshot = Snapshot((Node("n0", Resources.of(cpu=16_000, memory=65_536, gpu=3)),),
                        (master_workers(4, 3, min_available=2),))
    decisions = run_cycle(snapshot, Profile.default())
    assert decisions.binds == []
    assert [p.job for p in decisions.pending] == ["j"]


def test_a_groups_floor_is_placed_before_earlier_tasks_in_order() -> None:
    """minAvailable 2, the master listed last: the first two in task order are workers, but
    the master's floor comes first, then one worker."""
    job = Job("j", (TaskGroup("worker", 3, Resources.of(cpu=1000, gpu=1)),
                    TaskGroup("master", 1, Resources.of(cpu=1000, gpu=1), min_available=1)),
              scheduler_name=SchedulerName.SHOAL, min_available=2)
    snapshot = Snapshot((Node("n0", Resources.of(cpu=16_000, memory=65_536, gpu=2)),), (job,))
    decisions = run_cycle(snapshot, Profile.default())
    placed = sorted((b.task.group, b.task.index) for b in decisions.binds)
    assert placed == [("master", 0), ("worker", 0)], decisions.pending
