"""Job and task lifecycles reject illegal transitions and record causes."""

import pytest

from shoal.api.lifecycle import (
    JOB_LIFECYCLE,
    TASK_LIFECYCLE,
    IllegalTransitionError,
    JobState,
    TaskState,
)


def test_legal_task_path_records_cause() -> None:
    t = TASK_LIFECYCLE.move(TaskState.PENDING, TaskState.BOUND, "bound to n1")
    assert (t.source, t.target, t.cause) == (TaskState.PENDING, TaskState.BOUND, "bound to n1")
    TASK_LIFECYCLE.move(TaskState.BOUND, TaskState.RUNNING, "started")
    TASK_LIFECYCLE.move(TaskState.RUNNING, TaskState.RELEASING, "preempted")
    TASK_LIFECYCLE.move(TaskState.RELEASING, TaskState.PENDING, "stopped")


@pytest.mark.parametrize(("source", "target"), [
    (TaskState.PENDING, TaskState.RUNNING),      # must be bound first
    (TaskState.SUCCEEDED, TaskState.RUNNING),    # terminal
    (TaskState.CANCELLED, TaskState.PENDING),
])
def test_illegal_task_transitions(source: TaskState, target: TaskState) -> None:
    with pytest.raises(IllegalTransitionError, match="cannot go from"):
        TASK_LIFECYCLE.move(source, target, "test")


def test_terminal_job_states_are_final() -> None:
    for state in JobState:
        if state.terminal:
            assert JOB_LIFECYCLE.allowed(state) == frozenset()
    with pytest.raises(IllegalTransitionError):
        JOB_LIFECYCLE.move(JobState.SUCCEEDED, JobState.PENDING, "retry")


def test_cause_is_required() -> None:
    with pytest.raises(ValueError, match="cause"):
        JOB_LIFECYCLE.move(JobState.PENDING, JobState.RUNNING, "")


def test_holds_resources() -> None:
    assert {s for s in TaskState if s.holds_resources} == {
        TaskState.BOUND, TaskState.RUNNING, TaskState.RELEASING}


def test_retry_paths_go_through_pending() -> None:
    # In place: a failed task is put back; with its job: finished and stopped tasks too.
    TASK_LIFECYCLE.move(TaskState.RUNNING, TaskState.FAILED, "exit code 2")
    TASK_LIFECYCLE.move(TaskState.FAILED, TaskState.PENDING, "retry 1/3 after exit code 2")
    TASK_LIFECYCLE.move(TaskState.SUCCEEDED, TaskState.PENDING, "job retry 1/1")
    TASK_LIFECYCLE.move(TaskState.RELEASING, TaskState.PENDING, "stopped for a job retry")
    JOB_LIFECYCLE.move(JobState.RUNNING, JobState.PENDING, "job retry 1/1")
    assert TASK_LIFECYCLE.allowed(TaskState.CANCELLED) == frozenset()
