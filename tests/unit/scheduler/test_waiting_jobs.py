"""The model's waiting jobs in submission order (`shoal.scheduler.waiting`), the enqueue
action's lazy admissions (`shoal.scheduler.admissions`) and job classes
(`shoal.scheduler.job_classes`)."""

from __future__ import annotations

from shoal.api import Job, QueueingPolicy, Resources, SchedulerName, TaskGroup
from shoal.scheduler.admissions import Admissions
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.waiting import WaitingJobs


def info(name: str, submitted: float, gpus: int = 1, min_resources: bool = False) -> JobInfo:
    job = Job(name, (TaskGroup("w", 2, Resources.of(cpu=1000, gpu=gpus)),),
              scheduler_name=SchedulerName.SHOAL, submitted=submitted,
              min_resources=Resources.of(gpu=gpus) if min_resources else None)
    return JobInfo(job, 0, "default", QueueingPolicy.PRIORITY)


def test_waiting_jobs_walk_in_submission_order_whatever_the_insertion_order() -> None:
    waiting = WaitingJobs()
    jobs = [info("c", 3.0), info("a", 1.0), info("b2", 2.0), info("b1", 2.0)]
    for job in jobs:
        waiting[job.name] = job
    assert [j.name for j in waiting.in_order()] == ["a", "b1", "b2", "c"]
    assert waiting.pop("b1") is jobs[3] and waiting.pop("nope", None) is None
    waiting["a"] = jobs[1]  # again: still once
    del waiting["c"]
    assert [j.name for j in waiting.in_order()] == ["a", "b2"]
    assert sorted(waiting) == ["a", "b2"]


def test_counts_follow_the_jobs_that_wait() -> None:
    waiting = WaitingJobs()
    gated = info("g", 1.0, min_resources=True)
    waiting["g"] = gated
    waiting["g"] = gated
    assert waiting.with_min_resources == 1
    waiting.pop("g")
    assert waiting.with_min_resources == 0 and not waiting.in_order()


def test_a_walk_survives_jobs_leaving_and_skips_those_that_joined() -> None:
    waiting = WaitingJobs()
    jobs = {j.name: j for j in (info("a", 1.0), info("b", 2.0), info("c", 3.0),
                                info("d", 4.0))}
    for job in jobs.values():
        waiting[job.name] = job
    admitted: list[JobInfo] = []
    joined: set[JobInfo] = set()
    # Jobs asking 2 GPUs are turned away; the others are let through.
    walk = Admissions(waiting, lambda job: job.job.groups[0].resources.gpu == 1, admitted,
                      joined)
    assert walk.next() is jobs["a"]
    del waiting["a"]  # placed: it leaves the waiting jobs mid-walk
    late = info("b5", 2.5)
    waiting[late.name] = late
    joined.add(late)  # started waiting after the walk began: not judged
    assert walk.next() is jobs["b"]
    walk.drain()
    assert walk.done and admitted == [jobs["a"], jobs["b"], jobs["c"], jobs["d"]]
    assert walk.next() is None


def test_a_drained_walk_judges_each_job_once() -> None:
    waiting = WaitingJobs()
    for job in (info("a", 1.0, gpus=2), info("b", 2.0), info("c", 3.0, gpus=2)):
        waiting[job.name] = job
    judged: list[str] = []

    def verdict(job: JobInfo) -> bool:
        judged.append(job.name)
        return job.job.groups[0].resources.gpu == 1

    admitted: list[JobInfo] = []
    walk = Admissions(waiting, verdict, admitted, set())
    assert walk.next() is waiting["b"]
    walk.drain()
    walk.drain()
    assert judged == ["a", "b", "c"] and [j.name for j in admitted] == ["b"]
