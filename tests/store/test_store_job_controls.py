"""Holds and requeues in the store: a hold is refused once a job has started, a requeue
under way is read back after a restart as a stop to finish, and its completion puts every
task back from scratch counting no job retry, held too when asked."""

from __future__ import annotations

import dataclasses

import pytest
from store_helpers import make_job

from shoal.api import Bind, JobState, Resources, TaskRef, TaskState
from shoal.store import Repository
from shoal.store.job_controls import JOB_RELEASED, ControlConflictError
from shoal.store.stops import JOB_HELD, JOB_REQUEUED, JOB_RETRIED

W0, W1, M0 = (TaskRef("a", "worker", 0), TaskRef("a", "worker", 1),
              TaskRef("a", "master", 0))


def _running(repo: Repository) -> None:
    repo.submit_job(dataclasses.replace(make_job("a"), job_retry_count=2))
    repo.record_binds([Bind(r, "n1", (i,), Resources.of(gpu=1))
                       for i, r in enumerate((M0, W0, W1))], "cycle 1")
    for ref in (M0, W0, W1):
        repo.transition_task(ref, TaskState.RUNNING, "started", pid=100 + ref.index)


def test_a_pending_job_is_held_and_released_once_each(repo: Repository) -> None:
    repo.submit_job(make_job("a"))
    assert repo.set_held("a", True, "held by alice")[1]
    assert not repo.set_held("a", True, "held by alice")[1]
    assert repo.get_job("a").held  # type: ignore[union-attr]
    assert repo.set_held("a", False, "released by bob")[1]
    kinds = [(e.kind, e.cause) for e in repo.job_events("a")]
    assert (JOB_HELD, "held by alice") in kinds and (JOB_RELEASED, "released by bob") in kinds
    assert kinds.count((JOB_HELD, "held by alice")) == 1


def test_a_started_job_cannot_be_held(repo: Repository) -> None:
    _running(repo)
    with pytest.raises(ControlConflictError, match="only a pending job can be held"):
        repo.set_held("a", True, "held by alice")
    assert not repo.get_job("a").held  # type: ignore[union-attr]


def test_a_requeue_under_way_survives_a_restart_and_counts_no_retry(repo: Repository) -> None:
    _running(repo)
    repo.requeue_check("a")
    stopping = repo.stop_job("a", JobState.PENDING, "requeued by alice", requeue=True,
                             hold="held by alice (requeue --hold)")
    assert {t.state for t in stopping.tasks} == {TaskState.RELEASING}
    assert stopping.held
    # What a restarted control plane reads back: a stop to finish, the job back to pending.
    assert repo.stopping_jobs() == {"a": (JobState.PENDING, "requeued by alice")}
    with pytest.raises(ControlConflictError, match="is being stopped"):
        repo.requeue_check("a")
    for ref in (M0, W0, W1):
        repo.transition_task(ref, TaskState.PENDING, "stopped")
    done = repo.finish_stop("a")
    assert (done.state, done.retries, done.held) == (JobState.PENDING, 0, True)
    kinds = [e.kind for e in repo.job_events("a")]
    assert JOB_REQUEUED in kinds and JOB_RETRIED not in kinds
    with pytest.raises(ControlConflictError, match="nothing to requeue"):
        repo.requeue_check("a")
