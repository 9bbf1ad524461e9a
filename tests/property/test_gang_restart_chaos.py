"""Lost tasks at random (issue 15: a gang whose member was lost is restarted whole): random
jobs — rigid gangs, gangs with `minAvailable` 1, jobs placed task by task, elastic jobs, with
`taskRetryCount`, `jobRetryCount` and `minFailed` drawn — through a real `ControlPlane` over
a real SQLite store, with an executor whose running processes vanish now and then (they
poll LOST, as a task on a dead node does), and whose stops take a few polls. A crash (a new
control plane over the same store and processes) comes at a random step, often in the middle
of a gang's restart. Processes are fakes, so hundreds of cycles cost seconds.

After every step the whole system is checked:

- no member of a rigid gang runs alone, waiting for a lost peer: once a loss is processed
  and a retry was spent on it (the lost task's, or the job's), no task of the job that held
  resources when its peer was lost still runs — or is bound — as that same attempt: it is
  being stopped, or runs as a new attempt placed with the restarted gang. The same holds
  for a failed exit where the group's `policies` restart the gang on it, and not for a
  loss where they opted out;
- every task the store holds as BOUND, RUNNING or RELEASING is tracked by the control plane,
  or BOUND and waiting for an eviction's handover; every live process is tracked under the
  pid the store records; the executor only launched attempts the store held as BOUND.

And no task is lost across restarts: every job ends with no process left, and a rigid job
that succeeded ran each of its tasks to an end (succeeded, or failed below `minFailed`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import (
    Elasticity,
    FailureAction,
    FailureEvent,
    Job,
    Resources,
    SchedulerName,
    TaskGroup,
    TaskRef,
    TaskState,
)
from shoal.control import ControlPlane
from shoal.control.completion import restarts_whole
from shoal.executors.contract import RecordedAttempt
from shoal.executors.task import RUNNING, RunningTask, TaskLaunch, TaskPhase, TaskStatus
from shoal.store import Repository

from .chaos_support import (
    FakeExecutor,
    Proc,
    World,
    check_tracking,
    run_until_quiet,
    summary,
    worlds,
)

PLACED = (TaskState.BOUND, TaskState.RUNNING)
MAX_STEPS = 200
#: The chance that a running process vanishes at one poll.
LOSS = 0.08
LOST = TaskStatus(TaskPhase.LOST, detail="its node died")


@dataclass(frozen=True)
class Loss:
    """A process seen lost (or failed), with what its job's other tasks held then."""

    ref: TaskRef
    event: FailureEvent
    task_retries: int
    job_retries: int
    peers: dict[TaskRef, int] = field(default_factory=dict)
    """Each peer BOUND or RUNNING then → its attempt."""


class LossyExecutor(FakeExecutor):
    """Launches fake processes that vanish at random (they poll LOST for good), and whose
    stops take a few polls."""

    def __init__(self, root: Path, repository: Repository, rng: random.Random) -> None:
        super().__init__(root, repository, rng)
        self.losses: list[Loss] = []

    def start(self, spec: TaskLaunch, ref: TaskRef) -> RunningTask:
        handle = self.claim(spec, ref, self.new_pid())
        self.procs[handle.pid] = Proc(handle, ref, self.rng.randint(1, 5),
                                      1 if self.rng.random() < 0.1 else 0)
        return handle

    def poll(self, task: RunningTask) -> TaskStatus:
        proc = self.procs.get(task.pid)
        if proc is None:
            return LOST
        if proc.ended is None:
            if proc.stopping is not None:
                if proc.stopping > 0:
                    proc.stopping -= 1
                    return RUNNING
                proc.ended = TaskStatus(TaskPhase.EXITED, signal=15)
            elif self.rng.random() < LOSS:
                proc.ended = LOST
                self._note(proc, FailureEvent.TASK_LOST)
            elif proc.polls > 0:
                proc.polls -= 1
                return RUNNING
            else:
                proc.ended = TaskStatus(TaskPhase.EXITED, exit_code=proc.code)
                if proc.code:
                    self._note(proc, FailureEvent.TASK_FAILED)
        return proc.ended

    def _note(self, proc: Proc, event: FailureEvent) -> None:
        job = self.repository.get_job(proc.ref.job)
        assert job is not None
        retries = next((t.retries for t in job.tasks if t.ref == proc.ref), 0)
        peers = {r.ref: r.attempts for r in self.repository.task_records([job.name]).values()
                 if r.ref != proc.ref and r.state in PLACED}
        self.losses.append(Loss(proc.ref, event, retries, job.retries, peers))

    def request_stop(self, task: RunningTask, grace_period: float | None = None) -> bool:
        proc = self.procs.get(task.pid)
        if proc is None or proc.ended is not None:
            return False
        if proc.stopping is None:
            proc.stopping = self.rng.randint(0, 3)
        return True

    def stop(self, task: RunningTask, grace_period: float | None = None) -> TaskStatus:
        proc = self.procs.get(task.pid)
        if proc is not None and proc.ended is None:
            proc.ended = TaskStatus(TaskPhase.EXITED, signal=9)
        return self.poll(task)

    def recorded(self, recorded: RecordedAttempt) -> RunningTask:
        proc = self.procs.get(recorded.pid)
        return super().recorded(recorded) if proc is None else proc.handle


@st.composite
def jobs(draw: st.DrawFn) -> list[Job]:
    made = []
    for i in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["gang", "gang", "gang", "min-one", "single", "elastic"]))
        # A gang's group may opt its exits in to a gang restart, or its losses out.
        policies = st.sampled_from([{}, {FailureEvent.TASK_LOST: FailureAction.RESTART_TASK}]
                                   + ([{FailureEvent.TASK_FAILED: FailureAction.RESTART_GANG}]
                                      if kind == "gang" else []))
        groups = tuple(
            TaskGroup(f"g{g}", draw(st.integers(2 if g == 0 and kind == "elastic" else 1, 3)),
                      Resources.of(cpu=draw(st.sampled_from([500, 2_000])), memory=256,
                                   gpu=draw(st.integers(0, 1))),
                      command=("true",), task_retry_count=draw(st.integers(0, 2)),
                      policies=draw(policies))
            for g in range(draw(st.integers(1, 2))))
        elastic = None
        if kind == "elastic":
            top = groups[0].replicas
            elastic = Elasticity("g0", draw(st.integers(1, top - 1)), top)
        made.append(Job(f"j{i}", groups,
                        scheduler_name=SchedulerName.DEFAULT if kind == "single"
                        else SchedulerName.SHOAL,
                        min_available=1 if kind == "min-one" else None, elastic=elastic,
                        job_retry_count=draw(st.integers(0, 2)),
                        min_failed=draw(st.sampled_from([None, None, 2]))))
    return made


def _world(seed: int) -> Iterator[World[LossyExecutor]]:
    return worlds("shoal-gang-", lambda root, repository: LossyExecutor(
        root, repository, random.Random(seed)))


def _check_losses(plane: ControlPlane, executor: LossyExecutor, made: dict[str, Job]) -> None:
    """No member of a rigid gang is left running the attempt it ran when a peer was lost
    (or failed, where its group restarts the gang on exits), once a retry was spent."""
    for loss in executor.losses:
        submitted = made[loss.ref.job]
        if not restarts_whole(submitted) or submitted.group(loss.ref.group).action_on(
                loss.event) is not FailureAction.RESTART_GANG:
            continue
        job = plane.repository.get_job(loss.ref.job)
        assert job is not None
        task = next(t for t in job.tasks if t.ref == loss.ref)
        if task.retries == loss.task_retries and job.retries == loss.job_retries \
                and not job.state.terminal:
            continue  # no retry spent: the job goes on without it (`minFailed`)
        records = plane.repository.task_records([job.name])
        for peer, attempt in loss.peers.items():
            rec = records[peer]
            assert not (rec.state in PLACED and rec.attempts == attempt), \
                f"{peer} still runs attempt {attempt} after its peer {loss.ref} was lost " \
                f"and retried: {summary(plane, [job.name])}"
    executor.losses.clear()


def _check_ended(plane: ControlPlane, made: dict[str, Job]) -> None:
    """Every task of a rigid job that succeeded with the default rule ran to an end."""
    for name, submitted in made.items():
        job = plane.repository.get_job(name)
        assert job is not None and job.state.terminal, summary(plane, [name])
        if job.state.value != "Succeeded" or submitted.elastic is not None \
                or submitted.min_succeeded is not None:
            continue
        states = [t.state for t in job.tasks]
        assert len(states) == submitted.replicas
        failed = states.count(TaskState.FAILED)
        assert states.count(TaskState.SUCCEEDED) + failed == submitted.replicas, \
            summary(plane, [name])
        assert failed < job.failure_threshold


def _check_step(plane: ControlPlane, executor: LossyExecutor, made: dict[str, Job]) -> None:
    _check_losses(plane, executor, made)
    check_tracking(plane, executor, made)


@settings(max_examples=25, deadline=None)
@given(jobs(), st.integers(0, 2**32 - 1), st.integers(0, 30))
def test_a_lost_member_never_leaves_its_gang_running_alone(made: list[Job], seed: int,
                                                           restart_at: int) -> None:
    for world in _world(seed):
        plane, by_name = run_until_quiet(world, made, restart_at, MAX_STEPS, check_tracking,
                                         _check_step)
        _check_ended(plane, by_name)
