"""Binds written as one batch (`record_binds` without evictions or partial admissions) store
the same rows and events as the unit of work that moves tasks one by one, and refuse the
same bad binds the same way, storing nothing — on SQLite and PostgreSQL.

Each comparison builds the same world twice in one store, under a prefix: `one-` is bound
through `Repository._record_binds_one_by_one`, `batch-` through `record_binds`; then every
column of their job and task rows and every event is compared, names and ids aside."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select
from store_helpers import make_job

from shoal.api import Bind, Evict, Resources, SchedulerName, TaskGroup, TaskRef, TaskState
from shoal.api.lifecycle import IllegalTransitionError
from shoal.api.objects import Job
from shoal.store import Repository
from shoal.store.engine import Store
from shoal.store.errors import NotFoundError
from shoal.store.models import EventRow, JobRow, TaskRow
from shoal.store.repository import TaskRecord

Record = Callable[[list[Bind], str], dict[TaskRef, TaskRecord]]


class _Ticks:
    """A clock that moves only when told: both paths then stamp what they write alike (the
    unit of work reads the clock per move, the batch once)."""

    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


def _bind(ref: TaskRef, node: str = "n1", gpus: tuple[int, ...] = ()) -> Bind:
    return Bind(ref, node, gpus, Resources.of(cpu=1))


def _elastic(name: str) -> Job:
    """A job that runs with one task of four (gang minimum 1 of the default scheduler)."""
    return Job(name=name, groups=(TaskGroup("worker", 4, Resources.of(cpu=100),
                                            command=("train",)),),
               scheduler_name=SchedulerName.DEFAULT, user="alice")


def _world(repo: Repository, clock: _Ticks, prefix: str, record: Record) -> None:
    """Jobs in every state a bind meets, then one cycle's binds through `record`."""
    def ref(job: str, group: str, index: int) -> TaskRef:
        return TaskRef(prefix + job, group, index)

    clock.now = 5000.0
    repo.submit_job(make_job(prefix + "gang", replicas=3, min_available=3))
    repo.submit_job(make_job(prefix + "short", replicas=3, min_available=4))
    repo.submit_job(make_job(prefix + "loose", gang=False))
    repo.submit_job(_elastic(prefix + "grows"))
    repo.submit_job(make_job(prefix + "again", replicas=1, gang=False))
    clock.now += 10
    repo.record_binds([_bind(ref("grows", "worker", 0)),
                       _bind(ref("again", "worker", 0), "n2", (3,))], "cycle 1")
    again = ref("again", "worker", 0)
    repo.transition_task(again, TaskState.RUNNING, "started", pid=41, pid_start_time=7.5)
    clock.now += 10
    repo.record_binds([], "cycle 2", [Evict(again, "n2", "make room")])
    repo.evicted_task_stopped(again, "terminated", -15)
    clock.now += 10
    record([_bind(ref("gang", "master", 0)), _bind(ref("gang", "worker", 2), "n2", (1, 0)),
            _bind(ref("loose", "worker", 1), "n3", (5,)), _bind(ref("short", "master", 0)),
            _bind(ref("grows", "worker", 3)), _bind(ref("gang", "worker", 0), "n2", (2,)),
            _bind(again, "n1", (7,)), _bind(ref("gang", "worker", 1), "n2", (3,)),
            _bind(ref("short", "worker", 1))], "cycle 3")


def _stored(store: Store, prefix: str) -> tuple[list[Any], list[Any], list[Any]]:
    """Every column of the prefixed jobs' rows, task rows and events, in id order, with the
    prefix taken off names and without the ids that differ between the two worlds."""
    def plain(text: str | None) -> str | None:
        return None if text is None else text.replace(prefix, "")

    with store.sessions.begin() as s:
        jobs = s.scalars(select(JobRow).where(JobRow.name.startswith(prefix))
                         .order_by(JobRow.id)).all()
        names = {job.id: plain(job.name) for job in jobs}
        job_rows = [{**_columns(job, JobRow), "id": None, "name": names[job.id]}
                    for job in jobs]
        task_rows = [{**_columns(task, TaskRow), "id": None, "job_id": names[task.job_id]}
                     for task in s.scalars(select(TaskRow).where(TaskRow.job_id.in_(names))
                                           .order_by(TaskRow.id))]
        events = [{**_columns(e, EventRow), "id": None, "job_id": names[e.job_id],
                   "task": plain(e.task), "cause": plain(e.cause)}
                  for e in s.scalars(select(EventRow).where(EventRow.job_id.in_(names))
                                     .order_by(EventRow.id))]
    return job_rows, task_rows, events


def _columns(row: object, model: type[Any]) -> dict[str, Any]:
    return {c.key: getattr(row, c.key) for c in model.__table__.columns}


def _records(records: dict[TaskRef, TaskRecord], prefix: str) -> list[Any]:
    return [(ref.job.removeprefix(prefix), ref.group, ref.index, r.state, r.node, r.gpus,
             r.pid, r.pid_start_time, r.attempts, r.exit_code)
            for ref, r in records.items()]


@pytest.fixture
def ticks() -> _Ticks:
    return _Ticks()


@pytest.fixture
def fixed(store: Store, ticks: _Ticks) -> Repository:
    return Repository(store, clock=ticks)


def test_a_batch_stores_what_the_unit_of_work_stores(fixed: Repository, ticks: _Ticks,
                                                     store: Store) -> None:
    returned: dict[str, dict[TaskRef, TaskRecord]] = {}

    def through(prefix: str, record: Record) -> Record:
        def run(binds: list[Bind], cause: str) -> dict[TaskRef, TaskRecord]:
            returned[prefix] = record(binds, cause)
            return returned[prefix]
        return run

    _world(fixed, ticks, "one-", through("one-", fixed._record_binds_one_by_one))
    _world(fixed, ticks, "batch-", through("batch-", fixed.record_binds))
    one, batch = _stored(store, "one-"), _stored(store, "batch-")
    assert batch[0] == one[0]  # jobs: state, updated, ended…
    assert batch[1] == one[1]  # tasks: state, node, gpus, started, attempts, exit code…
    assert batch[2] == one[2]  # events, in the same order
    assert _records(returned["batch-"], "batch-") == _records(returned["one-"], "one-")
    # What the world is meant to show, so that the two paths cannot agree on nothing.
    jobs = {row["name"]: row["state"] for row in batch[0]}
    assert jobs == {"gang": "Running", "short": "Pending", "loose": "Running",
                    "grows": "Running", "again": "Running"}
    again = returned["batch-"][TaskRef("batch-again", "worker", 0)]
    assert (again.state, again.node, again.gpus, again.attempts, again.exit_code) == (
        TaskState.BOUND, "n1", (7,), 2, None)
    assert [e["target_state"] for e in batch[2][-2:]] == ["Running", "Running"]


def test_a_batch_records_what_it_returns(repo: Repository) -> None:
    repo.submit_job(make_job("a", replicas=1, min_available=2))
    refs = [TaskRef("a", "master", 0), TaskRef("a", "worker", 0)]
    returned = repo.record_binds([_bind(refs[0]), _bind(refs[1], "n2", (4, 1))], "placed")
    assert returned == repo.task_records(["a"])
    job = repo.get_job("a")
    assert job is not None and job.state.value == "Running"
    events = [(e.kind, e.task, e.source, e.target) for e in repo.job_events("a")][1:]
    assert events == [("TaskStateChanged", refs[0], "Pending", "Bound"),
                      ("TaskStateChanged", refs[1], "Pending", "Bound"),
                      ("JobStateChanged", None, "Pending", "Running")]


@pytest.mark.parametrize("bad", ["bound", "cancelled", "twice", "no task", "no job"])
def test_a_bad_bind_is_refused_as_one_by_one_and_stores_nothing(
        fixed: Repository, store: Store, bad: str) -> None:
    raised: dict[str, tuple[type[Exception], str]] = {}
    for prefix, record in (("one-", fixed._record_binds_one_by_one),
                           ("batch-", fixed.record_binds)):
        fixed.submit_job(make_job(prefix + "ok", gang=False))
        fixed.submit_job(make_job(prefix + "b", gang=False))
        held = TaskRef(prefix + "b", "worker", 0)
        if bad == "bound":
            fixed.record_binds([_bind(held)], "earlier")
        elif bad == "cancelled":
            fixed.transition_task(held, TaskState.CANCELLED, "user asked")
        binds = [_bind(TaskRef(prefix + "ok", "worker", 0)),
                 _bind(TaskRef(prefix + "ok", "master", 0)), {
                     "bound": _bind(held), "cancelled": _bind(held),
                     "twice": _bind(TaskRef(prefix + "ok", "worker", 0)),
                     "no task": _bind(TaskRef(prefix + "b", "worker", 9)),
                     "no job": _bind(TaskRef(prefix + "ghost", "worker", 0))}[bad],
                 _bind(TaskRef(prefix + "b", "worker", 1))]
        before = _stored(store, prefix)
        with pytest.raises((IllegalTransitionError, NotFoundError)) as error:
            record(binds, "cycle")
        assert _stored(store, prefix) == before
        raised[prefix] = (error.type, str(error.value).replace(prefix, ""))
    assert raised["batch-"] == raised["one-"]
