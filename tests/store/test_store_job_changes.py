"""The store's change feed (`shoal.store.job_changes`), which job watches follow: every path
that changes a job — a submission, the batched binds and starts, a unit-of-work transition, a
deletion request, a name taken over into history — names the job once its transaction has
committed; a transaction rolled back names nothing; a removed job comes with its summary as
last stored; and a listener that stopped hears nothing — on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from store_helpers import make_job

from shoal.api import Bind, IllegalTransitionError, JobState, Resources, TaskRef
from shoal.store import NotFoundError, Repository
from shoal.store.job_changes import JobChange
from shoal.store.task_batches import TaskStart


def _id(repo: Repository, name: str) -> int:
    from sqlalchemy import select

    from shoal.store.models import JobRow
    with repo.store.reads.begin() as s:
        found = s.scalar(select(JobRow.id).where(JobRow.name == name))
    assert found is not None
    return found


def _changed(repo: Repository, write: Callable[[], object]) -> list[JobChange]:
    seen: list[JobChange] = []
    stop = repo.store.job_changes.listen(seen.append)
    try:
        write()
    finally:
        stop()
    return seen


def test_every_write_path_names_the_jobs_it_changed(repo: Repository) -> None:
    job = make_job("a", replicas=1)
    [submitted] = _changed(repo, lambda: repo.submit_job(job))
    a = _id(repo, "a")
    assert submitted == JobChange(frozenset({a}))
    refs = [TaskRef("a", g.name, i) for g in job.groups for i in range(g.replicas)]
    [bound] = _changed(repo, lambda: repo.record_binds(
        [Bind(r, "n1", (), Resources.of(cpu=1)) for r in refs], "placed"))
    assert bound.changed == {a}
    [started] = _changed(repo, lambda: repo.record_starts(
        [TaskStart(refs[0], 1, 10, 1010.0, "started")]))
    assert started.changed == {a}
    repo.submit_job(make_job("b", replicas=1))
    b = _id(repo, "b")
    [held] = _changed(repo, lambda: repo.set_held("b", True, "held by a test"))
    assert held.changed == {b}
    [asked] = _changed(repo, lambda: repo.request_delete("b"))  # no event: the row says
    assert asked.changed == {b}
    [cancelled] = _changed(repo, lambda: repo.transition_job("b", JobState.CANCELLED, "t"))
    assert cancelled.changed == {b}
    # A new job under an ended job's name: both the new one and the one kept in history.
    repo.submit_job(make_job("c", replicas=1))
    repo.transition_job("c", JobState.CANCELLED, "t")
    old = _id(repo, "c")
    [taken] = _changed(repo, lambda: repo.submit(make_job("c", replicas=1)))
    assert taken.changed == {old, _id(repo, "c")} and len(taken.changed) == 2


def test_a_rolled_back_transaction_names_nothing(repo: Repository) -> None:
    repo.submit_job(make_job("a", replicas=1))
    seen: list[JobChange] = []
    stop = repo.store.job_changes.listen(seen.append)
    try:
        with pytest.raises(NotFoundError):  # the second bind fails: none is stored
            repo.record_binds([Bind(TaskRef("a", "master", 0), "n1", (), Resources.of(cpu=1)),
                               Bind(TaskRef("a", "master", 7), "n1", (), Resources.of(cpu=1))],
                              "placed")
        with pytest.raises(IllegalTransitionError):  # unit of work, flushed, rolled back
            repo.transition_job("a", JobState.SUCCEEDED, "not from Pending")
    finally:
        stop()
    assert seen == []


def test_a_removed_job_comes_with_its_last_summary(repo: Repository) -> None:
    repo.submit_job(make_job("gone", replicas=1))
    repo.transition_job("gone", JobState.CANCELLED, "cancelled by a test")
    [removed] = _changed(repo, lambda: repo.delete_jobs(["gone"]))
    assert removed.changed == set()
    assert [(s.job.name, s.job.state) for s in removed.deleted] == \
        [("gone", JobState.CANCELLED)]


def test_a_listener_that_stopped_hears_nothing(repo: Repository) -> None:
    seen: list[JobChange] = []
    stop = repo.store.job_changes.listen(seen.append)
    stop()
    assert not repo.store.job_changes.listening
    repo.submit_job(make_job("quiet", replicas=1))
    repo.transition_job("quiet", JobState.CANCELLED, "t")
    assert repo.delete_jobs(["quiet"]) == ["quiet"]
    assert seen == []
