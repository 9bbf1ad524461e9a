"""Small builders shared by the store tests."""

from __future__ import annotations

from shoal.api import Job, Resources, SchedulerName, TaskGroup


def make_job(name: str, *, replicas: int = 2, gang: bool = True, min_available: int | None = None,
             queue: str = "default", user: str | None = "alice", submitted: float = 0.0,
             gpu: int = 1) -> Job:
    return Job(
        name=name,
        groups=(
            TaskGroup("master", 1, Resources.of(cpu=500, memory=1024),
                      command=("python", "master.py"), env={"A": "1"}),
            TaskGroup("worker", replicas, Resources.of(cpu=2000, memory=4096, gpu=gpu,
                                                       extras={"rdma/hca": 1}),
                      command=("python", "train.py"), node_selector={"gpu-type": "a100"},
                      working_dir="/work"),
        ),
        queue=queue,
        scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT,
        min_available=min_available,
        min_resources=Resources.of(cpu=4500, gpu=2) if gang else None,
        priority_class="normal",
        user=user,
        submitted=submitted,
        runtime_estimate=3600.0,
    )
