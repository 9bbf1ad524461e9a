"""`virtual_cluster_status`'s `waiting` (what the metrics' `shoal_virtual_cluster_waiting`
reports), on random worlds after real cycles: each virtual cluster's is exactly what its own
unfinished jobs' tasks that hold nothing ask for, so that over the tree nothing waiting is
lost or counted twice."""

from __future__ import annotations

from hypothesis import given, settings

from shoal.api import Job, Resources, TaskState
from shoal.api.resources import total
from shoal.scheduler.introspection import virtual_cluster_status
from shoal.scheduler.model import SchedulerModel

from .strategies import World, worlds

CHECKS = settings(max_examples=40, deadline=None)


def unplaced(job: Job) -> Resources:
    """What a job's tasks still to place ask for: per group, the replicas that no task holds
    resources for, has ended, or is being placed for."""
    if job.state.terminal:
        return Resources()
    asked = []
    for group in job.groups:
        taken = sum(1 for t in job.tasks if t.group == group.name
                    and t.state is not TaskState.PENDING)
        asked.append(group.resources.scale(group.replicas - taken))
    return total(asked)


@CHECKS
@given(world=worlds(max_jobs=15))
def test_waiting_is_what_each_clusters_own_unplaced_tasks_ask_for(world: World) -> None:
    for current in (world, world.step()[2]):
        model = SchedulerModel.from_snapshot(current.snapshot())
        status = virtual_cluster_status(model)
        expected: dict[str, Resources] = {}
        for job in current.jobs:
            if job.name in model.jobs and job.elastic is None:
                account = model.jobs[job.name].account
                expected[account] = expected.get(account, Resources()) + unplaced(job)
        for name, vc in status.items():
            assert vc.waiting == expected.get(name, Resources()), name
