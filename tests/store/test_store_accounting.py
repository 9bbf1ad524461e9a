"""Usage accounting in the store (issue 21), on SQLite and PostgreSQL: an attempt is
recorded in the transaction that ends it — a success of a poll's batch, an eviction, a
failure, a stop — once, with its node's GPU type, its outcome and its resource-seconds cut
at hour boundaries; reports by queue, GPU type, node and job read them back; and a report
that mixes 30-day, day and hour buckets sums exactly what the pure report of the same attempts
does."""

from __future__ import annotations

import random

import pytest
from fake_clock import ManualClock
from sqlalchemy import func, select
from store_helpers import make_job

from shoal.api import Bind, Evict, JobState, Node, Resources, TaskRef, TaskState
from shoal.api.accounting import (
    DAY,
    HOUR,
    Attempt,
    GroupBy,
    Outcome,
    Step,
    UsageQuery,
    usage_report,
)
from shoal.store import Repository, Store
from shoal.store.accounting import EndedAttempt, record_ended
from shoal.store.models import UsageAttemptRow
from shoal.store.stops import FailedTask
from shoal.store.task_batches import TaskExit

T0 = 1_800_000_000.0 - 600  # ten minutes before an hour (and a day) begins
M0, W0, W1 = TaskRef("a", "master", 0), TaskRef("a", "worker", 0), TaskRef("a", "worker", 1)
GIB = 2**30


@pytest.fixture
def clock() -> ManualClock:
    clock = ManualClock()
    clock.now = T0
    return clock


@pytest.fixture
def accounted(store: Store, clock: ManualClock) -> Repository:
    repo = Repository(store, clock=clock)
    repo.put_node(Node("n1", Resources.of(cpu=64_000, memory=65_536, gpu=8),
                       labels={"gpu-type": "a100"}))
    repo.put_node(Node("n2", Resources.of(cpu=64_000, memory=65_536, gpu=8)))
    repo.submit_job(make_job("a", queue="team-a", user="alice"), idempotency_key="k")
    repo.record_binds([Bind(M0, "n2", (), Resources.of(cpu=500)),
                       Bind(W0, "n1", (0,), Resources.of(gpu=1)),
                       Bind(W1, "n1", (1,), Resources.of(gpu=1))], "cycle 1")
    for ref in (M0, W0, W1):
        repo.transition_task(ref, TaskState.RUNNING, "started", pid=100 + ref.index)
    return repo


def _query(by: GroupBy, step: Step = Step.NONE) -> UsageQuery:
    return UsageQuery(by, T0 - DAY, T0 + DAY, step)


def test_each_end_is_recorded_once_with_its_outcome(accounted: Repository,
                                                    clock: ManualClock) -> None:
    repo = accounted
    clock.now = T0 + 1200  # W0 succeeds 20 minutes in: 10 of them in each hour
    recorded = repo.record_exits([TaskExit(W0, "exited 0", 0)], lambda _job: None)
    assert recorded.refused == ()
    again = repo.record_exits([TaskExit(W0, "exited 0", 0)], lambda _job: None)
    assert again.refused == (W0,)  # ended already: not recorded twice
    clock.now = T0 + 1800
    repo.record_binds([], "cycle 2", evictions=[Evict(W1, "n1", "preempted by b")])
    repo.evicted_task_stopped(W1, "exited", 143)
    clock.now = T0 + 2400
    repo.stop_job("a", JobState.FAILED, "master failed", failed=FailedTask(M0, "exit 1", 1))

    by_type = repo.usage_report(_query(GroupBy.GPU_TYPE))
    rows = {r.key: r for r in by_type.rows}
    assert set(rows) == {"a100", ""}
    a100 = rows["a100"]
    assert (a100.tasks, a100.gpu_seconds) == (2, 1200.0 + 1800.0)
    assert a100.wasted == {Outcome.PREEMPTED: 1800.0, Outcome.FAILED: 0.0}
    assert a100.cpu_seconds == 2 * 3000.0
    assert a100.memory_byte_seconds == 4 * GIB * 3000.0
    master = rows[""]
    assert (master.tasks, master.gpu_seconds, master.cpu_seconds) == (1, 0.0, 0.5 * 2400)
    assert by_type.total.tasks == 3

    by_queue = repo.usage_report(_query(GroupBy.QUEUE, Step.HOUR))
    [team] = by_queue.rows
    assert team.key == "team-a"
    # Each attempt began 600 s before the hour: 600 s each before it, the rest after.
    assert [(p.start, p.gpu_seconds) for p in team.series] == \
        [(T0 - 600 + 600 - HOUR + 600, 1200.0), (T0 + 600, 600.0 + 1200.0)]
    by_job = repo.usage_report(_query(GroupBy.JOB))
    assert [(r.key, r.tasks, r.gpu_seconds) for r in by_job.rows] == [("a", 3, 3000.0)]
    by_node = repo.usage_report(_query(GroupBy.NODE))
    assert [r.key for r in by_node.rows] == ["n1", "n2"]
    with repo.store.reads.begin() as s:
        assert s.scalar(select(func.count()).select_from(UsageAttemptRow)) == 3


def test_a_cancelled_job_is_useful_and_a_retried_one_failed(accounted: Repository,
                                                            clock: ManualClock) -> None:
    repo = accounted
    clock.now = T0 + 100
    job = repo.stop_job("a", JobState.CANCELLED, "cancelled by alice")
    assert {t.state for t in job.tasks} == {TaskState.RELEASING}
    for ref in (M0, W0):
        repo.transition_task(ref, TaskState.CANCELLED, "stopped")
    repo.transition_task(W1, TaskState.CANCELLED, "stopped")
    report = repo.usage_report(_query(GroupBy.USER))
    [alice] = report.rows
    assert (alice.key, alice.tasks, alice.gpu_seconds) == ("alice", 3, 200.0)
    assert alice.wasted == {Outcome.PREEMPTED: 0.0, Outcome.FAILED: 0.0}


def test_day_and_hour_buckets_add_up_as_the_pure_report(store: Store) -> None:
    repo = Repository(store, clock=ManualClock())
    rng = random.Random(21)
    base = 1_800_000_000 - 1_800_000_000 % DAY
    attempts = []
    for i in range(60):
        start = base + rng.uniform(0, 80 * DAY)
        attempts.append(Attempt(f"j{i}", rng.choice("xyz"), rng.choice(["u", "v"]), "",
                                rng.choice(["n1", "n2"]), rng.choice(list(Outcome)), start,
                                start + rng.uniform(0, 2 * DAY), rng.randint(0, 8), 1500, 64))
    with store.sessions.begin() as s:
        record_ended(s, [EndedAttempt(i, a.job, "w/0", 1, a.queue, a.user, a.node, a.start,
                                      a.end, Resources.of(cpu=a.cpu_millis,
                                                          memory=a.memory_mib, gpu=a.gpus),
                                      a.outcome) for i, a in enumerate(attempts)])
    for _ in range(12):
        since = base + rng.uniform(-DAY, 80 * DAY)
        until = since + rng.uniform(1, rng.choice([DAY, 6 * DAY, 75 * DAY]))
        for by in (GroupBy.QUEUE, GroupBy.NODE, GroupBy.JOB):
            for step in (Step.NONE, Step.DAY, Step.HOUR):
                query = UsageQuery(by, since, until, step)
                stored, pure = repo.usage_report(query), usage_report(query, attempts)
                assert [(r.key, r.tasks) for r in stored.rows] == \
                    [(r.key, r.tasks) for r in pure.rows]
                for got, want in zip((*stored.rows, stored.total), (*pure.rows, pure.total),
                                     strict=True):
                    assert got.gpu_seconds == pytest.approx(want.gpu_seconds)
                    assert got.memory_byte_seconds == pytest.approx(want.memory_byte_seconds)
                    assert got.wasted == pytest.approx(want.wasted)
                    assert [p.start for p in got.series] == [p.start for p in want.series]
                    assert [p.cpu_seconds for p in got.series] == \
                        pytest.approx([p.cpu_seconds for p in want.series])


def test_old_attempts_are_pruned_and_their_buckets_kept(accounted: Repository,
                                                        clock: ManualClock) -> None:
    repo = accounted
    clock.now = T0 + 100
    repo.record_exits([TaskExit(W0, "exited 0", 0)], lambda _job: None)
    assert repo.prune_usage_attempts(T0 + 100) == 0  # ended at T0 + 100: not before
    assert repo.prune_usage_attempts(T0 + 101) == 1
    assert repo.usage_report(_query(GroupBy.JOB)).rows == ()
    [queue] = repo.usage_report(_query(GroupBy.QUEUE)).rows
    assert (queue.tasks, queue.gpu_seconds) == (1, 100.0)


def _ended(repo: Repository) -> dict[str, float]:
    with repo.store.reads.begin() as s:
        rows = s.execute(select(UsageAttemptRow.task, UsageAttemptRow.ended))
        return {task: ended for task, ended in rows}


def test_an_attempt_is_charged_until_the_engine_saw_it_end(accounted: Repository,
                                                           clock: ManualClock) -> None:
    """The server was down while these ended: each is charged until its engine's end time,
    kept within [its bind, the store's now]; the task's own event keeps the store's time."""
    repo = accounted
    clock.now = T0 + 3600  # the restarted server's first poll, an hour after the bind
    repo.record_exits([TaskExit(W0, "exited 0", 0, ended_at=T0 + 30)], lambda _job: None)
    repo.transition_task(W1, TaskState.FAILED, "exit 2", exit_code=2, ended_at=T0 + 4000)
    repo.stop_job("a", JobState.FAILED, "master failed",
                  failed=FailedTask(M0, "exit 1", 1, ended_at=T0 - 50))
    # Engine clocks may be off: an end after the store's now is cut at now, one before
    # the bind at the bind.
    assert _ended(repo) == {"worker/0": T0 + 30, "worker/1": T0 + 3600, "master/0": T0}
    [team] = repo.usage_report(_query(GroupBy.QUEUE)).rows
    assert team.gpu_seconds == 30.0 + 3600.0
    assert team.wasted[Outcome.FAILED] == 3600.0
    [event] = [e for e in repo.job_events("a") if e.task == W0 and e.target == "Succeeded"]
    assert event.time == T0 + 3600


def test_an_unknown_end_time_is_charged_until_the_store_records_it(accounted: Repository,
                                                                    clock: ManualClock
                                                                    ) -> None:
    repo = accounted
    clock.now = T0 + 1800
    repo.record_binds([], "cycle 2", evictions=[Evict(W1, "n1", "preempted by b")])
    clock.now = T0 + 1900
    repo.evicted_task_stopped(W1, "exited", 143, ended_at=T0 + 1850)
    repo.record_exits([TaskExit(W0, "exited 0", 0)], lambda _job: None)  # LOST: no end known
    assert _ended(repo) == {"worker/1": T0 + 1850, "worker/0": T0 + 1900}
