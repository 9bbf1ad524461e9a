"""Reusable job names: a name whose job has ended may be submitted again (Slurm and
Kubernetes users expect to rerun `train` without deleting it first), and the ended job stays
in history, readable with its events and logs. A base class of `Repository`.

The design: one row per job, named. When a submission takes the name of an ended job, in
one transaction the ended job's row is renamed `NAME.N` — N counts the runs of NAME kept in
history, 1 for the oldest — and the new job is inserted as `NAME`. A `.` is in no job name
(`shoal.spec.documents.JOB_NAME_PATTERN`), so a history name never clashes with a job's,
and everything that looks a job up by name (`shoal get NAME`, the control loop, tokens)
finds the newest without knowing of history; `shoal get NAME.1` and `shoal logs NAME.1`
read the older run. Its tasks and events stay with its row (they refer to its id); its job
tokens are removed (a token is keyed by name: it must never let a task of the old run act
for the new one). A job that has not ended, or whose deletion is under way, keeps its name
(409, as before).

The engine keeps a job's files (logs, its attempts' records) under its name, and an attempt
is claimed once per (job, group, index, attempt): the new job's first attempts would find
the old job's. So the renamed row is marked `files_of = NAME` and the control loop moves the
files (`Executor.rename_job`) before the new job can be placed — the move is queued ahead of
the new job's admission, and a restart makes the moves left undone before its first cycle
(`retired_files`, `files_moved`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from shoal.api import Job
from shoal.spec.imports import Original
from shoal.store.accounts import User
from shoal.store.cache import ReadThroughCache
from shoal.store.engine import Store
from shoal.store.errors import AlreadyExistsError
from shoal.store.job_queries import TERMINAL_JOB_STATES
from shoal.store.models import EventRow, JobRow, TokenRow

#: PostgreSQL's deadlock_detected: two submissions of one name, each waiting for the other's
#: uncommitted row of that name; one is aborted, and reads as the name's clash.
_DEADLOCK = "40P01"


def name_clash(error: DBAPIError) -> bool:
    """Whether a failed insert means that the name (or the key) was taken meanwhile."""
    return isinstance(error, IntegrityError) or (
        isinstance(error, OperationalError)
        and getattr(error.orig, "sqlstate", None) == _DEADLOCK)


#: The event a job gets when it moves into history.
KEPT_IN_HISTORY = "KeptInHistory"


@dataclass(frozen=True, slots=True)
class Submission:
    """What a submission did: the job as stored, whether it was created (False: an
    idempotent replay), and the history name the ended job of that name got, if any."""

    job: Job
    created: bool
    retired: str | None = None


def history_name(name: str, run: int) -> str:
    """The name the `run`-th ended job of `name` is kept under (1: the oldest)."""
    return f"{name}.{run}"


def history_run(name: str, candidate: str) -> int | None:
    """N when `candidate` is `name`'s history name `NAME.N`, else None."""
    prefix, dot, run = candidate.rpartition(".")
    return int(run) if dot and prefix == name and run.isdigit() and len(run) < 18 else None


class JobNames:
    """`Repository` supplies the store, the clock and how a new job's rows are written."""

    store: Store
    clock: Callable[[], float]
    _tokens: ReadThroughCache[User | None]

    def _insert_job(self, connection: Connection, job: Job, idempotency_key: str | None,
                    now: float, original: Original | None = None) -> int:
        raise NotImplementedError

    def _take_name(self, job: Job, idempotency_key: str | None, now: float,
                   original: Original | None = None) -> Submission | None:
        """Store `job` under the name of an ended job, which moves into history; raises
        AlreadyExistsError when the name's job has not ended (or is being deleted); None
        when another submission took the name (or the key) meanwhile."""
        name = job.name
        try:
            with self.store.engine.begin() as connection:
                old = connection.execute(
                    select(JobRow.id, JobRow.state, JobRow.stopping, JobRow.delete_requested)
                    .where(JobRow.name == name).with_for_update()).first()
                retired = None
                if old is not None:
                    if old.state not in TERMINAL_JOB_STATES or old.stopping is not None:
                        raise AlreadyExistsError(f"job {name!r} exists already and has not "
                                                 "ended")
                    if old.delete_requested:
                        raise AlreadyExistsError(f"job {name!r} is being deleted; submit "
                                                 "again once it is gone")
                    retired = self._retire(connection, old.id, old.state, name, now)
                self._insert_job(connection, job, idempotency_key, now, original)
        except DBAPIError as exc:
            if not name_clash(exc):
                raise
            return None
        if retired is not None:
            self._tokens.invalidate()  # the old job's tokens, removed, may be cached
        return Submission(job, True, retired)

    def _retire(self, connection: Connection, job_id: int, state: str, name: str,
                now: float) -> str:
        runs = connection.scalars(select(JobRow.name).where(
            JobRow.name.startswith(f"{name}.", autoescape=True)))
        done = max((r for r in (history_run(name, c) for c in runs) if r is not None),
                   default=0)
        kept = history_name(name, done + 1)
        connection.execute(update(JobRow).where(JobRow.id == job_id)
                           .values(name=kept, files_of=name, updated=now))
        connection.execute(delete(TokenRow).where(TokenRow.job == name))
        connection.execute(insert(EventRow).values(
            job_id=job_id, time=now, kind=KEPT_IN_HISTORY, target_state=state,
            cause=f"kept in history as {kept}: a new job was submitted as {name}"))
        return kept

    def retired_files(self) -> list[tuple[str, str]]:
        """(name the files are under, history name) of every job moved into history whose
        engine files have not been moved yet."""
        with self.store.reads.begin() as s:
            rows = s.execute(select(JobRow.files_of, JobRow.name)
                             .where(JobRow.files_of.is_not(None)).order_by(JobRow.id))
            return [(str(files_of), name) for files_of, name in rows]

    def files_moved(self, kept: str) -> None:
        """The engine files of history job `kept` are under its history name now."""
        with self.store.engine.begin() as connection:
            connection.execute(update(JobRow).where(JobRow.name == kept)
                               .values(files_of=None))
