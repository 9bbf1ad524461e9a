"""The model's index of owned work (`OwnedWork`) answers `work_inside` as the walk over every
live job did — the same jobs, in the model's order — through any run of arrivals, removals
and retries (a job removed and added again), with queues that are declared, a job's own
virtual cluster, one of its sub-clusters, or a job's that does not exist (charged to the
root, still filed under the job it names)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup, VirtualCluster
from shoal.api.objects import job_of_virtual_cluster
from shoal.control.job_scope import work_inside
from shoal.scheduler.model import SchedulerModel

NODES = (Node("n0", Resources.of(cpu=16_000, memory=64_000)),)
NAMES = ("a", "ab", "b", "c", "d", "e")
QUEUES = ("default", "job:a", "job:a/x", "job:ab", "job:b/y/z", "job:zz", "job:c")


def job(name: str, queue: str, at: float) -> Job:
    return Job(name, (TaskGroup("w", 1, Resources.of(cpu=1000, memory=1000)),), queue=queue,
               scheduler_name=SchedulerName.DEFAULT, submitted=at)


def scanned(model: SchedulerModel, owner: str) -> list[str]:
    """The definition: every live job but the owner whose named queue the owner owns."""
    return [name for name, info in model.jobs.items()
            if name != owner and job_of_virtual_cluster(info.job.queue) == owner]


STEPS = st.lists(st.tuples(st.booleans(), st.sampled_from(NAMES), st.sampled_from(QUEUES)),
                 max_size=40)


@settings(max_examples=150, deadline=None)
@given(STEPS)
def test_owned_work_matches_the_walk_over_every_job(steps: list[tuple[bool, str, str]]
                                                    ) -> None:
    model = SchedulerModel(NODES, [VirtualCluster("default")])
    for at, (add, name, queue) in enumerate(steps):
        if name in model.jobs:
            model.remove_job(name)
        if add:  # a removal, or a retry: back under a queue of its own choosing
            model.add_job(job(name, queue, float(at)))
        for owner in (*NAMES, "zz", "y"):
            assert work_inside(model, owner) == scanned(model, owner)
        filed = {job_of_virtual_cluster(info.job.queue) for info in model.jobs.values()}
        assert set(model.owned.owners()) == filed - {None}  # nothing stale kept
