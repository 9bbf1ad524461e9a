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

import atexit
import random
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import (
    Job,
    Node,
    Resources,
    SchedulerName,
    TaskGroup,
    TaskRef,
    TaskState,
)
from shoal.control import ControlPlane
from shoal.executors.contract import RecordedAttempt
from shoal.executors.local import LocalExecutor
from shoal.executors.task import RUNNING, RunningTask, TaskLaunch, TaskPhase, TaskStatus
from shoal.scheduler.profile import Profile
from shoal.store import Repository, open_store

NODES = (Node("n0", Resources.of(cpu=8_000, memory=16_384, gpu=4)),
         Node("n1", Resources.of(cpu=8_000, memory=16_384, gpu=2)))
HOLDING = (TaskState.BOUND, TaskState.RUNNING, TaskState.RELEASING)
MAX_STEPS = 150
FAULTS = ("none", "none", "none", "value", "os", "runtime", "no-process", "exits-1")


@cache
def _template() -> Path:
    """A migrated store, made once: each example copies it (migrating costs more than a
    whole example)."""
    directory = tempfile.mkdtemp(prefix="shoal-chaos-")
    atexit.register(shutil.rmtree, directory, True)
    path = Path(directory) / "template.db"
    store = open_store(f"sqlite:///{path}")
    store.migrate()
    store.close()
    return path


@dataclass
class Proc:
    """A fake process: it runs for `polls` more polls, then exits with `code`."""

    handle: RunningTask
    ref: TaskRef
    polls: int
    code: int
    ended: TaskStatus | None = None


class ChaosExecutor(LocalExecutor):
    """Launches fake processes, failing at random; checks every launch against the store."""

    def __init__(self, root: Path, repository: Repository, rng: random.Random) -> None:
        super().__init__(root)
        self.repository = repository
        self.rng = rng
        self.procs: dict[int, Proc] = {}
        self.claims: dict[tuple[TaskRef, int], RunningTask] = {}
        self.violations: list[str] = []
        self.next_pid = 1000

    def launch(self, spec: TaskLaunch) -> RunningTask:
        ref = TaskRef(spec.job, spec.group, spec.index)
        rec = self.repository.task_records([spec.job]).get(ref)
        if rec is None or rec.state is not TaskState.BOUND or rec.attempts != spec.attempt \
                or rec.pid:
            self.violations.append(f"launch of {ref} attempt {spec.attempt} while the store "
                                   f"holds {rec}")
        claimed = self.claims.get((ref, spec.attempt))
        if claimed is not None:  # idempotent per attempt, as the local executor is
            return claimed
        fault = self.rng.choice(FAULTS)
        if fault == "value":
            raise ValueError("embedded null byte")
        if fault == "os":
            raise OSError("no such file or directory")
        if fault == "runtime":
            raise RuntimeError("something nobody planned for")
        pid = 0
        if fault != "no-process":
            self.next_pid += 1
            pid = self.next_pid
        out, err = self.log_paths(spec.job, spec.group, spec.index)
        status = self.task_dir(spec.job, spec.group, spec.index, spec.attempt) / "status"
        handle = RunningTask(spec.job, spec.group, spec.index, spec.attempt, pid,
                             float(pid), out, err, status)
        self.claims[(ref, spec.attempt)] = handle
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

    def adopt(self, recorded: RecordedAttempt) -> RunningTask | None:
        proc = self.procs.get(recorded.pid)
        return None if proc is None else proc.handle

    def live(self) -> dict[int, Proc]:
        return {pid: p for pid, p in self.procs.items() if p.ended is None}


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


@dataclass
class World:
    directory: Path
    repository: Repository
    executor: ChaosExecutor

    def plane(self) -> ControlPlane:
        plane = ControlPlane(self.repository, self.executor, NODES, Profile.default(),
                             interval=0.0, grace_period=0.0)
        plane.start()
        return plane


def _world(seed: int) -> Iterator[World]:
    directory = Path(tempfile.mkdtemp(prefix="shoal-chaos-"))
    shutil.copy(_template(), directory / "shoal.db")
    store = open_store(f"sqlite:///{directory / 'shoal.db'}")
    try:
        repository = Repository(store)
        rng = random.Random(seed)
        executor = ChaosExecutor(directory / "root", repository, rng)
        transition = repository.transition_task

        def flaky(ref: TaskRef, target: TaskState, cause: str, **kw: Any) -> Any:
            # Now and then the store cannot record a start: the process must not outlive it.
            if target is TaskState.RUNNING and rng.random() < 0.1:
                raise RuntimeError("the store cannot record this start")
            return transition(ref, target, cause, **kw)

        repository.transition_task = flaky  # type: ignore[method-assign]
        yield World(directory, repository, executor)
    finally:
        store.close()
        shutil.rmtree(directory, ignore_errors=True)


def _check(plane: ControlPlane, executor: ChaosExecutor, made: dict[str, Job]) -> None:
    records = plane.repository.task_records(made)
    waiting = plane._handover.waiting()
    for ref, rec in records.items():
        if rec.state in HOLDING:
            assert ref in plane._tasks or (rec.state is TaskState.BOUND and ref in waiting), \
                f"{ref} is {rec.state} in the store but not tracked"
        if rec.state is TaskState.PENDING:
            assert (rec.node, rec.gpus, rec.pid) == (None, (), None), rec
    for info in plane.model.jobs.values():
        for task in info.running:
            assert records[task.ref].state in HOLDING, \
                f"the model places {task.ref}, which the store holds as " \
                f"{records[task.ref].state}"
    tracked = {t.handle.pid: ref for ref, t in plane._tasks.items()}
    for pid, proc in executor.live().items():
        assert tracked.get(pid) == proc.ref, f"process {pid} of {proc.ref} runs untracked"
        assert records[proc.ref].pid == pid, f"process {pid} of {proc.ref} is not recorded"
    assert executor.violations == []
    for node in NODES:
        held = [rec for rec in records.values()
                if rec.node == node.name and rec.state in (TaskState.BOUND, TaskState.RUNNING)]
        used = Resources.of()
        for rec in held:
            used = used + made[rec.ref.job].group(rec.ref.group).resources
        gpus = [g for rec in held for g in rec.gpus]
        assert len(gpus) == len(set(gpus)), (node.name, held)
        assert used.fits(node.capacity), (node.name, used, held)


def _summary(plane: ControlPlane, names: list[str]) -> list[str]:
    out = []
    for name in names:
        job = plane.repository.get_job(name)
        assert job is not None
        out.append(f"{name} {job.state} gang={job.gang} retries={job.retries}/"
                   f"{job.job_retry_count} tasks=" + ", ".join(
                       f"{t.group}/{t.index}:{t.state}:{t.retries}" for t in job.tasks)
                   + f" waiting={plane.pending_reason(name)}")
    return out


@settings(max_examples=40, deadline=None)
@given(jobs(), st.integers(0, 2**32 - 1), st.integers(0, 12))
def test_launch_failures_never_leave_a_task_untracked(made: list[Job], seed: int,
                                                      restart_at: int) -> None:
    for world in _world(seed):
        plane = world.plane()
        # As the API does: a job that could never fit is refused, and never submitted.
        made = [j for j in made if plane.feasibility(j) is None]
        by_name = {j.name: j for j in made}
        names = list(by_name)
        for job in made:
            plane.submit(job)
        for step in range(MAX_STEPS):
            if step == restart_at:  # a crash: a new control plane over the same state
                plane = world.plane()
                _check(plane, world.executor, by_name)
            plane.step()
            _check(plane, world.executor, by_name)
            stored = [plane.repository.get_job(n) for n in names]
            if all(j is not None and j.state.terminal for j in stored) and not plane._tasks:
                break
        else:
            raise AssertionError(f"not quiet after {MAX_STEPS} steps: {_summary(plane, names)}")
        assert world.executor.live() == {}
