"""State changes: legal ones are recorded with their cause, illegal ones change nothing, and a
cycle's binds are stored all together or not at all."""

from __future__ import annotations

import pytest
from store_helpers import make_job

from shoal.api import (
    Bind,
    Evict,
    IllegalTransitionError,
    JobState,
    Resize,
    Resources,
    TaskRef,
    TaskState,
)
from shoal.store import NotFoundError, Repository


def bind(job: str, group: str, index: int, node: str = "n1", gpus: tuple[int, ...] = (0,)
         ) -> Bind:
    return Bind(TaskRef(job, group, index), node, gpus, Resources.of(gpu=len(gpus)))


def test_legal_transitions_are_recorded(repo: Repository) -> None:
    repo.submit_job(make_job("a"), idempotency_key=None)
    move = repo.transition_job("a", JobState.RUNNING, "gang placed")
    assert (move.source, move.target) == (JobState.PENDING, JobState.RUNNING)
    ref = TaskRef("a", "worker", 1)
    repo.transition_task(ref, TaskState.BOUND, "placed", node="n7", gpus=[2, 3])
    repo.transition_task(ref, TaskState.RUNNING, "started", pid=4242, pid_start_time=17.25)
    repo.transition_task(ref, TaskState.FAILED, "exited 3", exit_code=3)
    job = repo.get_job("a")
    assert job is not None
    assert job.state is JobState.RUNNING
    task = next(t for t in job.tasks if t.ref == ref)
    assert (task.state, task.node, task.gpus) == (TaskState.FAILED, "n7", (2, 3))
    assert task.started is not None
    events = repo.job_events("a")
    assert [(e.kind, e.task, e.source, e.target, e.cause) for e in events[1:]] == [
        ("JobStateChanged", None, "Pending", "Running", "gang placed"),
        ("TaskStateChanged", ref, "Pending", "Bound", "placed"),
        ("TaskStateChanged", ref, "Bound", "Running", "started"),
        ("TaskStateChanged", ref, "Running", "Failed", "exited 3"),
    ]
    assert [e.time for e in events] == sorted(e.time for e in events)
    repo.transition_task(ref, TaskState.PENDING, "retry")
    back = next(t for t in repo.get_job("a").tasks if t.ref == ref)  # type: ignore[union-attr]
    assert (back.state, back.node, back.gpus, back.started) == (TaskState.PENDING, None, (), None)


def test_illegal_transitions_change_nothing(repo: Repository) -> None:
    repo.submit_job(make_job("a"), idempotency_key=None)
    before = repo.get_job("a")
    with pytest.raises(IllegalTransitionError):
        repo.transition_job("a", JobState.SUCCEEDED, "too soon")
    with pytest.raises(IllegalTransitionError):
        repo.transition_task(TaskRef("a", "worker", 0), TaskState.RUNNING, "not bound",
                             node="n1", pid=1)
    with pytest.raises(ValueError, match="cause"):
        repo.transition_job("a", JobState.RUNNING, "")
    with pytest.raises(NotFoundError):
        repo.transition_task(TaskRef("a", "worker", 9), TaskState.BOUND, "x")
    with pytest.raises(NotFoundError):
        repo.transition_job("missing", JobState.RUNNING, "x")
    assert repo.get_job("a") == before
    assert len(repo.job_events("a")) == 1


def test_record_binds_runs_job_at_gang_minimum(repo: Repository) -> None:
    repo.submit_job(make_job("g", replicas=3, min_available=3), idempotency_key=None)
    repo.submit_job(make_job("d", gang=False), idempotency_key=None)
    repo.record_binds([bind("g", "master", 0), bind("g", "worker", 0, gpus=(0,)),
                       bind("d", "worker", 1, node="n2", gpus=(5,))], "cycle 1")
    g, d = repo.get_job("g"), repo.get_job("d")
    assert g is not None and d is not None
    assert g.state is JobState.PENDING  # 2 of a gang minimum of 3
    assert d.state is JobState.RUNNING  # the default scheduler needs one task
    bound = {str(t.ref): (t.state, t.node, t.gpus) for t in d.tasks}
    assert bound["d/worker/1"] == (TaskState.BOUND, "n2", (5,))
    repo.record_binds([bind("g", "worker", 1, gpus=(1,))], "cycle 2")
    g = repo.get_job("g")
    assert g is not None and g.state is JobState.RUNNING
    last = repo.job_events("g")[-1]
    assert (last.kind, last.target) == ("JobStateChanged", "Running")
    assert "cycle 2" in last.cause


def test_record_binds_is_all_or_nothing(repo: Repository) -> None:
    repo.submit_job(make_job("a", gang=False), idempotency_key=None)
    repo.submit_job(make_job("b", gang=False), idempotency_key=None)
    before = (repo.get_job("a"), repo.get_job("b"), repo.job_events("a"))
    with pytest.raises(NotFoundError):
        repo.record_binds([bind("a", "worker", 0), bind("b", "master", 0),
                           bind("a", "worker", 7)], "cycle")
    with pytest.raises(NotFoundError):
        repo.record_binds([bind("a", "worker", 0), bind("ghost", "worker", 0)], "cycle")
    repo.transition_task(TaskRef("b", "worker", 0), TaskState.CANCELLED, "user asked")
    before_b = repo.get_job("b")
    with pytest.raises(IllegalTransitionError):
        repo.record_binds([bind("a", "worker", 0), bind("b", "worker", 0)], "cycle")
    assert (repo.get_job("a"), repo.job_events("a")) == (before[0], before[2])
    assert repo.get_job("b") == before_b
    with pytest.raises(IllegalTransitionError):  # the same task twice in one cycle
        repo.record_binds([bind("a", "worker", 0), bind("a", "worker", 0)], "cycle")
    assert repo.get_job("a") == before[0]


def test_task_records_carry_the_process_fields(repo: Repository) -> None:
    repo.submit_job(make_job("procs", replicas=1))
    repo.submit_job(make_job("other", replicas=1))
    ref = TaskRef("procs", "worker", 0)
    repo.transition_task(ref, TaskState.BOUND, "placed", node="n1", gpus=[1])
    repo.transition_task(ref, TaskState.RUNNING, "started", pid=99, pid_start_time=5.5)
    records = repo.task_records(["procs"])
    assert set(records) == {TaskRef("procs", "master", 0), ref}
    record = records[ref]
    assert (record.state, record.node, record.gpus, record.pid, record.pid_start_time,
            record.attempts, record.exit_code) == (TaskState.RUNNING, "n1", (1,), 99, 5.5, 1,
                                                   None)
    assert repo.task_records([]) == {}


def test_evictions_are_stored_with_the_binds_they_make_room_for(repo: Repository) -> None:
    repo.submit_job(make_job("low", replicas=2, min_available=3), idempotency_key=None)
    repo.submit_job(make_job("high", replicas=1, min_available=2), idempotency_key=None)
    repo.record_binds([bind("low", "master", 0, gpus=()), bind("low", "worker", 0, gpus=(0,)),
                       bind("low", "worker", 1, gpus=(1,))], "cycle 1")
    for index, pid in ((0, 101), (1, 102)):  # the master never started
        repo.transition_task(TaskRef("low", "worker", index), TaskState.RUNNING, "started",
                             pid=pid)
    evicted = [Evict(TaskRef("low", g, i), "n1", "taken for high")
               for g, i in (("master", 0), ("worker", 0), ("worker", 1))]
    repo.record_binds([bind("high", "master", 0, gpus=()), bind("high", "worker", 0)],
                      "cycle 2", evicted)
    low, high = repo.get_job("low"), repo.get_job("high")
    assert low is not None and high is not None
    # Started tasks keep their node and pid until they have stopped; the master goes back.
    assert {str(t.ref): (t.state, t.node) for t in low.tasks} == {
        "low/master/0": (TaskState.PENDING, None),
        "low/worker/0": (TaskState.RELEASING, "n1"),
        "low/worker/1": (TaskState.RELEASING, "n1")}
    assert low.state is JobState.PENDING  # evicted whole
    assert high.state is JobState.RUNNING
    assert repo.job_events("low")[-1].cause == "evicted whole: taken for high"
    repo.evicted_task_stopped(TaskRef("low", "worker", 0), "exited with code 143", 143)
    task = next(t for t in repo.get_job("low").tasks  # type: ignore[union-attr]
                if t.ref == TaskRef("low", "worker", 0))
    assert (task.state, task.node, task.retries) == (TaskState.PENDING, None, 0)
    assert repo.job_events("low")[-1].cause == "stopped after eviction (exited with code 143)"


def test_a_bad_eviction_stores_nothing_of_its_cycle(repo: Repository) -> None:
    repo.submit_job(make_job("a", gang=False), idempotency_key=None)
    before = (repo.get_job("a"), repo.job_events("a"))
    with pytest.raises(IllegalTransitionError):  # a pending task cannot be evicted
        repo.record_binds([bind("a", "worker", 0)], "cycle",
                          [Evict(TaskRef("a", "worker", 1), "n1", "why")])
    assert (repo.get_job("a"), repo.job_events("a")) == before


def test_a_partial_admission_stores_the_admitted_size(repo: Repository) -> None:
    """A gang (minAvailable 5: every task) admitted with 2 of its 4 workers: the worker
    group's replicas become 2, the rows of the workers that never run are gone, and the
    master with 2 workers is the whole (clipped) gang minimum, so the job runs."""
    repo.submit_job(make_job("p", replicas=4, min_available=5), idempotency_key=None)
    admission = Resize("p", "worker", 2, "partially admitted: 2 of 4 replicas fit "
                       "(minCount 2)", partial_admission=True)
    repo.record_binds([bind("p", "master", 0), bind("p", "worker", 0, gpus=(0,)),
                       bind("p", "worker", 1, gpus=(1,))], "cycle 1", (), [admission])
    p = repo.get_job("p")
    assert p is not None
    assert (p.group("worker").replicas, p.replicas, p.gang_minimum) == (2, 3, 3)
    assert sorted(str(t.ref) for t in p.tasks) == ["p/master/0", "p/worker/0", "p/worker/1"]
    assert p.state is JobState.RUNNING
    assert any(e.kind == "PartiallyAdmitted" and "2 of 4" in e.cause
               for e in repo.job_events("p"))


def test_a_partial_admission_never_drops_a_started_task(repo: Repository) -> None:
    repo.submit_job(make_job("p", replicas=4, gang=False), idempotency_key=None)
    repo.record_binds([bind("p", "worker", 3)], "cycle 1")
    with pytest.raises(IllegalTransitionError):
        repo.record_binds([], "cycle 2", (), [Resize("p", "worker", 2, "partially admitted",
                                                     partial_admission=True)])
    p = repo.get_job("p")
    assert p is not None and p.group("worker").replicas == 4
