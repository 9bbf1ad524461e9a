"""Jobs in the store: round trip, idempotent submission, listing, snapshots."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import func, select
from store_helpers import make_job

from shoal.api import Elasticity, JobState, ScaleStep, TaskState
from shoal.store import AlreadyExistsError, IdempotencyConflict, NotFoundError, Repository
from shoal.store.models import EventRow, JobRow, TaskRow
from shoal.store.repository import Waiting


def count(repo: Repository, model: type) -> int:
    with repo.store.sessions.begin() as s:
        return int(s.scalar(select(func.count()).select_from(model)) or 0)


def test_submit_round_trip(repo: Repository) -> None:
    job = make_job("train-1", submitted=12.5)
    stored, created = repo.submit_job(job, idempotency_key=None)
    assert created
    got = repo.get_job("train-1")
    assert got is not None
    assert stored.tasks == ()  # a new job's tasks are all pending: not listed back
    assert got == replace(stored, tasks=got.tasks)
    assert got.groups == job.groups
    assert (got.queue, got.scheduler_name, got.min_resources, got.priority_class, got.user,
            got.submitted, got.runtime_estimate) == (
        job.queue, job.scheduler_name, job.min_resources, job.priority_class, job.user,
        12.5, 3600.0)
    assert got.state is JobState.PENDING
    assert [(t.group, t.index, t.state) for t in got.tasks] == [
        ("master", 0, TaskState.PENDING), ("worker", 0, TaskState.PENDING),
        ("worker", 1, TaskState.PENDING)]
    events = repo.job_events("train-1")
    assert [e.kind for e in events] == ["Submitted"]
    assert events[0].target == "Pending"
    assert repo.get_job("nope") is None


def test_same_name_without_key_is_refused(repo: Repository) -> None:
    repo.submit_job(make_job("a"), idempotency_key=None)
    with pytest.raises(AlreadyExistsError):
        repo.submit_job(make_job("a"), idempotency_key=None)
    assert count(repo, JobRow) == 1
    assert count(repo, TaskRow) == 3


def test_idempotent_submit(repo: Repository) -> None:
    first, created = repo.submit_job(make_job("a"), idempotency_key="k1")
    again, created_again = repo.submit_job(make_job("a", submitted=99.0), idempotency_key="k1")
    assert created and not created_again
    assert again == first
    assert count(repo, JobRow) == 1
    assert count(repo, TaskRow) == 3
    assert count(repo, EventRow) == 1


def test_idempotency_conflict_stores_nothing(repo: Repository) -> None:
    repo.submit_job(make_job("a"), idempotency_key="k1")
    with pytest.raises(IdempotencyConflict):
        repo.submit_job(make_job("a", replicas=5), idempotency_key="k1")
    with pytest.raises(IdempotencyConflict):
        repo.submit_job(make_job("b"), idempotency_key="k1")
    assert repo.get_job("b") is None
    assert count(repo, JobRow) == 1
    assert count(repo, TaskRow) == 3
    assert count(repo, EventRow) == 1


def test_list_filters_and_keyset_pagination(repo: Repository) -> None:
    for i in range(7):
        repo.submit_job(make_job(f"j{i}", submitted=float(i // 2),
                                 queue="vc-a" if i % 2 else "vc-b",
                                 user="bob" if i < 3 else "carol"), idempotency_key=None)
    repo.transition_job("j3", JobState.CANCELLED, "user asked")
    names = [j.name for j in repo.list_jobs(limit=100)]
    assert names == [f"j{i}" for i in range(7)]
    pages: list[list[str]] = []
    after: str | None = None
    while True:
        page = repo.list_jobs(limit=3, after=after)
        if not page:
            break
        pages.append([j.name for j in page])
        after = page[-1].name
    assert pages == [["j0", "j1", "j2"], ["j3", "j4", "j5"], ["j6"]]
    assert [j.name for j in repo.list_jobs(queue="vc-a")] == ["j1", "j3", "j5"]
    assert [j.name for j in repo.list_jobs(user="bob")] == ["j0", "j1", "j2"]
    assert [j.name for j in repo.list_jobs(state=JobState.CANCELLED)] == ["j3"]
    assert [j.name for j in repo.list_jobs(queue="vc-a", state=JobState.PENDING,
                                           user="carol")] == ["j5"]
    assert all(len(j.tasks) == 3 for j in repo.list_jobs())
    with pytest.raises(NotFoundError):
        repo.list_jobs(after="missing")


def test_snapshot_excludes_terminal_jobs(repo: Repository) -> None:
    for name in ("p", "r", "s", "f", "c"):
        repo.submit_job(make_job(name), idempotency_key=None)
    repo.transition_job("r", JobState.RUNNING, "bound")
    repo.transition_job("s", JobState.RUNNING, "bound")
    repo.transition_job("s", JobState.SUCCEEDED, "all tasks succeeded")
    repo.transition_job("f", JobState.FAILED, "unschedulable")
    repo.transition_job("c", JobState.CANCELLED, "user asked")
    snapshot = repo.snapshot_jobs()
    assert sorted(j.name for j in snapshot) == ["p", "r"]
    assert all(len(j.tasks) == 3 for j in snapshot)


def test_concurrent_retries_create_one_job(repo: Repository) -> None:
    from concurrent.futures import ThreadPoolExecutor

    job = make_job("raced")
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: repo.submit_job(job, idempotency_key="same"),
                                range(8)))
    assert sum(created for _, created in results) == 1
    assert all(stored == results[0][0] for stored, _ in results)
    assert count(repo, JobRow) == 1
    assert count(repo, TaskRow) == 3


def test_waiting_reasons_join_the_history(repo: Repository) -> None:
    repo.submit_job(make_job("a"))
    repo.submit_job(make_job("b"))
    repo.record_waiting([Waiting("a", 5000.0, "Gang: only 1 of 2 tasks fit"),
                         Waiting("gone", 5000.0, "Unschedulable: x"),
                         Waiting("a", 5001.0, "InsufficientResources: 0 of 8 GPUs free")])
    repo.record_waiting([Waiting("b", 5002.0, "QueueLimit: team-a is at its max")])
    assert [(e.time, e.kind, e.cause) for e in repo.job_events("a")][1:] == [
        (5000.0, "Waiting", "Gang: only 1 of 2 tasks fit"),
        (5001.0, "Waiting", "InsufficientResources: 0 of 8 GPUs free")]
    assert [e.kind for e in repo.job_events("b")] == ["Submitted", "Waiting"]
    repo.record_waiting([])  # nothing to write is not an error


def test_a_jobs_own_virtual_cluster_and_its_carving_round_trip(repo: Repository) -> None:
    from dataclasses import replace

    from shoal.api import (
        FixedSizeNode,
        FixedSizeNodes,
        PlacementPolicy,
        Reserve,
        ResourceLimit,
        Resources,
        VirtualCluster,
        VirtualNodePlacement,
    )

    vc = VirtualCluster("job:pg", parent="team", min=Resources.of(cpu=1000),
                        max=ResourceLimit.of({"gpu": 2}), fixed_size_nodes=(FixedSizeNodes(
                            (FixedSizeNode(Resources.of(gpu=2), {"role": "head"}),),
                            PlacementPolicy.STRICT_SPREAD),))
    job = replace(make_job("pg", queue="team"), virtual_cluster=vc)
    repo.submit_job(job, idempotency_key=None)
    got = repo.get_job("pg")
    assert got is not None and got.virtual_cluster == vc
    carving = (VirtualNodePlacement("n3", (2, 3)),)
    repo.record_reservations([Reserve("job:pg", carving)])
    again = repo.get_job("pg")
    assert again is not None and again.virtual_cluster == replace(vc, reservation=carving)
    [snap] = [j for j in repo.snapshot_jobs() if j.name == "pg"]
    assert snap.virtual_cluster == replace(vc, reservation=carving)
    plain = make_job("plain")
    repo.submit_job(plain, idempotency_key=None)
    assert repo.get_job("plain").virtual_cluster is None  # type: ignore[union-attr]


def test_an_elastic_job_round_trips_and_is_part_of_its_spec(repo: Repository) -> None:
    elastic = Elasticity("worker", 1, 2, ScaleStep.POWER_OF_TWO, 1, 600.0)
    job = replace(make_job("elastic"), elastic=elastic, protect_for=30.0)
    stored, _ = repo.submit_job(job, idempotency_key="k")
    got = repo.get_job("elastic")
    assert got is not None and got == replace(stored, tasks=got.tasks)
    assert (got.elastic, got.protect_for, got.gang_minimum) == (elastic, 30.0, 2)
    assert repo.submit_job(job, idempotency_key="k")[1] is False  # the same spec: a replay
    for changed in (replace(job, elastic=replace(elastic, scale_cooldown=60.0)),
                    replace(job, protect_for=0.0), replace(job, elastic=None)):
        with pytest.raises(IdempotencyConflict):
            repo.submit_job(changed, idempotency_key="k")


def test_queue_fields_of_a_job_round_trip_and_are_part_of_its_spec(repo: Repository) -> None:
    base = make_job("pinned")
    master, worker = base.groups
    job = replace(base, preemptable=False,
                  groups=(replace(master, min_available=1),
                          replace(worker, min_count=1)))
    stored, _ = repo.submit_job(job, idempotency_key="k")
    got = repo.get_job("pinned")
    assert got is not None and got == replace(stored, tasks=got.tasks)
    assert (got.preemptable, got.groups[0].min_available, got.groups[1].min_count) == (
        False, 1, 1)
    assert repo.submit_job(job, idempotency_key="k")[1] is False
    for changed in (replace(job, preemptable=True), replace(job, groups=base.groups)):
        with pytest.raises(IdempotencyConflict):
            repo.submit_job(changed, idempotency_key="k")


def test_a_jobs_checkpoint_interval_round_trips_and_is_part_of_its_spec(
        repo: Repository) -> None:
    job = replace(make_job("saving"), checkpoint_interval=90.0)
    stored, _ = repo.submit_job(job, idempotency_key="c")
    got = repo.get_job("saving")
    assert got is not None and got.checkpoint_interval == 90.0
    assert got == replace(stored, tasks=got.tasks)
    assert repo.submit_job(job, idempotency_key="c")[1] is False
    with pytest.raises(IdempotencyConflict):
        repo.submit_job(replace(job, checkpoint_interval=None), idempotency_key="c")
    assert repo.get_job(repo.submit_job(make_job("plain"))[0].name).checkpoint_interval is None
