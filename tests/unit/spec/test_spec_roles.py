"""A task group's `TaskCompleted → CompleteJob` policy (Volcano's; a TrainingJob's trainers
end the job): read into `TaskGroup.completes_job`; a mismatched pair names its path."""

from __future__ import annotations

from pathlib import Path

import pytest
from spec_helpers import JOB, JOB_1, expect, one_issue

from shoal.api import FailureAction, FailureEvent
from shoal.spec import load_text

GROUP = "      resources: {cpu: 8, memory: 32Gi, gpu: 2}\n"


def _with_policies(policies: str) -> str:
    return JOB.replace(GROUP, GROUP + f"      policies: {policies}\n")


def test_default_is_no_completion_policy() -> None:
    (job,) = load_text(JOB).jobs
    assert job.groups[0].completes_job is False


def test_complete_job_is_read_beside_the_failure_policies() -> None:
    (job,) = load_text(_with_policies(
        "[{event: TaskCompleted, action: CompleteJob}, "
        "{event: TaskFailed, action: RestartTask}]")).jobs
    group = job.groups[0]
    assert group.completes_job is True
    assert group.policies == {FailureEvent.TASK_FAILED: FailureAction.RESTART_TASK}


@pytest.mark.parametrize(("policies", "path", "expected"), [
    ("[{event: TaskCompleted, action: RestartTask}]", "policies[0].action",
     "TaskCompleted takes CompleteJob only"),
    ("[{event: TaskFailed, action: CompleteJob}]", "policies[0].action",
     "CompleteJob answers TaskCompleted only, not TaskFailed"),
    ("[{event: TaskCompleted, action: CompleteJob}, {event: TaskCompleted, action: CompleteJob}]",
     "policies[1].event", "TaskCompleted is given twice in this group"),
    ("[{event: TaskSucceeded, action: CompleteJob}]", "policies[0].event", "TaskCompleted"),
    ("[{event: TaskCompleted, action: CompleteTask}]", "policies[0].action", "CompleteJob"),
])
def test_bad_completion_policies(policies: str, path: str, expected: str) -> None:
    expect(one_issue(_with_policies(policies)), f"{JOB_1}spec.taskGroups[0].{path}: ", expected)



def test_the_example_training_job_validates() -> None:
    text = (Path(__file__).parents[3] / "examples/trainingjob/trainingjob.yaml").read_text()
    (job,) = load_text(text).jobs
    assert [g.name for g in job.groups] == ["master", "pserver", "trainer"]
    assert [g.completes_job for g in job.groups] == [False, False, True]
    assert job.elastic is not None and job.elastic.group == "trainer"
