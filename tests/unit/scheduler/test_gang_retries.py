"""A gang job whose task is retried in place after a peer succeeded: tasks that ended for
good count toward the gang minimum (`JobInfo.ready`; Volcano's job readiness counts
Succeeded), so the retried task is placed on its own when it fits — by allocate, enqueue,
backfill and preempt alike — instead of waiting forever for a minimum only live peers could
reach."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shoal.api import Job, Node, Resources, SchedulerName, Task, TaskGroup, TaskRef, TaskState
from shoal.api.decisions import Decisions, PendingKind
from shoal.core import Snapshot
from shoal.scheduler import Profile, run_cycle
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.profile import BUILTIN_PROFILES

HOUR = 3600.0


def nodes(count: int = 1, gpus: int = 4) -> tuple[Node, ...]:
    return tuple(Node(f"n{i}", Resources.of(cpu=16_000, memory=65_536, gpu=gpus))
                 for i in range(count))


def gang(name: str, tasks: int, gpu: int, at: float = 0.0, min_available: int | None = None,
         attained: float = 0.0) -> Job:
    return Job(name, (TaskGroup("w", tasks, Resources.of(cpu=1000 * max(gpu, 1), gpu=gpu)),),
               scheduler_name=SchedulerName.SHOAL, submitted=at, min_available=min_available,
               attained_gpu_seconds=attained)


def with_tasks(job: Job, **states: TaskState) -> Job:
    """The job with task `w<i>` in the given state (a holding one on n0 since 0)."""
    tasks = tuple(Task(job.name, "w", int(key[1:]), state,
                       "n0" if state.holds_resources else None, started=0.0)
                  for key, state in states.items())
    return replace(job, tasks=tasks)


def binds(decisions: Decisions) -> list[str]:
    return sorted(f"{b.task}@{b.node}" for b in decisions.binds)


@pytest.mark.parametrize("profile", sorted(BUILTIN_PROFILES))
def test_retried_task_of_a_gang_with_a_succeeded_peer_is_placed(profile: str) -> None:
    job = with_tasks(gang("g", 2, 4), w1=TaskState.SUCCEEDED)
    decisions = run_cycle(Snapshot(nodes(), (job,)), Profile.load(profile))
    assert binds(decisions) == ["g/w/0@n0"]
    assert not decisions.pending


def test_live_model_places_the_retry_after_a_peer_succeeded() -> None:
    """As the control loop drives it: both placed, rank 1 succeeds, rank 0 fails and is
    retried in place (released and wanted again)."""
    model = SchedulerModel(nodes(2))
    model.add_job(gang("g", 2, 4))
    assert binds(run_cycle(model)) == ["g/w/0@n0", "g/w/1@n1"]
    model.task_succeeded(TaskRef("g", "w", 1))
    model.release_task(TaskRef("g", "w", 0))
    info = model.jobs["g"]
    assert (info.holding, info.ended, info.succeeded, info.ready, info.finishing) == \
        (0, 1, 1, 1, True)
    assert binds(run_cycle(model)) == ["g/w/0@n0"]
    assert info.ready == 2 and not model.waiting


def test_a_peer_failed_within_min_failed_counts_too() -> None:
    """minFailed 2: rank 2 failed for good and the job goes on; rank 1 succeeded; rank 0 is
    retried. Rank 2 will never run again, so it counts toward the minimum as an ended task:
    the retry is placed on its own (live, `finish_task` counts the failure)."""
    job = replace(with_tasks(gang("g", 3, 4), w1=TaskState.SUCCEEDED, w2=TaskState.FAILED),
                  min_failed=2)
    assert binds(run_cycle(Snapshot(nodes(), (job,)))) == ["g/w/0@n0"]
    model = SchedulerModel(nodes(3))
    model.add_job(replace(gang("g", 3, 4), min_failed=2))
    assert len(run_cycle(model).binds) == 3
    model.finish_task(TaskRef("g", "w", 2))
    model.task_succeeded(TaskRef("g", "w", 1))
    model.release_task(TaskRef("g", "w", 0))
    info = model.jobs["g"]
    assert (info.holding, info.ended, info.succeeded, info.ready) == (0, 2, 1, 2)
    assert binds(run_cycle(model)) == ["g/w/0@n0"]


def test_retry_beyond_the_minimum_is_placed_though_nothing_runs() -> None:
    """minAvailable 2 of 4, three succeeded: the minimum is met by succeeded tasks alone, so
    the retried task is surplus, placed one by one even though the job holds nothing."""
    job = with_tasks(gang("g", 4, 4, min_available=2),
                     w1=TaskState.SUCCEEDED, w2=TaskState.SUCCEEDED, w3=TaskState.SUCCEEDED)
    decisions = run_cycle(Snapshot(nodes(), (job,)))
    assert binds(decisions) == ["g/w/0@n0"]


def test_only_the_missing_tasks_must_fit_together() -> None:
    """minAvailable 3 of 3 with one succeeded: the two pending tasks are all-or-nothing —
    one node of 4 GPUs cannot hold both 4-GPU tasks, so neither is placed."""
    job = with_tasks(gang("g", 3, 4), w2=TaskState.SUCCEEDED)
    decisions = run_cycle(Snapshot(nodes(), (job,)))
    assert binds(decisions) == []
    (pending,) = decisions.pending
    assert pending.reason.kind is PendingKind.UNSCHEDULABLE
    assert "2 × " in pending.reason.message


def test_enqueue_judges_what_is_missing_not_the_whole_minimum() -> None:
    """Two gangs of one shape at the enqueue action (queue, minimum, pending per group):
    `a` needs both its tasks at once and can never start on one 4-GPU node; `b` (one of
    three succeeded) needs only one more. `a`'s verdict must not be reused for `b`."""
    a = gang("a", 2, 4, at=0.0)
    b = with_tasks(gang("b", 3, 4, at=1.0, min_available=2), w2=TaskState.SUCCEEDED)
    decisions = run_cycle(Snapshot(nodes(), (a, b)))
    assert binds(decisions) == ["b/w/0@n0"]
    assert [p.job for p in decisions.pending] == ["a"]
    assert decisions.pending[0].reason.kind is PendingKind.UNSCHEDULABLE


def test_strict_fifo_head_with_a_retry_is_placed_not_blocking() -> None:
    job = with_tasks(gang("g", 2, 4, at=0.0), w1=TaskState.SUCCEEDED)
    other = gang("later", 1, 4, at=1.0)
    for profile in ("strict-fifo", "fifo", "fifo-backfill"):
        decisions = run_cycle(Snapshot(nodes(), (job, other)), Profile.load(profile))
        assert binds(decisions) == ["g/w/0@n0"], profile
        assert [p.job for p in decisions.pending] == ["later"], profile


def test_preempt_makes_room_for_the_retry() -> None:
    """las: `g` (less attained service) lost rank 0 to a retry while `old` took the node;
    preemption evicts `old` for the one task `g` misses."""
    g = with_tasks(gang("g", 2, 4, at=0.0), w1=TaskState.SUCCEEDED)
    old = with_tasks(gang("old", 1, 4, at=1.0, attained=5 * HOUR), w0=TaskState.RUNNING)
    decisions = run_cycle(replace(Snapshot(nodes(), (g, old)), now=2 * HOUR),
                          Profile.load("las"))
    assert [str(e.task) for e in decisions.evictions] == ["old/w/0"]
    assert binds(decisions) == ["g/w/0@n0"]
