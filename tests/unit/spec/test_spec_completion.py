"""The completion policy and retries of a shoal/v1 Job: `spec.completion`, `spec.jobRetryCount`,
and per task group `taskRetryCount`, `completion.minSucceeded` and the failure `policies`; bad
values name their path."""

from __future__ import annotations

import pytest
from spec_helpers import JOB, JOB_1, expect, one_issue

from shoal.api import FailureAction, FailureEvent
from shoal.spec import load_text

POLICY = ("spec:\n  completion: {minSucceeded: 3, minFailed: 2}\n  jobRetryCount: 2\n")
GROUP = "      resources: {cpu: 8, memory: 32Gi, gpu: 2}\n"


def test_defaults() -> None:
    (job,) = load_text(JOB).jobs
    assert (job.min_succeeded, job.min_failed, job.job_retry_count, job.retries) == \
        (None, None, 0, 0)
    assert (job.success_threshold, job.failure_threshold) == (4, 1)
    assert (job.groups[0].task_retry_count, job.groups[0].min_succeeded) == (0, None)


def test_every_field() -> None:
    text = JOB.replace("spec:\n", POLICY).replace(
        GROUP, GROUP + "      taskRetryCount: 3\n      completion: {minSucceeded: 1}\n")
    (job,) = load_text(text).jobs
    assert (job.min_succeeded, job.min_failed, job.job_retry_count) == (3, 2, 2)
    assert (job.success_threshold, job.failure_threshold) == (3, 2)
    assert (job.groups[0].task_retry_count, job.groups[0].min_succeeded) == (3, 1)


def test_null_means_the_default() -> None:
    text = JOB.replace("spec:\n", "spec:\n  completion: {minSucceeded: null, minFailed: null}\n")
    (job,) = load_text(text).jobs
    assert (job.success_threshold, job.failure_threshold) == (4, 1)


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("minSucceeded", 5, "must be at most the job's total replicas (4), got 5"),
    ("minFailed", 9, "must be at most the job's total replicas (4), got 9"),
    ("minSucceeded", 0, "must be at least 1"),
    ("minFailed", -1, "must be at least 1"),
    ("minFailed", "'2'", "must be an integer"),
])
def test_bad_job_completion(key: str, value: object, expected: str) -> None:
    text = JOB.replace("spec:\n", f"spec:\n  completion: {{{key}: {value}}}\n")
    expect(one_issue(text), f"{JOB_1}spec.completion.{key}: ", expected)


@pytest.mark.parametrize(("field", "path", "expected"), [
    ("taskRetryCount: -1", "taskRetryCount", "must be at least 0"),
    ("taskRetryCount: 1.5", "taskRetryCount", "integer"),
    ("completion: {minSucceeded: 5}", "completion.minSucceeded",
     "must be at most the group's replicas (4), got 5"),
    ("completion: {minSucceeded: 0}", "completion.minSucceeded", "must be at least 1"),
    ("completion: {minFailed: 1}", "completion.minFailed", "unknown field 'minFailed'"),
])
def test_bad_group_fields(field: str, path: str, expected: str) -> None:
    text = JOB.replace(GROUP, GROUP + f"      {field}\n")
    expect(one_issue(text), f"{JOB_1}spec.taskGroups[0].{path}: ", expected)


def test_bad_job_retry_count() -> None:
    text = JOB.replace("spec:\n", "spec:\n  jobRetryCount: -2\n")
    expect(one_issue(text), f"{JOB_1}spec.jobRetryCount: ", "must be at least 0")


def test_unknown_completion_field() -> None:
    text = JOB.replace("spec:\n", "spec:\n  completion: {minSuccess: 1}\n")
    expect(one_issue(text), f"{JOB_1}spec.completion.minSuccess: ", "unknown field",
           "minFailed, minSucceeded")


# ---- failure policies (Volcano's task `policies`) -------------------------------------------

GANG = "spec:\n  schedulerName: shoal\n"


def _with_policies(policies: str, spec: str = GANG) -> str:
    return JOB.replace("spec:\n", spec).replace(
        GROUP, GROUP + "      taskRetryCount: 2\n" + f"      policies: {policies}\n")


def test_policies_default_and_opt_in() -> None:
    (plain,) = load_text(JOB).jobs
    assert plain.groups[0].policies == {}
    assert plain.groups[0].action_on(FailureEvent.TASK_FAILED) is FailureAction.RESTART_TASK
    assert plain.groups[0].action_on(FailureEvent.TASK_LOST) is FailureAction.RESTART_GANG
    (job,) = load_text(_with_policies("[{event: TaskFailed, action: RestartGang}, "
                                      "{event: TaskLost, action: RestartTask}]")).jobs
    group = job.groups[0]
    assert group.action_on(FailureEvent.TASK_FAILED) is FailureAction.RESTART_GANG
    assert group.action_on(FailureEvent.TASK_LOST) is FailureAction.RESTART_TASK


@pytest.mark.parametrize(("policies", "spec", "path", "expected"), [
    ("[{event: TaskFailed, action: RestartGang}, {event: TaskFailed, action: RestartTask}]",
     GANG, "policies[1].event", "TaskFailed is given twice in this group"),
    ("[{event: PodEvicted, action: RestartGang}]", GANG, "policies[0].event", "TaskFailed"),
    ("[{event: TaskLost, action: RestartJob}]", GANG, "policies[0].action", "RestartGang"),
    ("[{event: TaskLost}]", GANG, "policies[0].action", "required field is missing"),
    ("[{event: TaskFailed, action: RestartGang}]", "spec:\n",
     "policies[0].action", "RestartGang needs a rigid gang, but schedulerName is default"),
    ("[{event: TaskFailed, action: RestartGang}]", GANG + "  minAvailable: 1\n",
     "policies[0].action", "RestartGang needs a rigid gang, but minAvailable is 1"),
    ("[{event: TaskLost, action: RestartGang}]",
     GANG + "  elastic: {minReplicas: 2}\n",
     "policies[0].action", "RestartGang needs a rigid gang, but the job is elastic"),
])
def test_bad_policies(policies: str, spec: str, path: str, expected: str) -> None:
    expect(one_issue(_with_policies(policies, spec)),
           f"{JOB_1}spec.taskGroups[0].{path}: ", expected)


def test_too_many_policies() -> None:
    four = ", ".join(["{event: TaskLost, action: RestartTask}"] * 4)
    expect(one_issue(_with_policies(f"[{four}]")), f"{JOB_1}spec.taskGroups[0].policies: ",
           "at most 3 items")
