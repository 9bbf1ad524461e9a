"""`KeptNotes.reset` resets, as a cycle opens, exactly what the plain walk over every noted
job resets (`shoal.scheduler.noted_reasons`).

Random sequences of cycles over a handful of jobs: between two openings jobs are noted,
start or stop waiting, or leave (and a job of the same name may come back as a new one); at
each opening the kept path and the plain walk — every noted job that waits is reset and
leaves `noted`, every other stays — are run on twin copies and must agree on which jobs were
reset, what `noted` holds after, and which noted jobs were kept.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Job, QueueingPolicy, Resources, TaskGroup
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.noted_reasons import KeptNotes
from shoal.scheduler.waiting import WaitingJobs

NAMES = ("a", "b", "c", "d", "e")
STEPS = st.lists(st.lists(st.tuples(st.sampled_from(("note", "wait", "stop", "leave",
                                                     "full")),
                                    st.sampled_from(NAMES)), max_size=8), max_size=10)


def info(name: str) -> JobInfo:
    return JobInfo(Job(name, (TaskGroup("w", 1, Resources(gpu=1)),)), 0, "default",
                   QueueingPolicy.PRIORITY)


def plain(noted: set[JobInfo], waiting: WaitingJobs) -> tuple[set[JobInfo], set[JobInfo]]:
    reset = {job for job in noted if waiting.get(job.job.name) is job}
    return reset, noted - reset


@settings(max_examples=60, deadline=None)
@given(steps=STEPS)
def test_kept_notes_reset_as_the_plain_walk(steps: list[list[tuple[str, str]]]) -> None:
    live = {name: info(name) for name in NAMES}
    noted: set[JobInfo] = set()
    waiting = WaitingJobs()
    kept = KeptNotes()
    for changes in steps:
        for what, name in changes:
            job = live[name]
            if what == "note":
                noted.add(job)
            elif what == "wait":
                waiting[name] = job
            elif what == "stop":
                waiting.pop(name, None)
            elif what == "full":  # a closed queue's opening sets every waiting reason
                for waits in waiting.values():
                    noted.add(waits)
                kept.start_over(waiting)
            else:  # it leaves, as `SchedulerModel.remove_job` forgets it; a new one comes
                waiting.pop(name, None)
                noted.discard(job)
                kept.forget(job)
                live[name] = info(name)
        want_reset, want_noted = plain(noted, waiting)
        reset: list[JobInfo] = []
        returned = kept.reset(noted, waiting, reset)
        assert len(reset) == len(set(reset))
        assert set(reset) == want_reset
        assert noted == want_noted
        assert returned == frozenset(want_noted)
