"""The completion policy in the store: policy fields round-trip, a task retry, a job's stop
or retry and a gang restart are each one transaction, and rows stored before revision 0002
load with the defaults."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from sqlalchemy import text
from store_helpers import make_job

from shoal.api import (
    Bind,
    FailureAction,
    FailureEvent,
    IllegalTransitionError,
    Job,
    JobState,
    Resources,
    TaskRef,
    TaskState,
)
from shoal.store import IdempotencyConflict, Repository, StoreError, open_store
from shoal.store.stops import GANG_RESTARTED, JOB_RETRIED, JOB_STOPPING, FailedTask

W0, W1, M0 = (TaskRef("a", "worker", 0), TaskRef("a", "worker", 1),
              TaskRef("a", "master", 0))


def _policy_job() -> Job:
    job = make_job("a")
    master, worker = job.groups
    return dataclasses.replace(
        job, groups=(master, dataclasses.replace(worker, task_retry_count=2, min_succeeded=1)),
        min_succeeded=2, min_failed=2, job_retry_count=1)


def _running(repo: Repository) -> None:
    repo.submit_job(_policy_job(), idempotency_key="k")
    repo.record_binds([Bind(r, "n1", (i,), Resources.of(gpu=1))
                       for i, r in enumerate((M0, W0, W1))], "cycle 1")
    for ref in (M0, W0, W1):
        repo.transition_task(ref, TaskState.RUNNING, "started", pid=100 + ref.index)


def test_policy_round_trips_and_replays(repo: Repository) -> None:
    job = _policy_job()
    stored, created = repo.submit_job(job, idempotency_key="k")
    assert created
    assert (stored.min_succeeded, stored.min_failed, stored.job_retry_count,
            stored.retries) == (2, 2, 1, 0)
    assert (stored.groups[1].task_retry_count, stored.groups[1].min_succeeded) == (2, 1)
    assert repo.submit_job(job, idempotency_key="k")[1] is False


def test_failure_policies_round_trip_and_take_part_in_replays(repo: Repository) -> None:
    job = _policy_job()
    opted = dataclasses.replace(job, groups=(job.groups[0], dataclasses.replace(
        job.groups[1], policies={FailureEvent.TASK_FAILED: FailureAction.RESTART_GANG})))
    repo.submit_job(opted, idempotency_key="k")
    stored = repo.get_job("a")
    assert stored is not None
    assert [g.policies for g in stored.groups] == \
        [{}, {FailureEvent.TASK_FAILED: FailureAction.RESTART_GANG}]
    assert repo.submit_job(opted, idempotency_key="k")[1] is False
    with pytest.raises(IdempotencyConflict):
        repo.submit_job(job, idempotency_key="k")


def test_retry_task_records_failed_then_pending(repo: Repository) -> None:
    _running(repo)
    repo.retry_task(FailedTask(W0, "process exited with code 2", 2),
                    "retry 1/2 after exit code 2")
    job = repo.get_job("a")
    assert job is not None
    task = next(t for t in job.tasks if t.ref == W0)
    assert (task.state, task.retries, task.node) == (TaskState.PENDING, 1, None)
    moves = [(e.source, e.target, e.cause) for e in repo.job_events("a") if e.task == W0]
    assert moves[-2:] == [("Running", "Failed", "process exited with code 2"),
                          ("Failed", "Pending", "retry 1/2 after exit code 2")]
    record = repo.task_records(["a"])[W0]
    assert (record.exit_code, record.attempts, record.pid) == (2, 1, None)


def test_retry_of_a_cancelled_task_changes_nothing(repo: Repository) -> None:
    repo.submit_job(make_job("a"))
    repo.stop_job("a", JobState.CANCELLED, "cancelled by request")
    with pytest.raises(IllegalTransitionError):
        repo.retry_task(FailedTask(W0, "x"), "retry")
    assert repo.task_records(["a"])[W0].state is TaskState.CANCELLED


def test_job_retry_stop_then_restart(repo: Repository) -> None:
    _running(repo)
    repo.transition_task(M0, TaskState.SUCCEEDED, "done", exit_code=0)
    job = repo.stop_job("a", JobState.PENDING, "job retry 1/1",
                        failed=FailedTask(W0, "process exited with code 3", 3))
    assert {t.ref: t.state for t in job.tasks} == {
        M0: TaskState.SUCCEEDED, W0: TaskState.FAILED, W1: TaskState.RELEASING}
    assert repo.stopping_jobs() == {"a": (JobState.PENDING, "job retry 1/1")}
    with pytest.raises(StoreError):
        repo.finish_stop("b")
    repo.transition_task(W1, TaskState.PENDING, "stopped for the retry")
    job = repo.finish_stop("a")
    assert job.state is JobState.PENDING and job.retries == 1
    assert {t.state for t in job.tasks} == {TaskState.PENDING}
    assert repo.stopping_jobs() == {}
    kinds = [(e.kind, e.target) for e in repo.job_events("a") if e.task is None]
    assert (JOB_STOPPING, "Pending") in kinds and (JOB_RETRIED, None) in kinds
    assert kinds[-1] == ("JobStateChanged", "Pending")


def test_gang_restart_charges_the_lost_task_only(repo: Repository) -> None:
    _running(repo)
    repo.transition_task(M0, TaskState.SUCCEEDED, "done", exit_code=0)
    cause = "gang restarted: task a/worker/0 was lost; retry 1/2"
    job = repo.restart_gang(FailedTask(W0, "process was lost"), cause)
    assert {t.ref: t.state for t in job.tasks} == {
        M0: TaskState.SUCCEEDED, W0: TaskState.PENDING, W1: TaskState.RELEASING}
    assert job.state is JobState.RUNNING
    # A restart reads it as a stop to PENDING, as a job retry's.
    assert repo.stopping_jobs() == {"a": (JobState.PENDING, cause)}
    repo.transition_task(W1, TaskState.PENDING, "stopped for the restart")
    job = repo.finish_stop("a")
    assert job.state is JobState.PENDING and job.retries == 0
    assert {t.ref: (t.state, t.retries) for t in job.tasks} == {
        M0: (TaskState.SUCCEEDED, 0), W0: (TaskState.PENDING, 1), W1: (TaskState.PENDING, 0)}
    assert repo.stopping_jobs() == {}
    kinds = [(e.kind, e.target) for e in repo.job_events("a") if e.task is None]
    assert (JOB_STOPPING, "Pending") in kinds and (GANG_RESTARTED, None) in kinds
    assert (JOB_RETRIED, None) not in kinds
    assert kinds[-1] == ("JobStateChanged", "Pending")
    moves = [(e.source, e.target, e.cause) for e in repo.job_events("a") if e.task == W0]
    assert moves[-2:] == [("Running", "Failed", "process was lost"),
                          ("Failed", "Pending", cause)]


def test_gang_restart_with_no_peer_holding_is_done_at_once(repo: Repository) -> None:
    _running(repo)
    for ref in (M0, W1):
        repo.transition_task(ref, TaskState.SUCCEEDED, "done", exit_code=0)
    job = repo.restart_gang(FailedTask(W0, "process was lost"), "gang restarted")
    assert job.state is JobState.PENDING and repo.stopping_jobs() == {}
    assert {t.ref: t.state for t in job.tasks}[W0] is TaskState.PENDING


def test_cancel_during_a_gang_restart_cancels(repo: Repository) -> None:
    _running(repo)
    repo.restart_gang(FailedTask(W0, "process was lost"), "gang restarted")
    repo.stop_job("a", JobState.CANCELLED, "cancelled by request")
    assert repo.stopping_jobs() == {"a": (JobState.CANCELLED, "cancelled by request")}
    for ref in (M0, W1):
        repo.transition_task(ref, TaskState.CANCELLED, "stopped")
    job = repo.finish_stop("a")
    assert job.state is JobState.CANCELLED
    assert {t.state for t in job.tasks} == {TaskState.CANCELLED}


def test_stop_with_nothing_running_ends_at_once(repo: Repository) -> None:
    repo.submit_job(make_job("a"))
    job = repo.stop_job("a", JobState.CANCELLED, "cancelled by request")
    assert job.state is JobState.CANCELLED
    assert {t.state for t in job.tasks} == {TaskState.CANCELLED}
    assert repo.stopping_jobs() == {}


def test_rows_stored_before_0002_load_with_defaults(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        store.migrate("0001")
        with store.engine.begin() as conn:
            conn.execute(text(
                "INSERT INTO jobs (id, name, queue, scheduler_name, spec, state, submitted, "
                "attained_gpu_seconds, created, updated) VALUES (1, 'old', 'default', "
                "'shoal', :spec, 'Pending', 0, 0, 0, 0)"),
                {"spec": '[{"name": "worker", "replicas": 1, "resources": {"cpu": 1000}, '
                         '"command": ["true"], "env": {}, "node_selector": {}, '
                         '"working_dir": null}]'})
            conn.execute(text(
                "INSERT INTO tasks (job_id, group_name, task_index, state, gpus, attempts) "
                "VALUES (1, 'worker', 0, 'Pending', '[]', 0)"))
        store.migrate()
        job = Repository(store).get_job("old")
        assert job is not None
        assert (job.min_succeeded, job.min_failed, job.job_retry_count, job.retries) == \
            (None, None, 0, 0)
        assert (job.groups[0].task_retry_count, job.groups[0].min_succeeded) == (0, None)
        assert job.tasks[0].retries == 0
    finally:
        store.close()
