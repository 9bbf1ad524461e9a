"""`Repository.insert_new`, the batched submission's insert (on SQLite run on the driver's
cursor, `shoal.store.driver_insert`): it writes the same rows, column by column, as the
single path `submit` does for the same jobs; names the jobs it wrote to the change feed;
and stores none of a batch the store refuses — on SQLite and PostgreSQL. And the names a
submission's checks read (`known_names`) follow the catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from store_helpers import make_job

from shoal.api import Job, Node, PriorityClass, Resources, VirtualCluster
from shoal.api.objects import renamed
from shoal.spec import load_text
from shoal.store import Repository
from shoal.store.job_changes import JobChange
from shoal.store.models import JobRow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
_KEYS = ("id", "job_id", "name", "created", "updated", "time")
"""Columns that name a row, or say when it was written, rather than what it holds."""


def _varied_jobs() -> list[Job]:
    """Jobs of many shapes: every example's (services, elastic groups, their own virtual
    cluster, annotations, dependencies ...), a gang job and a default-scheduler one."""
    jobs = [make_job("gang"), make_job("plain", gang=False, user=None)]
    for path in sorted(EXAMPLES.glob("**/*.yaml")):
        try:
            bundle = load_text(path.read_text(), str(path), launchable=False)
        except Exception:  # a cluster file, or a document that needs a cluster's names
            continue
        jobs.extend(bundle.jobs)
    assert len(jobs) > 15
    return jobs


def _rows(repo: Repository, table: str) -> list[tuple[str, dict[str, Any]]]:
    """Each row of `table` as its job's name and its other columns, in insertion order."""
    with repo.store.engine.connect() as connection:
        names = dict(connection.exec_driver_sql("SELECT id, name FROM jobs").all())
        result = connection.exec_driver_sql(f"SELECT * FROM {table} ORDER BY id")
        rows = [row._asdict() for row in result]
    return [(names[row["id" if table == "jobs" else "job_id"]],
             {k: v for k, v in row.items() if k not in _KEYS}) for row in rows]


def test_a_batch_writes_the_rows_a_single_submission_writes(repo: Repository) -> None:
    jobs = _varied_jobs()
    singles = [renamed(job, f"single-{i}") for i, job in enumerate(jobs)]
    for i, job in enumerate(singles):
        repo.submit(job, idempotency_key=f"s{i}")
    batch = [(renamed(job, f"batch-{i}"), f"b{i}" if i % 2 else None)
             for i, job in enumerate(jobs)]
    seen: list[JobChange] = []
    stop = repo.store.job_changes.listen(seen.append)
    try:
        stored = repo.insert_new(batch)
    finally:
        stop()
    assert stored is not None and [j.name for j in stored] == [j.name for j, _ in batch]
    for table in ("jobs", "tasks", "events"):
        rows = _rows(repo, table)
        single = [(name.removeprefix("single-"), row) for name, row in rows
                  if name.startswith("single-")]
        batched = [(name.removeprefix("batch-"), row) for name, row in rows
                   if name.startswith("batch-")]
        if table == "jobs":  # the keys differ on purpose: every other one has none
            for (index, row), (_, other) in zip(single, batched, strict=True):
                assert row.pop("idempotency_key") == f"s{index}"
                assert other.pop("idempotency_key") == \
                    (f"b{index}" if int(index) % 2 else None)
        assert batched == single, table
    with repo.store.reads.begin() as s:
        ids = set(s.scalars(select(JobRow.id).where(JobRow.name.startswith("batch-"))))
    assert [change.changed for change in seen] == [frozenset(ids)]


@pytest.mark.parametrize("clash", ["name", "key"])
def test_a_refused_batch_stores_none_of_it(repo: Repository, clash: str) -> None:
    repo.submit(make_job("taken"), idempotency_key="k")
    before = {table: _rows(repo, table) for table in ("jobs", "tasks", "events")}
    seen: list[JobChange] = []
    stop = repo.store.job_changes.listen(seen.append)
    try:
        refused = repo.insert_new([
            (make_job("fresh"), None),
            (make_job("taken" if clash == "name" else "other"), "k")])
    finally:
        stop()
    assert refused is None and seen == []
    assert {table: _rows(repo, table) for table in before} == before
    # The store is usable afterwards: the write turn and the transaction were given back.
    assert repo.insert_new([(make_job("fresh"), None)]) is not None


def test_the_known_names_follow_the_catalog(repo: Repository) -> None:
    """`known_names` (a submission's checks read it) is kept with the catalog: a node,
    virtual cluster or priority class written after it was read is known at the next."""
    before = repo.known_names()
    assert "n1" not in before.nodes and "team" not in before.queues
    assert "normal" in before.priority_classes  # a built-in class
    assert repo.known_names() is before  # kept while nothing changed
    repo.put_node(Node("n1", Resources.of(cpu=1000)))
    repo.put_virtual_cluster(VirtualCluster("team"))
    repo.put_priority_class(PriorityClass("vip", 5000))
    after = repo.known_names()
    assert "n1" in after.nodes and "team" in after.queues and "vip" in after.priority_classes
