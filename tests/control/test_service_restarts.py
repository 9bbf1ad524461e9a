"""A service's failed task is restarted, never failing the service (`completion.on_failure`),
by example and by property: the rule `kind: Service`, `spec.service` and Sedna's
JointInferenceService share."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from shoal.api import Job, Resources, SchedulerName, Task, TaskGroup, TaskRef, TaskState
from shoal.api.services import Service
from shoal.control.completion import Verdict, on_failure

R = TaskState.RUNNING
REF0 = TaskRef("web", "model", 0)


def service(*, task_retry_count: int = 0, task_retries: int = 0, replicas: int = 2,
            gang: bool = False) -> Job:
    group = TaskGroup("model", replicas, Resources.of(cpu=1),
                      task_retry_count=task_retry_count)
    tasks = tuple(Task("web", "model", i, state=R, node="n", retries=task_retries)
                  for i in range(replicas))
    return Job("web", (group,), service=Service(), tasks=tasks,
               scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT)


def test_a_failed_service_task_is_restarted_past_its_retry_count() -> None:
    first = on_failure(service(), REF0, "exit code 1")
    assert (first.verdict, first.task) == (Verdict.RETRY_TASK, REF0)
    assert first.cause == "restart 1 (a service restarts its failed tasks) after exit code 1"
    counted = on_failure(service(task_retry_count=2, task_retries=1), REF0, "signal 9")
    assert counted.cause == "retry 2/2 after signal 9"
    later = on_failure(service(task_retry_count=2, task_retries=7), REF0, "signal 9")
    assert later.cause == "restart 8 (a service restarts its failed tasks) after signal 9"


def test_a_lost_task_of_a_service_gang_restarts_the_gang() -> None:
    decision = on_failure(service(gang=True, task_retries=5), REF0, "a lost process", lost="")
    assert decision.verdict is Verdict.RESTART_GANG


def test_a_training_job_still_fails_past_its_retries() -> None:
    training = replace(service(), service=None)
    assert on_failure(training, REF0, "exit code 1").verdict is Verdict.FAIL


@given(st.integers(0, 5), st.integers(0, 50), st.integers(1, 4), st.booleans(),
       st.booleans())
def test_a_service_is_never_failed_nor_ended_by_a_failure(
        allowed: int, retries: int, replicas: int, gang: bool, lost: bool) -> None:
    job = service(task_retry_count=allowed, task_retries=retries, replicas=replicas, gang=gang)
    decision = on_failure(job, REF0, "exit code 3", lost="" if lost else None)
    assert decision.verdict in (Verdict.RETRY_TASK, Verdict.RESTART_GANG)
    assert decision.task == REF0
