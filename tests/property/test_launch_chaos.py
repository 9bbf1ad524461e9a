"""Chaos in the launch path (issue 14, item 4): random jobs — gangs and not, some with
`taskRetryCount` or `jobRetryCount` — through a real `ControlPlane` over a real SQLite store,
with an executor that fails launches at random: it raises (ValueError, OSError,
RuntimeError) or returns a handle that polls as failed (no process, or one that exits 1 at
once); and now and then the store cannot record a start. Processes are fakes that end
after a drawn number of polls, so that hundreds of cycles cost well under a minute;
`tests/control/test_control_launch_failures.py` runs the same bugs with real processes.

After every step (commands, poll, cycle) and after a restart (a new control plane over the
same store and processes, at a random step), the whole system is checked:

- every task the store holds as BOUND, RUNNING or RELEASING is tracked by the control plane
  (a live handle), or BOUND and waiting for an eviction's handover;
- every PENDING task holds nothing, in the store or in the model, and every task the model
  places is held in the store;
- every live process is tracked, under the pid the store records for its task;
- the executor was only ever asked to launch an attempt the store held as BOUND for it;
- no node holds more than it has, and no GPU is given twice.

And every job ends: the plane goes quiet with no process left.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Job, Resources, SchedulerName, TaskGroup, TaskRef, TaskState
from shoal.control import ControlPlane
from shoal.executors.task import RUNNING, RunningTask, TaskLaunch, TaskPhase, TaskStatus
from shoal.store import Repository

from .chaos_support import (
    HOLDING,
    NODES,
    FakeExecutor,
    Proc,
    World,
    check_tracking,
    run_until_quiet,
    worlds,
)

MAX_STEPS = 150
FAULTS = ("none", "none", "none", "value", "os", "runtime", "no-process", "exits-1")


class ChaosExecutor(FakeExecutor):
    """Launches fake processes, failing at random; checks every launch against the store."""

    def start(self, spec: TaskLaunch, ref: TaskRef) -> RunningTask:
        fault = self.rng.choice(FAULTS)
        if fault == "value":
            raise ValueError("embedded null byte")
        if fault == "os":
            raise OSError("no such file or directory")
        if fault == "runtime":
            raise RuntimeError("something nobody planned for")
        pid = 0 if fault == "no-process" else self.new_pid()
        handle = self.claim(spec, ref, pid)
        if pid:
            polls = 0 if fault == "exits-1" else self.rng.randint(0, 3)
            code = 1 if fault == "exits-1" or self.rng.random() < 0.15 else 0
            self.procs[pid] = Proc(handle, ref, polls, code)
        return handle

    def poll(self, task: RunningTask) -> TaskStatus:
        proc = self.procs.get(task.pid)
        if proc is None:
            return TaskStatus(TaskPhase.EXITED, exit_code=127, detail="cannot start")
        if proc.ended is None:
            if proc.polls > 0:
                proc.polls -= 1
                return RUNNING
            proc.ended = TaskStatus(TaskPhase.EXITED, exit_code=proc.code)
        return proc.ended

    def request_stop(self, task: RunningTask, grace_period: float | None = None) -> bool:
        proc = self.procs.get(task.pid)
        if proc is None or proc.ended is not None:
            return False
        proc.ended = TaskStatus(TaskPhase.EXITED, signal=15)
        return True

    def stop(self, task: RunningTask, grace_period: float | None = None) -> TaskStatus:
        self.request_stop(task, grace_period)
        return self.poll(task)


@st.composite
def jobs(draw: st.DrawFn) -> list[Job]:
    made = []
    for i in range(draw(st.integers(1, 6))):
        gang = draw(st.booleans())
        # Gangs retry tasks too: a task retried after a peer succeeded must be placed again
        # (succeeded tasks count toward the gang minimum), or the job never ends.
        retries = st.integers(0, 2)
        groups = tuple(
            TaskGroup(f"g{g}", draw(st.integers(1, 3)),
                      Resources.of(cpu=draw(st.sampled_from([500, 2_000])), memory=256,
                                   gpu=draw(st.integers(0, 2))),
                      command=("true",), task_retry_count=draw(retries))
            for g in range(draw(st.integers(1, 2))))
        made.append(Job(f"j{i}", groups,
                        scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT,
                        job_retry_count=draw(st.integers(0, 2)),
                        min_failed=draw(st.sampled_from([None, 2]))))
    return made


def _world(seed: int) -> Iterator[World[ChaosExecutor]]:
    def executor(root: Path, repository: Repository) -> ChaosExecutor:
        rng = random.Random(seed)
        made = ChaosExecutor(root, repository, rng)
        transition = repository.transition_task

        def flaky(ref: TaskRef, target: TaskState, cause: str, **kw: Any) -> Any:
            # Now and then the store cannot record a start: the process must not outlive it.
            if target is TaskState.RUNNING and rng.random() < 0.1:
                raise RuntimeError("the store cannot record this start")
            return transition(ref, target, cause, **kw)

        repository.transition_task = flaky  # type: ignore[method-assign]
        return made

    return worlds("shoal-chaos-", executor)


def _check(plane: ControlPlane, executor: ChaosExecutor, made: dict[str, Job]) -> None:
    """`check_tracking`; and every PENDING task holds nothing, in the store or in the model;
    and no node holds more than it has, nor gives a GPU twice."""
    records = check_tracking(plane, executor, made)
    for rec in records.values():
        if rec.state is TaskState.PENDING:
            assert (rec.node, rec.gpus, rec.pid) == (None, (), None), rec
    for info in plane.model.jobs.values():
        for task in info.running:
            assert records[task.ref].state in HOLDING, \
                f"the model places {task.ref}, which the store holds as " \
                f"{records[task.ref].state}"
    for node in NODES:
        held = [rec for rec in records.values()
                if rec.node == node.name and rec.state in (TaskState.BOUND, TaskState.RUNNING)]
        used = Resources.of()
        for rec in held:
            used = used + made[rec.ref.job].group(rec.ref.group).resources
        gpus = [g for rec in held for g in rec.gpus]
        assert len(gpus) == len(set(gpus)), (node.name, held)
        assert used.fits(node.capacity), (node.name, used, held)


@settings(max_examples=40, deadline=None)
@given(jobs(), st.integers(0, 2**32 - 1), st.integers(0, 12))
def test_launch_failures_never_leave_a_task_untracked(made: list[Job], seed: int,
                                                      restart_at: int) -> None:
    for world in _world(seed):
        run_until_quiet(world, made, restart_at, MAX_STEPS, _check, _check)
