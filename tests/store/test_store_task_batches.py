"""Batched task writes (`record_starts`, `record_exits`): a batch's moves are recorded
together with their events, a task the store does not hold where the move starts is left
out (and returned) without touching the rest, and a job whose tasks all ended is ended in
the same transaction when the caller's decision says so — on SQLite and PostgreSQL."""

from __future__ import annotations

from store_helpers import make_job

from shoal.api import Bind, Job, JobState, Resources, TaskRef, TaskState
from shoal.store import Repository
from shoal.store.task_batches import JobEnd, TaskExit, TaskStart


def _bound(repo: Repository, name: str, replicas: int = 2) -> list[TaskRef]:
    """A stored job whose tasks are all BOUND (first attempt); its task refs."""
    job = make_job(name, replicas=replicas)
    repo.submit_job(job)
    refs = [TaskRef(name, g.name, i) for g in job.groups for i in range(g.replicas)]
    repo.record_binds([Bind(ref, "n1", (), Resources.of(cpu=1)) for ref in refs], "placed")
    return refs


def _start(ref: TaskRef, pid: int, attempt: int = 1) -> TaskStart:
    return TaskStart(ref, attempt, pid, 1000.0 + pid, f"process {pid} started")


def test_starts_are_recorded_together_with_their_events(repo: Repository) -> None:
    a, b = _bound(repo, "a"), _bound(repo, "b", replicas=1)
    refs = a + b
    assert repo.record_starts([_start(ref, 100 + i) for i, ref in enumerate(refs)]) == ()
    records = repo.task_records(["a", "b"])
    assert [(records[r].state, records[r].pid, records[r].pid_start_time) for r in refs] == [
        (TaskState.RUNNING, 100 + i, 1100.0 + i) for i in range(len(refs))]
    events = [e for e in repo.job_events("a") if e.task is not None and e.target == "Running"]
    assert [(e.task, e.source, e.cause) for e in events] == [
        (ref, "Bound", f"process {100 + i} started") for i, ref in enumerate(a)]


def test_a_start_the_store_does_not_hold_bound_is_left_out_alone(repo: Repository) -> None:
    refs = _bound(repo, "a", replicas=3)
    stale, moved, good = refs[0], refs[1], refs[2:]
    repo.transition_task(moved, TaskState.RELEASING, "evicted")
    starts = [_start(stale, 7, attempt=2), _start(moved, 8),
              *(_start(r, 9 + i) for i, r in enumerate(good))]
    assert set(repo.record_starts(starts)) == {stale, moved}
    records = repo.task_records(["a"])
    assert (records[stale].state, records[stale].pid) == (TaskState.BOUND, None)
    assert records[moved].state is TaskState.RELEASING
    assert all(records[r].state is TaskState.RUNNING for r in good)


def test_exits_end_the_jobs_whose_tasks_all_ended_in_one_go(repo: Repository) -> None:
    done, half = _bound(repo, "done", replicas=1), _bound(repo, "half", replicas=2)
    repo.record_starts([_start(r, 10 + i) for i, r in enumerate(done + half)])
    seen: list[str] = []

    def decide(job: Job) -> JobEnd | None:
        seen.append(job.name)
        ended = all(t.state.terminal for t in job.tasks)
        return JobEnd(JobState.SUCCEEDED, "all tasks succeeded") if ended else None

    result = repo.record_exits([TaskExit(r, "process exited with code 0", 0)
                                for r in done + half[:2]], decide)
    assert result.refused == ()
    assert [(j.name, j.state) for j in result.ended] == [("done", JobState.SUCCEEDED)]
    assert sorted(seen) == ["done", "half"]
    stored = repo.get_job("done")
    assert stored is not None and stored.state is JobState.SUCCEEDED
    assert all(t.state is TaskState.SUCCEEDED and t.exit_code == 0 for t in stored.tasks)
    kinds = [(e.kind, e.target) for e in repo.job_events("done")]
    assert kinds[-1] == ("JobStateChanged", "Succeeded")
    half_job = repo.get_job("half")
    assert half_job is not None and half_job.state is JobState.RUNNING
    states = {t.ref: t.state for t in half_job.tasks}
    assert [states[r] for r in half] == [TaskState.SUCCEEDED, TaskState.SUCCEEDED,
                                         TaskState.RUNNING]


def test_a_decision_with_tasks_left_to_stop_is_left_to_the_caller(repo: Repository) -> None:
    refs = _bound(repo, "a", replicas=1)
    repo.record_starts([_start(r, 10 + i) for i, r in enumerate(refs)])
    result = repo.record_exits([TaskExit(refs[0], "exited 0", 0)],
                               lambda job: JobEnd(JobState.SUCCEEDED, "master done"))
    assert result.ended == ()
    job = repo.get_job("a")
    assert job is not None and job.state is JobState.RUNNING


def test_an_exit_the_store_does_not_hold_running_is_refused_alone(repo: Repository) -> None:
    refs = _bound(repo, "a", replicas=1)
    repo.record_starts([_start(r, 10 + i) for i, r in enumerate(refs)])
    repo.transition_task(refs[1], TaskState.CANCELLED, "stopped")
    result = repo.record_exits([TaskExit(refs[0], "exited 0", 0),
                                TaskExit(refs[1], "exited 0", 0)], lambda job: None)
    assert result.refused == (refs[1],)  # CANCELLED is final
    records = repo.task_records(["a"])
    assert records[refs[0]].state is TaskState.SUCCEEDED
    assert records[refs[1]].state is TaskState.CANCELLED


def test_job_tokens_are_issued_and_revoked_in_batches(repo: Repository) -> None:
    repo.create_user("alice")
    repo.create_user("bob")
    tokens = repo.issue_job_tokens([("alice", "a"), ("bob", "b"), ("nobody", "c")])
    assert set(tokens) == {"a", "b"}  # an unknown user's job gets none
    users = {job: repo.authenticate(token) for job, token in tokens.items()}
    assert {job: (u.name, u.job) for job, u in users.items() if u is not None} == {
        "a": ("alice", "a"), "b": ("bob", "b")}
    kept = repo.issue_token("alice", job="kept")
    assert repo.revoke_tokens_of(["a", "b", "unknown"]) == 2
    assert all(repo.authenticate(token) is None for token in tokens.values())
    assert repo.authenticate(kept) is not None


def test_an_exit_batch_revokes_the_tokens_of_the_jobs_it_ends_only(repo: Repository) -> None:
    repo.create_user("alice")
    done, half = _bound(repo, "done", replicas=1), _bound(repo, "half", replicas=2)
    tokens = repo.issue_job_tokens([("alice", "done"), ("alice", "half")])
    assert all(repo.authenticate(token) is not None for token in tokens.values())  # cached
    repo.record_starts([_start(r, 10 + i) for i, r in enumerate(done + half)])
    result = repo.record_exits(
        [TaskExit(r, "exited 0", 0) for r in done + half[:1]],
        lambda job: JobEnd(JobState.SUCCEEDED, "all succeeded")
        if all(t.state.terminal for t in job.tasks) else None)
    assert [j.name for j in result.ended] == ["done"]
    assert repo.authenticate(tokens["done"]) is None  # revoked with its end, cache and all
    assert repo.authenticate(tokens["half"]) is not None
