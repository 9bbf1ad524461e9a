"""`completion.judge` counts a job's FAILED and SUCCEEDED tasks from its task records alone
when it is given no states and the job is not elastic (an exit batch judges every job it
touches): the decision — verdict and cause — is the one the plain rule gives from every
task's state (`task_states`), for any job: tasks unrecorded, recorded twice, recorded under a
group or index the job does not have, thresholds of the job and of its groups, groups that
complete the job, job retries, and a failure's description."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Job, Resources, SchedulerName, Task, TaskGroup, TaskState
from shoal.control.completion import (
    Decision,
    judge,
    task_states,
)


def plain_judge(job: Job, failure: str | None = None) -> Decision:
    """The plain rule: every task's state given (`task_states`), so no count from records."""
    return judge(job, task_states(job), failure)


GROUP = st.tuples(st.integers(1, 3), st.none() | st.integers(1, 3), st.booleans())
#: Records may name a group the job lacks ("x") or an index past its replicas (3).
RECORD = st.tuples(st.sampled_from(("g0", "g1", "x")), st.integers(0, 3),
                   st.sampled_from(tuple(TaskState)))


@st.composite
def jobs(draw: st.DrawFn) -> Job:
    groups = tuple(
        TaskGroup(f"g{i}", replicas, Resources.of(cpu=1000, memory=100),
                  min_succeeded=min_succeeded, completes_job=completes)
        for i, (replicas, min_succeeded, completes)
        in enumerate(draw(st.lists(GROUP, min_size=1, max_size=2))))
    tasks = tuple(Task("j", group, index, state)
                  for group, index, state in draw(st.lists(RECORD, max_size=8)))
    retry_count = draw(st.integers(0, 2))
    return Job("j", groups, scheduler_name=SchedulerName.DEFAULT, tasks=tasks,
               min_succeeded=draw(st.none() | st.integers(1, 6)),
               min_failed=draw(st.none() | st.integers(1, 3)),
               job_retry_count=retry_count, retries=draw(st.integers(0, retry_count)))


@settings(max_examples=400, deadline=None)
@given(jobs(), st.none() | st.just("task j/g0/0 failed: exit code 2"))
def test_judge_counts_from_records_as_from_every_state(job: Job, failure: str | None
                                                       ) -> None:
    assert judge(job, failure=failure) == plain_judge(job, failure)
