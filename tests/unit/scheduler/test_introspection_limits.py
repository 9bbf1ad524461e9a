"""`virtual_cluster_status` with issue 16's borrowingLimit: what a virtual cluster is shown
to have available is what it may still take, its borrowing limit included."""

from __future__ import annotations

from shoal.api import (
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


def test_available_stops_at_the_borrowing_limit() -> None:
    # root (16 GPUs) ─ dept (min 4, borrowingLimit 2) ─ team (min 4); dept uses 5.
    model = SchedulerModel(
        [Node("n0", gpu(16))],
        [VirtualCluster("dept", min=gpu(4), borrowing_limit=ResourceLimit.of({"gpu": 2})),
         VirtualCluster("team", parent="dept", min=gpu(4))])
    tasks = tuple(Task("t", "w", i, TaskState.RUNNING, node="n0", gpus=(), started=0.0)
                  for i in range(5))
    model.add_jobs([Job("t", (TaskGroup("w", 5, gpu(1)),), queue="team",
                        scheduler_name=SchedulerName.DEFAULT, submitted=0.0, tasks=tasks)])
    status = virtual_cluster_status(model)
    assert status["root"].available == gpu(11)
    assert status["dept"].available == gpu(1)  # 4 + 2 − 5, though 11 are idle
    assert status["team"].available == gpu(1)
    assert status["dept"].borrowed == gpu(1) and status["team"].borrowed == gpu(1)
    assert status["default"].available == gpu(11)  # dept is owed nothing more
