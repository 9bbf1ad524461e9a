"""A partially admitted job (a group's `minCount`, Kueue's partial admission) through the live
loop: it starts with the replicas that fit, its stored size becomes that, and it completes
with only those tasks — the replicas it was not admitted with are never waited for."""

from __future__ import annotations

from dataclasses import replace

from control_support import finished, job, state_of, step_until

from shoal.api import JobState, TaskState
from shoal.control import ControlPlane


def test_a_partially_admitted_job_completes_with_its_admitted_tasks(
        plane: ControlPlane) -> None:
    # The node has 4 GPUs: 6 one-GPU workers do not fit whole, 4 of them do (minCount 2).
    asked = job("part", "print('done')", replicas=6, gpu=1)
    plane.submit(replace(asked, groups=(replace(asked.groups[0], min_count=2),)))
    step_until(plane, finished(plane, "part"))
    assert state_of(plane, "part") is JobState.SUCCEEDED
    stored = plane.repository.get_job("part")
    assert stored is not None
    assert stored.group("worker").replicas == 4
    assert sorted(t.index for t in stored.tasks) == [0, 1, 2, 3]
    assert all(t.state is TaskState.SUCCEEDED for t in stored.tasks)
    admitted = [e for e in plane.repository.job_events("part") if e.kind == "PartiallyAdmitted"]
    assert len(admitted) == 1 and "4 of 6 replicas fit (minCount 2)" in admitted[0].cause
    assert "part" not in plane.model.jobs and plane.model.quota.root.usage.gpu == 0
