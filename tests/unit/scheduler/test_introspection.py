"""`virtual_cluster_status`: what each virtual cluster is guaranteed, uses, borrows and could
still take, its place in the tree and its jobs, read off a scheduler model."""

from __future__ import annotations

from shoal.api import (
    FixedSizeNode,
    FixedSizeNodes,
    Job,
    Node,
    ResourceLimit,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskState,
    VirtualCluster,
)
from shoal.scheduler.introspection import virtual_cluster_status
from shoal.scheduler.model import SchedulerModel


def gpu(n: int) -> Resources:
    return Resources.of(gpu=n)


def job(name: str, queue: str, gpus: int, replicas: int, running: int) -> Job:
    tasks = tuple(Task(name, "w", i, TaskState.RUNNING, node="n0", gpus=(), started=0.0)
                  for i in range(running))
    return Job(name, (TaskGroup("w", replicas, gpu(gpus)),), queue=queue,
               scheduler_name=SchedulerName.DEFAULT, submitted=0.0, tasks=tasks)


def test_status_reads_guarantees_usage_borrowing_and_jobs() -> None:
    # root (16 GPUs) ─ org (min 8, max 12) ─ team (min 2 + fixed 2×1)
    #                └ lab (min 4)
    model = SchedulerModel(
        [Node("n0", gpu(16))],
        [VirtualCluster("org", min=gpu(8), max=ResourceLimit.of({"gpu": 12})),
         VirtualCluster("team", parent="org", min=gpu(2), fixed_size_nodes=(
             FixedSizeNodes((FixedSizeNode(gpu(1)), FixedSizeNode(gpu(1)))),)),
         VirtualCluster("lab", min=gpu(4))])
    model.add_jobs([job("train", "team", 3, 3, running=2),   # 6 GPUs in team
                    job("wait", "lab", 8, 1, running=0),
                    job("eval", "default", 1, 2, running=1)])
    status = virtual_cluster_status(model)
    team, org, lab, root = status["team"], status["org"], status["lab"], status["root"]
    assert root.parent is None and set(root.children) == {"org", "lab", "default"}
    assert (team.parent, org.children) == ("org", ("team",))
    assert team.guaranteed == gpu(4) and team.used == gpu(6) and team.borrowed == gpu(2)
    assert team.ceiling.is_unlimited()
    assert org.used == gpu(6) and org.borrowed == Resources()
    assert org.ceiling == ResourceLimit.of({"gpu": 12})
    # 9 GPUs idle. org still owes itself 2 (min 8, uses 6), lab is owed its 4.
    assert root.used == gpu(7) and root.available == gpu(9)
    assert org.available == gpu(5)  # 9 − lab's 4 (its max would allow 6 more)
    assert team.available == gpu(5)  # what org may take, team being its only child
    assert lab.available == gpu(7)  # 9 − org's 2
    assert status["default"].available == gpu(3)  # 9 − org's 2 − lab's 4
    assert (team.running_jobs, team.running_tasks, team.pending_jobs) == (1, 2, 1)
    assert (lab.running_jobs, lab.pending_jobs) == (0, 1)
    assert (status["default"].running_tasks, status["default"].pending_jobs) == (1, 1)
    # What waits is what the tasks still to place ask for, in the job's own cluster only.
    assert (team.waiting, lab.waiting, status["default"].waiting) == (gpu(3), gpu(8), gpu(1))
    assert org.waiting == Resources() and root.waiting == Resources()
