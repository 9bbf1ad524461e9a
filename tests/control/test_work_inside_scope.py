"""`work_inside`: the live jobs inside a job's own virtual cluster and its sub-clusters —
those whose queue's owner is that job (`job_of_virtual_cluster`), never those of another
job whose name merely starts with its name."""

from __future__ import annotations

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup, VirtualCluster
from shoal.api.objects import job_of_virtual_cluster
from shoal.control.job_scope import work_inside
from shoal.scheduler import run_cycle
from shoal.scheduler.model import SchedulerModel

NODES = (Node("n0", Resources.of(cpu=16_000, memory=64_000)),)


def own(job: str) -> VirtualCluster:
    return VirtualCluster(f"job:{job}", min=Resources.of(cpu=2000))


def job(name: str, queue: str = "default", vc: VirtualCluster | None = None) -> Job:
    return Job(name, (TaskGroup("w", 1, Resources.of(cpu=1000, memory=1000)),), queue=queue,
               scheduler_name=SchedulerName.DEFAULT, virtual_cluster=vc)


def test_work_inside_is_the_jobs_whose_queue_the_job_owns() -> None:
    model = SchedulerModel(NODES)
    for driver in ("tune", "tuner"):
        model.add_job(job(driver, vc=own(driver)))
    run_cycle(model)  # the drivers run: their virtual clusters take work
    model.add_sub_clusters("tune", [VirtualCluster("job:tune/data", "job:tune",
                                                   Resources.of(cpu=1000))])
    model.add_job(job("in-own", "job:tune"))
    model.add_job(job("in-sub", "job:tune/data"))
    model.add_job(job("in-other", "job:tuner"))
    model.add_job(job("outside"))
    assert sorted(work_inside(model, "tune")) == ["in-own", "in-sub"]
    assert work_inside(model, "tuner") == ["in-other"]
    assert work_inside(model, "outside") == []
    for owner in ("tune", "tuner", "outside", "in-own"):  # the definition it keeps
        assert sorted(work_inside(model, owner)) == sorted(
            name for name, info in model.jobs.items()
            if name != owner and job_of_virtual_cluster(info.job.queue) == owner)
