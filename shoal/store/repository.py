"""The store's typed API: what the control plane reads and writes, one transaction per call.

Every public method is all-or-nothing: it runs in one transaction and, on any error, stores
nothing. State changes go through the lifecycle tables of `shoal.api.lifecycle` and leave an
event with their cause. `record_binds` persists a whole cycle's evictions and binds at
once: the control plane calls it *before* stopping or launching anything, so a crash never
loses a decision nor launches a task twice. Users and tokens are `shoal.store.accounts`' (a
base class of `Repository`), nodes' conditions `shoal.store.nodes`', the stops of jobs —
a task's retry, a job's end or rerun, a gang's restart — `shoal.store.stops`', and job
submissions `shoal.store.submissions`'.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    insert,
    select,
)
from sqlalchemy.orm import Session, selectinload

from shoal.api import (
    JOB_LIFECYCLE,
    TASK_LIFECYCLE,
    Bind,
    Evict,
    Job,
    JobState,
    Node,
    PriorityClass,
    Reserve,
    Resize,
    TaskRef,
    TaskState,
    Transition,
    VirtualCluster,
)
from shoal.api.flavors import ResourceFlavor
from shoal.api.lifecycle import IllegalTransitionError
from shoal.api.objects import is_sub_cluster, job_of_virtual_cluster
from shoal.api.queue_policy import QueueStatus
from shoal.store import convert
from shoal.store.accounting import (
    Accounting,
    EndedAttempt,
    attempt_end,
    group_resources,
    outcome_of,
    record_ended,
)
from shoal.store.accounts import TOKEN_CACHE_TTL, Accounts, User
from shoal.store.admin import AdminChanges
from shoal.store.audit import AuditLog, AuditNote
from shoal.store.cache import ReadThroughCache
from shoal.store.engine import Store
from shoal.store.errors import (
    AlreadyExistsError,
    NotFoundError,
    StoreError,
)
from shoal.store.job_controls import JobControls
from shoal.store.job_queries import TERMINAL_JOB_STATES, JobQueries
from shoal.store.models import (
    EventRow,
    JobRow,
    NodeRow,
    PriorityClassRow,
    ResourceFlavorRow,
    TaskRow,
    VirtualClusterRow,
)
from shoal.store.nodes import NodeInventory
from shoal.store.stops import Stops
from shoal.store.submissions import Submissions
from shoal.store.task_batches import JOB_STATE, TASK_STATE, TaskBatches
from shoal.store.task_batches import TaskRecord as _TaskRecord
from shoal.store.usage import UsageRecords

WAITING = "Waiting"
PARTIALLY_ADMITTED = "PartiallyAdmitted"
"""The scheduler admitted the job with fewer replicas of a group (Kueue's partial admission):
its stored size became the admitted one."""
"""Why the scheduler left the job waiting (its pending reason), recorded when it changes."""
TaskRecord = _TaskRecord
"""Made where binds are batched (`task_batches`); the control plane knows it from here."""
_INSERT_EVENT = insert(EventRow)


@dataclass(frozen=True, slots=True)
class Waiting:
    """Why a job waited, as of `time`: one WAITING event to record."""

    job: str
    time: float
    cause: str


class Repository(AuditLog, Stops, JobControls, TaskBatches, JobQueries, Submissions, Accounts,
                 NodeInventory, UsageRecords, AdminChanges, Accounting):
    """Typed reads and writes over a migrated `Store`. `clock` stamps events and rows."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock
        self._catalog: ReadThroughCache[tuple[Any, ...]] = ReadThroughCache(clock)
        self._tokens: ReadThroughCache[User | None] = ReadThroughCache(clock, TOKEN_CACHE_TTL)

    # ---- jobs ----------------------------------------------------------------------------

    def get_job(self, name: str) -> Job | None:
        with self.store.reads.begin() as s:
            row = s.scalar(select(JobRow).where(JobRow.name == name)
                           .options(selectinload(JobRow.tasks)))
            return None if row is None else convert.job_from_row(row)

    def snapshot_jobs(self) -> tuple[Job, ...]:
        """Every job that is not finished, with its tasks, in submission order."""
        with self.store.reads.begin() as s:
            rows = s.scalars(select(JobRow).options(selectinload(JobRow.tasks))
                             .where(JobRow.state.not_in(TERMINAL_JOB_STATES))
                             .order_by(JobRow.submitted, JobRow.name))
            return tuple(convert.job_from_row(r) for r in rows)

    def task_records(self, jobs: Iterable[str]) -> dict[TaskRef, TaskRecord]:
        """The task records of the named jobs, process fields included."""
        names = sorted(set(jobs))
        if not names:
            return {}
        with self.store.reads.begin() as s:
            rows = s.execute(select(JobRow.name, TaskRow).join(TaskRow.job)
                             .where(JobRow.name.in_(names)))
            out: dict[TaskRef, TaskRecord] = {}
            for job, row in rows:
                ref = TaskRef(job, row.group_name, row.task_index)
                out[ref] = TaskRecord(ref, TaskState(row.state), row.node,
                                      tuple(int(g) for g in row.gpus), row.pid,
                                      row.pid_start_time, row.attempts, row.exit_code)
            return out

    def record_waiting(self, waits: Sequence[Waiting]) -> None:
        """Append a WAITING event per entry, all in one transaction; entries of jobs that no
        longer exist are skipped."""
        by_job: dict[str, list[Waiting]] = {}
        for wait in waits:
            by_job.setdefault(wait.job, []).append(wait)
        names = list(by_job)
        with self.store.sessions.begin() as s:
            for start in range(0, len(names), 500):  # well under SQLite's bound parameters
                chunk = names[start:start + 500]
                ids = s.execute(select(JobRow.name, JobRow.id).where(JobRow.name.in_(chunk)))
                rows = [{"job_id": job_id, "time": w.time, "kind": WAITING, "cause": w.cause}
                        for name, job_id in ids for w in by_job[name]]
                if rows:
                    s.connection().execute(_INSERT_EVENT, rows)

    # ---- transitions ---------------------------------------------------------------------

    def transition_job(self, name: str, target: JobState, cause: str) -> Transition[JobState]:
        with self.store.sessions.begin() as s:
            row = self._job_row(s, name)
            return self._move_job(s, row, target, cause)

    def transition_task(self, ref: TaskRef, target: TaskState, cause: str, *,
                        node: str | None = None, gpus: Sequence[int] | None = None,
                        pid: int | None = None, pid_start_time: float | None = None,
                        exit_code: int | None = None, ended_at: float | None = None
                        ) -> Transition[TaskState]:
        """Move one task; the keyword fields, when given, are recorded with the move
        (`ended_at`: when the engine saw its attempt end, `_move_task`). Back in PENDING a
        task forgets its node, GPUs and process."""
        with self.store.sessions.begin() as s:
            row = self._task_row(s, ref)
            move = self._move_task(s, row, ref, target, cause, ended_at)
            if node is not None:
                row.node = node
            if gpus is not None:
                row.gpus = list(gpus)
            if pid is not None:
                row.pid = pid
            if pid_start_time is not None:
                row.pid_start_time = pid_start_time
            if exit_code is not None:
                row.exit_code = exit_code
            return move

    def record_binds(self, binds: Sequence[Bind], cause: str,
                     evictions: Sequence[Evict] = (),
                     admissions: Sequence[Resize] = ()) -> dict[TaskRef, TaskRecord]:
        """Persist one cycle's evictions, partial admissions and binds together. An evicted
        task that has a process goes RELEASING (its node and pid kept: it is stopped, then
        PENDING, `evicted_task_stopped`); one that never started goes straight back to
        PENDING. A job left holding none of its tasks goes back to PENDING. A partially
        admitted job's group gets the admitted replicas and loses the task rows above them
        (never started: they never will). Bound tasks → BOUND on their node and GPUs, and
        each job whose gang minimum is now held → RUNNING. Any bad move stores none of
        them. Returns the bound tasks' records as stored, so that their launch needs no
        read.

        A cycle of binds alone (a burst's) is written as one batch of statements
        (`TaskBatches._bind_batch`); one that evicts or admits partially goes through the
        unit of work, moving its tasks one by one."""
        if not evictions and not admissions:
            with self.store.sessions.begin() as s:
                return self._bind_batch(s, binds, cause)
        return self._record_binds_one_by_one(binds, cause, evictions, admissions)

    def _record_binds_one_by_one(self, binds: Sequence[Bind], cause: str,
                                 evictions: Sequence[Evict] = (),
                                 admissions: Sequence[Resize] = ()
                                 ) -> dict[TaskRef, TaskRecord]:
        """`record_binds` through the unit of work: each task moved by `_move_task`."""
        with self.store.sessions.begin() as s:
            # Every job the cycle touched, read (and locked) at once: a burst binds a task
            # of hundreds of jobs, and two queries per job were most of this transaction.
            jobs = self._job_rows(s, {e.task.job for e in evictions}
                                  | {a.job for a in admissions} | {b.task.job for b in binds})
            touched: dict[str, JobRow] = {}

            def job_of(name: str) -> JobRow:
                if name not in jobs:
                    raise NotFoundError(f"no job {name!r}")
                touched[name] = jobs[name]
                return jobs[name]

            for evict in evictions:
                row = self._task_in(job_of(evict.task.job), evict.task)
                self._move_task(s, row, evict.task, TaskState.RELEASING,
                                f"evicted: {evict.reason}")
                if not row.pid:
                    self._move_task(s, row, evict.task, TaskState.PENDING,
                                    "stopped before it was launched")
            for admission in admissions:
                self._admit_partially(s, job_of(admission.job), admission)
            stored: dict[TaskRef, TaskRecord] = {}
            for bind in binds:
                row = self._task_in(job_of(bind.task.job), bind.task)
                self._move_task(s, row, bind.task, TaskState.BOUND, cause)
                row.node = bind.node
                row.gpus = list(bind.gpus)
                stored[bind.task] = TaskRecord(bind.task, TaskState.BOUND, bind.node,
                                              tuple(bind.gpus), row.pid, row.pid_start_time,
                                              row.attempts, row.exit_code)
            evicted = {e.task.job: e.reason for e in evictions}
            for job_row in touched.values():
                job = convert.job_from_row(job_row)
                bound = [t for t in job.tasks if t.state in (TaskState.BOUND, TaskState.RUNNING)]
                held = len(bound)
                if job.state is JobState.PENDING and job.gang_met(bound):
                    self._move_job(s, job_row, JobState.RUNNING,
                                   f"{held} of {job.replicas} tasks bound "
                                   f"(gang minimum {job.gang_minimum}): {cause}")
                elif job.state is JobState.RUNNING and held == 0 and job.name in evicted:
                    self._move_job(s, job_row, JobState.PENDING,
                                   f"evicted whole: {evicted[job.name]}")
        return stored

    def evicted_task_stopped(self, ref: TaskRef, how: str, exit_code: int | None,
                             ended_at: float | None = None) -> None:
        """An evicted task's process is gone: RELEASING → PENDING, to be placed again as a
        new attempt. However its process ended, this is no failure and costs no retry.
        `ended_at`: when the engine saw it end (`_move_task`)."""
        with self.store.sessions.begin() as s:
            row = self._task_row(s, ref)
            if exit_code is not None:
                row.exit_code = exit_code
            self._move_task(s, row, ref, TaskState.PENDING, f"stopped after eviction ({how})",
                            ended_at)

    def _admit_partially(self, s: Session, row: JobRow, admission: Resize) -> None:
        """Group `admission.group` of job `row` has `admission.replicas` replicas for good."""
        if not any(g["name"] == admission.group for g in row.spec):
            raise NotFoundError(f"job {row.name!r} has no task group {admission.group!r}")
        dropped = [t for t in row.tasks if t.group_name == admission.group
                   and t.task_index >= admission.replicas]
        for task in dropped:
            if TaskState(task.state) is not TaskState.PENDING:
                raise IllegalTransitionError(
                    f"task {row.name}/{task.group_name}/{task.task_index} is "
                    f"{task.state}: a partial admission drops only tasks that never started")
            row.tasks.remove(task)
        # A new list: the JSON column is not tracked for changes in place.
        row.spec = [dict(g, replicas=admission.replicas) if g["name"] == admission.group
                    else g for g in row.spec]
        now = self.clock()
        row.updated = now
        s.add(EventRow(job_id=row.id, time=now, kind=PARTIALLY_ADMITTED,
                       cause=admission.reason))

    @staticmethod
    def _job_rows(s: Session, names: Iterable[str]) -> dict[str, JobRow]:
        """The rows of these jobs (those that exist) with their tasks, locked, in name
        order as `_job_row`'s one-job writers lock theirs."""
        ordered = sorted(set(names))
        out: dict[str, JobRow] = {}
        for first in range(0, len(ordered), 500):  # well under SQLite's bound parameters
            rows = s.scalars(select(JobRow).where(JobRow.name.in_(ordered[first:first + 500]))
                             .options(selectinload(JobRow.tasks)).order_by(JobRow.name)
                             .with_for_update())
            out.update((row.name, row) for row in rows)
        return out

    def _job_row(self, s: Session, name: str, *, lock: bool = False) -> JobRow:
        query = select(JobRow).where(JobRow.name == name).options(selectinload(JobRow.tasks))
        if lock:
            query = query.with_for_update()
        row = s.scalar(query)
        if row is None:
            raise NotFoundError(f"no job {name!r}")
        return row

    def _task_row(self, s: Session, ref: TaskRef) -> TaskRow:
        return self._task_in(self._job_row(s, ref.job, lock=True), ref)

    @staticmethod
    def _task_in(job: JobRow, ref: TaskRef) -> TaskRow:
        for task in job.tasks:
            if task.group_name == ref.group and task.task_index == ref.index:
                return task
        raise NotFoundError(f"no task {ref}")

    def _move_job(self, s: Session, row: JobRow, target: JobState, cause: str
                  ) -> Transition[JobState]:
        move = JOB_LIFECYCLE.move(JobState(row.state), target, cause)
        now = self.clock()
        row.state = target.value
        row.updated = now
        row.ended = now if target.terminal else None
        s.add(EventRow(job_id=row.id, time=now, kind=JOB_STATE, source_state=move.source.value,
                       target_state=target.value, cause=cause))
        return move

    def _move_task(self, s: Session, row: TaskRow, ref: TaskRef, target: TaskState,
                   cause: str, ended_at: float | None = None) -> Transition[TaskState]:
        """`ended_at`: when the engine saw the attempt end, if this move ends one and the
        engine said (`attempt_end`); the move and its event are recorded at `now`."""
        move = TASK_LIFECYCLE.move(TaskState(row.state), target, cause)
        now = self.clock()
        outcome = outcome_of(move.source, target, row.job.stopping)
        if outcome is not None:  # the attempt ends: accounted in this same transaction
            started = now if row.started is None else row.started
            record_ended(s, [EndedAttempt(
                row.job_id, ref.job, f"{ref.group}/{ref.index}", row.attempts, row.job.queue,
                row.job.user or "", row.node or "", started,
                attempt_end(started, now, ended_at), group_resources(row.job.spec, ref.group),
                outcome)])
        row.state = target.value
        if target is TaskState.BOUND:
            row.started = now
            row.attempts += 1
            row.exit_code = None
        elif target is TaskState.PENDING:
            row.node, row.gpus, row.started = None, [], None
            row.pid = row.pid_start_time = None
        row.job.updated = now
        s.add(EventRow(job_id=row.job_id, task=str(ref), time=now, kind=TASK_STATE,
                       source_state=move.source.value, target_state=target.value, cause=cause))
        return move

    # ---- nodes, virtual clusters, priority classes ---------------------------------------

    def put_node(self, node: Node, note: AuditNote | None = None) -> None:
        """`note`: the admin change to audit with it (`shoal.store.audit`), if one."""
        with self.store.sessions.begin() as s:
            s.add(convert.node_to_row(node, s.get(NodeRow, node.name)))
            self._audit(s, note)
        self._catalog.invalidate()

    def list_nodes(self) -> list[Node]:
        def load() -> tuple[Node, ...]:
            with self.store.reads.begin() as s:
                return tuple(convert.node_from_row(r)
                             for r in s.scalars(select(NodeRow).order_by(NodeRow.name)))
        return list(self._catalog.get("nodes", load))

    def put_virtual_cluster(self, vc: VirtualCluster, note: AuditNote | None = None) -> None:
        """Create or replace a virtual cluster. One created is stamped with the time (its
        place in the reservation queue); one replaced keeps its carving unless its
        fixed-size nodes changed, and one opened is no longer to be deleted once drained
        (`shoal.store.admin`)."""
        with self.store.sessions.begin() as s:
            row = s.get(VirtualClusterRow, vc.name)
            if row is None:
                row = VirtualClusterRow(name=vc.name, created=self.clock())
            s.add(convert.vc_to_row(vc, row))
            if vc.state is QueueStatus.OPEN:
                row.deleting = False  # opened again: a drain toward its deletion is off
            self._audit(s, note)
        self._catalog.invalidate()

    def record_reservations(self, changes: Iterable[Reserve]) -> None:
        """Store where the scheduler carved virtual clusters' fixed-size nodes (or that it
        gave them back), so that a restart restores them there."""
        with self.store.sessions.begin() as s:
            for change in changes:
                carving = convert.reservation_to_json(change.placements)
                job = job_of_virtual_cluster(change.virtual_cluster)
                if job is None or is_sub_cluster(change.virtual_cluster):
                    row = s.get(VirtualClusterRow, change.virtual_cluster)
                    if row is not None:
                        row.reservation = carving
                    continue
                found = s.scalars(select(JobRow).where(JobRow.name == job)).first()
                if found is not None and found.virtual_cluster is not None:
                    # A new dict: the JSON column notices assignment, not mutation.
                    found.virtual_cluster = {**found.virtual_cluster, "reservation": carving}
        self._catalog.invalidate()

    def add_sub_clusters(self, job: str, sub_clusters: Sequence[VirtualCluster]) -> Job:
        """Add sub-clusters to a live job's own virtual cluster, all or none: refused when
        the job has ended, has no virtual cluster of its own, or has a sub-cluster of one of
        these names already. Returns the job as stored now."""
        with self.store.sessions.begin() as s:
            row = s.scalars(select(JobRow).where(JobRow.name == job)
                            .with_for_update()).first()
            if row is None:
                raise NotFoundError(f"no job {job!r}")
            if row.state in TERMINAL_JOB_STATES:
                raise StoreError(f"job {job!r} has ended ({row.state}): its virtual cluster "
                                 "is gone")
            if row.virtual_cluster is None:
                raise StoreError(f"job {job!r} has no virtual cluster of its own "
                                 "(spec.virtualCluster)")
            existing = convert.sub_clusters_from_json(row.virtual_cluster)
            taken = {vc.name for vc in existing}
            for vc in sub_clusters:
                if vc.name in taken:
                    raise AlreadyExistsError(f"virtual cluster {vc.name!r} exists already")
                taken.add(vc.name)
            row.virtual_cluster = {**row.virtual_cluster, "subClusters": [
                convert.sub_cluster_to_json(vc) for vc in (*existing, *sub_clusters)]}
            row.updated = self.clock()
            return convert.job_from_row(row)

    def job_virtual_clusters(self, job: str | None = None) -> list[VirtualCluster]:
        """The virtual clusters live jobs carry — their own and the sub-clusters their tasks
        created inside it — of every live job, or of `job` only. Whether each exists in the
        scheduler now is the scheduler's to say (a job's own is created when its queue can
        guarantee it)."""
        with self.store.reads.begin() as s:
            query = select(JobRow.name, JobRow.queue, JobRow.virtual_cluster).where(
                JobRow.state.not_in(TERMINAL_JOB_STATES), JobRow.virtual_cluster.is_not(None))
            if job is not None:
                query = query.where(JobRow.name == job)
            rows = s.execute(query.order_by(JobRow.submitted, JobRow.name)).all()
        out: list[VirtualCluster] = []
        for name, queue, data in rows:
            own = convert.job_vc_from_json(name, queue, data)
            if own is not None:
                out.append(own)
            out.extend(convert.sub_clusters_from_json(data))
        return out

    def list_virtual_clusters(self) -> list[VirtualCluster]:
        """Every virtual cluster, in creation order (the reservation queue's)."""
        def load() -> tuple[VirtualCluster, ...]:
            with self.store.reads.begin() as s:
                return tuple(convert.vc_from_row(r) for r in s.scalars(
                    select(VirtualClusterRow).order_by(VirtualClusterRow.created,
                                                       VirtualClusterRow.name)))
        return list(self._catalog.get("virtual-clusters", load))

    def put_priority_class(self, pc: PriorityClass, note: AuditNote | None = None) -> None:
        with self.store.sessions.begin() as s:
            s.add(convert.priority_class_to_row(pc, s.get(PriorityClassRow, pc.name)))
            self._audit(s, note)
        self._catalog.invalidate()

    def put_resource_flavor(self, flavor: ResourceFlavor, note: AuditNote | None = None
                            ) -> None:
        with self.store.sessions.begin() as s:
            s.add(convert.resource_flavor_to_row(flavor, s.get(ResourceFlavorRow, flavor.name)))
            self._audit(s, note)
        self._catalog.invalidate()

    def list_resource_flavors(self) -> list[ResourceFlavor]:
        def load() -> tuple[ResourceFlavor, ...]:
            with self.store.reads.begin() as s:
                return tuple(convert.resource_flavor_from_row(r) for r in s.scalars(
                    select(ResourceFlavorRow).order_by(ResourceFlavorRow.name)))
        return list(self._catalog.get("resource-flavors", load))

    def list_priority_classes(self) -> list[PriorityClass]:
        def load() -> tuple[PriorityClass, ...]:
            with self.store.reads.begin() as s:
                return tuple(convert.priority_class_from_row(r) for r in s.scalars(
                    select(PriorityClassRow).order_by(PriorityClassRow.value,
                                                      PriorityClassRow.name)))
        return list(self._catalog.get("priority-classes", load))

