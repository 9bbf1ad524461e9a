"""The control loop's batched writes on SQLite's cursor (`shoal.store.driver_writes`): a
burst's binds, starts and exits — jobs that end, one that does not, a start and an exit the
store refuses — write the same rows, table by table, as the same writes through SQLAlchemy;
and the change feed names the jobs they changed, as it does through SQLAlchemy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_clock import Clock
from store_helpers import make_job
from store_templates import migrated_sqlite

from shoal.api import Bind, Job, JobState, Resources, TaskRef
from shoal.store import Repository, driver_writes
from shoal.store.job_changes import JobChange
from shoal.store.task_batches import JobEnd, TaskExit, TaskStart

TABLES = ("jobs", "tasks", "events", "usage_attempts", "usage_hours", "usage_days",
          "usage_periods", "tokens")


def _decide(job: Job) -> JobEnd | None:
    if job.name.startswith("keep"):
        return None
    return JobEnd(JobState.SUCCEEDED, "every task succeeded")


def _burst(repo: Repository) -> list[list[JobChange]]:
    """Binds, starts (one refused) and exits (one refused) of a few jobs; the changes the
    feed heard, per write."""
    jobs = [make_job(f"job-{i}", replicas=1 + i % 3, user=f"u{i % 2}") for i in range(6)]
    jobs.append(make_job("keep", replicas=1))
    for job in jobs:
        repo.submit_job(job)
    refs = [TaskRef(job.name, g.name, i) for job in jobs for g in job.groups
            for i in range(g.replicas)]
    repo.record_binds([Bind(r, "n1", (0,) if r.group == "worker" else (),
                            Resources.of(cpu=1)) for r in refs], "placed by a test")
    heard: list[list[JobChange]] = []
    for first in range(0, len(refs), 4):
        chunk = refs[first:first + 4]
        seen: list[JobChange] = []
        stop = repo.store.job_changes.listen(seen.append)
        try:
            refused = repo.record_starts(
                [TaskStart(r, 1, 100 + first + i, 1000.0 + i, f"started {r}")
                 for i, r in enumerate(chunk)]
                + [TaskStart(chunk[0], 7, 1, 1.0, "a stale attempt")])
        finally:
            stop()
        assert refused == (chunk[0],)
        heard.append(seen)
    for first in range(0, len(refs), 5):
        chunk = refs[first:first + 5]
        seen = []
        stop = repo.store.job_changes.listen(seen.append)
        try:
            recorded = repo.record_exits(
                [TaskExit(r, f"process of {r} exited with code 0", 0, 1500.0 + first)
                 for r in chunk] + [TaskExit(TaskRef("nobody", "x", 0), "gone", 0)], _decide)
        finally:
            stop()
        assert recorded.refused == (TaskRef("nobody", "x", 0),)
        heard.append(seen)
    return heard


def _rows(repo: Repository, table: str) -> list[dict[str, Any]]:
    """Every row of `table`, in its key's order (some tables have no rowid)."""
    with repo.store.engine.connect() as connection:
        rows = [row._asdict() for row in connection.exec_driver_sql(f"SELECT * FROM {table}")]
    return sorted(rows, key=lambda row: [str(value) for value in row.values()])


@pytest.fixture
def two(sqlite_template: Path, tmp_path: Path) -> Iterator[tuple[Repository, Repository]]:
    stores = [migrated_sqlite(sqlite_template, tmp_path / f"{name}.db")
              for name in ("driver", "core")]
    try:
        yield Repository(stores[0], clock=Clock()), Repository(stores[1], clock=Clock())
    finally:
        for store in stores:
            store.close()


def test_the_driver_writes_the_rows_sqlalchemy_writes(
        two: tuple[Repository, Repository], monkeypatch: pytest.MonkeyPatch) -> None:
    on_driver, through_core = two
    heard_driver = _burst(on_driver)
    monkeypatch.setattr(driver_writes, "ON_DRIVER", False)
    heard_core = _burst(through_core)
    assert heard_driver == heard_core
    assert all(len(seen) == 1 and seen[0].changed for seen in heard_driver)
    for table in TABLES:
        assert _rows(on_driver, table) == _rows(through_core, table), table
    assert any(_rows(on_driver, "usage_hours"))
    ended = {row["name"]: row["state"] for row in _rows(on_driver, "jobs")}
    assert ended["keep"] == JobState.RUNNING.value
    assert {state for name, state in ended.items() if name != "keep"} \
        == {JobState.SUCCEEDED.value}
