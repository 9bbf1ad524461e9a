"""The model's log of changed jobs (issue 18) answers as its plain definition.

`shoal.scheduler.job_changes.JobChanges` keeps one entry per job, its latest change, and
forgets the oldest past a limit. Here random notes and readers' cursors are checked against
a plain list of every note ever made: the jobs changed after a cursor, each once, ordered by
its latest change; or None exactly where a change after the cursor was forgotten.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Job, Resources, SchedulerName, TaskGroup
from shoal.api.objects import QueueingPolicy
from shoal.scheduler import job_changes
from shoal.scheduler.job_changes import JobChanges
from shoal.scheduler.jobs import JobInfo


def info(name: str) -> JobInfo:
    job = Job(name, (TaskGroup("w", 1, Resources.of(cpu=100)),),
              scheduler_name=SchedulerName.SHOAL)
    return JobInfo(job, 0, "root", QueueingPolicy.FIFO)


def plain_since(notes: list[JobInfo], cursor: int) -> list[JobInfo]:
    latest: dict[JobInfo, int] = {}
    for stamp, job in enumerate(notes, start=1):
        latest[job] = stamp
    return sorted((job for job, stamp in latest.items() if stamp > cursor),
                  key=lambda job: latest[job])


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 40)), min_size=1,
                      max_size=80),
       limit=st.sampled_from([4, 8, 1000]))
def test_the_log_names_the_jobs_changed_since_a_cursor(
        steps: list[tuple[int, int]], limit: int) -> None:
    jobs = [info(f"j{i}") for i in range(12)]
    saved = job_changes.LIMIT
    job_changes.LIMIT = limit
    try:
        log = JobChanges()
        notes: list[JobInfo] = []
        for pick, back in steps:
            log.note(jobs[pick])
            notes.append(jobs[pick])
            assert log.stamp == len(notes)
            cursor = max(0, log.stamp - back)
            found = log.since(cursor)
            want = plain_since(notes, cursor)
            # Forgotten: only the oldest entries, and a cursor below them is told so.
            forgotten = [j for j in plain_since(notes, 0) if j not in log._latest]
            if found is None:
                assert cursor < log.floor and forgotten
            else:
                assert found == want, (cursor, log.floor)
            assert len(log) <= limit
            assert log.since(log.stamp) == []
    finally:
        job_changes.LIMIT = saved


def test_a_model_notes_starts_stops_and_accounts() -> None:
    from shoal.api import Node, Task, TaskState
    from shoal.scheduler.model import SchedulerModel

    model = SchedulerModel([Node("n0", Resources.of(cpu=64_000, memory=65_536, gpu=8))])
    job = Job("a", (TaskGroup("w", 2, Resources.of(cpu=100, gpu=1)),),
              scheduler_name=SchedulerName.SHOAL,
              tasks=(Task("a", "w", 0, TaskState.RUNNING, "n0", started=0.0),))
    model.add_job(job)
    model.add_job(Job("b", (TaskGroup("w", 1, Resources.of(cpu=100)),),
                      scheduler_name=SchedulerName.SHOAL))
    a = model.jobs["a"]
    assert model.changes.since(0) == [a]  # it holds a task: active, and noted
    cursor = model.changes.stamp
    model.release_task(a.running[0].ref)
    assert model.changes.since(cursor) == [a] and "a" not in model.active
