"""Holding and releasing jobs in the store, and the dependency lookups gates need: a base
class of `Repository`, each write one transaction.

A hold is stored before the control loop acts on it (the loop calls these on its own
thread, so that a hold and a cycle's binds never race), each change with an event naming
who asked. Requeueing is a stop (`shoal.store.stops`, `REQUEUING`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from shoal.api import Job, JobState, TaskState
from shoal.store import convert
from shoal.store.engine import Store
from shoal.store.errors import StoreError
from shoal.store.models import EventRow, JobRow
from shoal.store.stops import JOB_HELD

JOB_RELEASED = "JobReleased"
"""A hold was released."""


class ControlConflictError(StoreError):
    """A hold, release or requeue the job's state does not allow (the API's 409)."""


class JobControls:
    """`Repository` supplies the store, the clock and how a job's row is read."""

    store: Store
    clock: Callable[[], float]

    def _job_row(self, s: Session, name: str, *, lock: bool = False) -> JobRow:
        raise NotImplementedError

    def job_states(self, names: Iterable[str]) -> dict[str, JobState]:
        """The state of each named job that exists (for dependencies: `shoal.scheduler.gates`)."""
        wanted = sorted(set(names))
        out: dict[str, JobState] = {}
        with self.store.reads.begin() as s:
            for first in range(0, len(wanted), 500):  # well under SQLite's bound parameters
                rows = s.execute(select(JobRow.name, JobRow.state)
                                 .where(JobRow.name.in_(wanted[first:first + 500])))
                out.update((name, JobState(state)) for name, state in rows)
        return out

    def set_held(self, name: str, held: bool, cause: str) -> tuple[Job, bool]:
        """Hold (or release) a job, with an event saying `cause`; returns the job as stored
        now (its tasks not loaded) and whether anything changed (holding a held job, or
        releasing one that is not, changes nothing). Only a pending job none of whose tasks
        holds resources may be held (Slurm holds pending jobs only); a job that has ended
        can be neither held nor released: `ControlConflictError`. `NotFoundError` for no job."""
        with self.store.sessions.begin() as s:
            row = self._job_row(s, name, lock=True)
            state = JobState(row.state)
            if state.terminal:
                raise ControlConflictError(f"job {name!r} has already ended: {state.value}")
            if held and not row.held:
                placed = sum(1 for t in row.tasks if TaskState(t.state).holds_resources)
                if state is not JobState.PENDING or placed or row.stopping is not None:
                    raise ControlConflictError(
                        f"job {name!r} is {state.value.lower()} with {placed} task(s) placed: "
                        "only a pending job can be held; `shoal requeue --hold` puts it back "
                        "to pending held")
            changed = bool(row.held) != held
            if changed:
                row.held = held
                row.updated = self.clock()
                s.add(EventRow(job_id=row.id, time=self.clock(),
                               kind=JOB_HELD if held else JOB_RELEASED, cause=cause))
            s.flush()
            return convert.job_from_row(row, with_tasks=False), changed

    def requeue_check(self, name: str) -> Job:
        """The job as stored, if it may be requeued: one that has started (a task of it
        holds resources) and has no stop under way; `ControlConflictError` otherwise."""
        with self.store.reads.begin() as s:
            row = self._job_row(s, name)
            state = JobState(row.state)
            if state.terminal:
                raise ControlConflictError(f"job {name!r} has already ended: {state.value}")
            if row.stopping is not None:
                raise ControlConflictError(f"job {name!r} is being stopped ({row.stop_cause}); "
                                      "try again once it has")
            if not any(TaskState(t.state).holds_resources for t in row.tasks):
                raise ControlConflictError(f"job {name!r} is pending with no task placed: there is "
                                      "nothing to requeue")
            return convert.job_from_row(row)
