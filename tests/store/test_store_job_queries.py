"""Bounded reads and removal of jobs in the store (`shoal.store.job_queries`), on SQLite and
PostgreSQL: task rows written in bulk, summaries with task counts, task and event pages,
deleting ended jobs with everything they own, expiry by age, and idempotency keys that are
per user."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from store_helpers import make_job

from shoal.api import Bind, Job, JobState, Resources, TaskGroup, TaskRef, TaskState
from shoal.store import (
    AlreadyExistsError,
    IdempotencyConflict,
    NotFoundError,
    Repository,
    open_store,
)
from shoal.store.models import EventRow, JobRow, TaskRow, TokenRow


def count(repo: Repository, model: type, **where: object) -> int:
    with repo.store.reads.begin() as s:
        query = select(func.count()).select_from(model).filter_by(**where)
        return int(s.scalar(query) or 0)


def big_job(name: str, replicas: int, user: str = "alice") -> Job:
    base = make_job(name, user=user)
    return replace(base, groups=(*base.groups, TaskGroup(
        "many", replicas, Resources.of(cpu=100), command=("true",))))


def ended(repo: Repository, name: str, state: JobState = JobState.CANCELLED) -> None:
    """End a job that runs nothing (its pending tasks are cancelled with it)."""
    repo.stop_job(name, state, "done")


def test_task_rows_of_every_group_are_written_in_bulk(repo: Repository) -> None:
    repo.submit_job(big_job("big", 2500), idempotency_key=None)
    assert count(repo, TaskRow) == 1 + 2 + 2500
    job = repo.get_job("big")
    assert job is not None
    assert [(t.group, t.index) for t in job.tasks] == [
        ("master", 0), ("worker", 0), ("worker", 1), *(("many", i) for i in range(2500))]
    assert {(t.state, t.node, t.gpus, t.retries) for t in job.tasks} == {
        (TaskState.PENDING, None, (), 0)}


def test_summaries_count_tasks_per_state_and_never_list_them(repo: Repository) -> None:
    repo.submit_job(big_job("big", 1000), idempotency_key=None)
    repo.submit_job(make_job("small", submitted=1.0), idempotency_key=None)
    repo.record_binds([Bind(TaskRef("big", "many", i), "n1", (), Resources.of(cpu=100))
                      for i in range(3)], "test")
    summaries = repo.list_job_summaries(limit=10)
    assert [s.job.name for s in summaries] == ["big", "small"]
    big = summaries[0]
    assert big.job.tasks == ()
    assert dict(big.task_counts) == {TaskState.PENDING: 1000, TaskState.BOUND: 3}
    assert big.elastic_size is None and big.ended is None
    assert repo.job_summary("small") == summaries[1]
    assert repo.job_summary("nope") is None
    with pytest.raises(NotFoundError):
        repo.list_job_summaries(after="nope")
    assert [s.job.name for s in repo.list_job_summaries(after="big")] == ["small"]


def test_task_pages_follow_task_order(repo: Repository) -> None:
    repo.submit_job(big_job("big", 10), idempotency_key=None)
    seen: list[tuple[str, int]] = []
    after: tuple[str, int] | None = None
    while True:
        page = repo.task_page("big", limit=4, after=after)
        seen += [(t.group, t.index) for t in page]
        if len(page) < 4:
            break
        after = (page[-1].group, page[-1].index)
    assert seen == [("master", 0), ("worker", 0), ("worker", 1),
                    *(("many", i) for i in range(10))]
    with pytest.raises(NotFoundError):
        repo.task_page("big", limit=4, after=("many", 99))
    with pytest.raises(NotFoundError):
        repo.task_page("nope", limit=4)


def test_event_pages_and_the_latest_events(repo: Repository) -> None:
    repo.submit_job(make_job("a"), idempotency_key=None)
    ended(repo, "a")
    everything = repo.job_events("a")
    assert len(everything) == 5  # submitted, three tasks cancelled, the job cancelled
    first = repo.event_page("a", limit=2)
    assert first == everything[:2]
    assert repo.event_page("a", limit=2, after=first[-1].id) == everything[2:4]
    assert repo.event_page("a", limit=2, latest=True) == everything[-2:]


def test_ending_a_job_stamps_when_it_ended(repo: Repository) -> None:
    repo.submit_job(make_job("a"), idempotency_key=None)
    ended(repo, "a")
    summary = repo.job_summary("a")
    assert summary is not None and summary.ended is not None
    assert summary.ended == summary.updated


def test_deleting_removes_an_ended_job_with_all_it_owns(repo: Repository) -> None:
    repo.create_user("alice")
    for name in ("a", "b"):
        repo.submit_job(make_job(name), idempotency_key=f"key-{name}")
        repo.issue_token("alice", job=name)
    token = repo.issue_token("alice", job="a")
    assert repo.authenticate(token) is not None
    ended(repo, "a")
    assert repo.delete_jobs(["a", "b", "nope"]) == ["a"]  # b still runs: left alone
    assert repo.get_job("a") is None and repo.get_job("b") is not None
    with repo.store.reads.begin() as s:
        job_id_b = s.scalar(select(JobRow.id).where(JobRow.name == "b"))
    assert count(repo, TaskRow) == count(repo, TaskRow, job_id=job_id_b) == 3
    assert count(repo, EventRow) == count(repo, EventRow, job_id=job_id_b)
    assert count(repo, TokenRow, job="a") == 0 and count(repo, TokenRow, job="b") == 1
    assert repo.authenticate(token) is None
    # The name and the idempotency key can be used again.
    again, created = repo.submit_job(make_job("a", replicas=5), idempotency_key="key-a")
    assert created and again.name == "a"


def test_expiry_removes_jobs_ended_before_the_cutoff_and_those_asked_to_go(
        repo: Repository) -> None:
    for name in ("old", "recent", "running", "asked"):
        repo.submit_job(make_job(name), idempotency_key=None)
    ended(repo, "old")
    ended(repo, "recent")
    repo.request_delete("running")
    summary = repo.request_delete("asked")
    assert summary.delete_requested and not summary.job.state.terminal
    ended(repo, "asked")
    old = repo.job_summary("old")
    recent = repo.job_summary("recent")
    assert old is not None and recent is not None and old.ended is not None
    assert recent.ended is not None and old.ended < recent.ended
    assert sorted(repo.delete_expired(old.ended + (recent.ended - old.ended) / 2)) == [
        "asked", "old"]
    assert sorted(s.job.name for s in repo.list_job_summaries()) == ["recent", "running"]
    assert repo.delete_expired(None) == []  # no TTL: only what was asked; running stays
    ended(repo, "running")
    assert repo.delete_expired(None) == ["running"]


def test_idempotency_keys_are_per_user(repo: Repository) -> None:
    mine, created = repo.submit_job(make_job("alices", user="alice"), idempotency_key="k")
    assert created
    # Bob's "k" is another key: a new job, whatever alice's job is called.
    bobs, created = repo.submit_job(make_job("bobs", user="bob", replicas=5),
                                    idempotency_key="k")
    assert created and bobs.name == "bobs"
    # Bob replaying his own "k" gets his job back, never alice's.
    replay, created = repo.submit_job(make_job("bobs", user="bob", replicas=5),
                                      idempotency_key="k")
    assert not created and replay.name == "bobs"
    # Bob's "k" with alice's job name: the name is taken, and nothing names her key.
    with pytest.raises(AlreadyExistsError) as taken:
        repo.submit_job(make_job("alices", user="bob"), idempotency_key="k2")
    assert "k2" not in str(taken.value)
    # Alice's own key with another spec is still a conflict.
    with pytest.raises(IdempotencyConflict):
        repo.submit_job(make_job("other", user="alice"), idempotency_key="k")
    assert mine.name == "alices"
    assert count(repo, JobRow) == 2


def test_migrating_to_0007_keeps_every_row_and_stamps_ended_jobs(tmp_path: Path) -> None:
    # SQLite rebuilds `jobs` to change its unique constraint: with foreign keys on, dropping
    # the old table would have cascaded to every task and event.
    store = open_store(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        store.migrate("0006")
        with store.engine.begin() as conn:
            for job_id, state in ((1, "Succeeded"), (2, "Running")):
                conn.execute(text(
                    "INSERT INTO jobs (id, name, user, queue, scheduler_name, spec, state, "
                    "submitted, attained_gpu_seconds, created, updated, idempotency_key) "
                    "VALUES (:id, :name, 'alice', 'default', 'shoal', '[]', :state, 0, 0, 0, "
                    ":updated, :key)"),
                    {"id": job_id, "name": f"j{job_id}", "state": state,
                     "updated": 50.0 + job_id, "key": f"k{job_id}"})
                conn.execute(text(
                    "INSERT INTO tasks (job_id, group_name, task_index, state, gpus, attempts) "
                    "VALUES (:id, 'worker', 0, 'Pending', '[]', 0)"), {"id": job_id})
                conn.execute(text(
                    "INSERT INTO events (job_id, time, kind, cause) "
                    "VALUES (:id, 1, 'Submitted', 'x')"), {"id": job_id})
        store.migrate()
        repo = Repository(store)
        assert (count(repo, JobRow), count(repo, TaskRow), count(repo, EventRow)) == (2, 2, 2)
        done, running = repo.job_summary("j1"), repo.job_summary("j2")
        assert done is not None and running is not None
        assert (done.ended, running.ended) == (51.0, None)
        assert dict(done.task_counts) == {TaskState.PENDING: 1}
        # Bob's k1 is his own key now.
        _, created = repo.submit_job(make_job("bobs", user="bob"), idempotency_key="k1")
        assert created
    finally:
        store.close()
