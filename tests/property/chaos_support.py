"""What the chaos tests of the control plane share (`test_launch_chaos.py`,
`test_gang_restart_chaos.py`): a real `ControlPlane` over a real SQLite store copied from a
migrated template, an executor of fake processes that checks every launch against the store,
the tracking check, and the run of a drawn set of jobs until the plane is quiet, with a crash
(a new control plane over the same store and processes) at a drawn step."""

from __future__ import annotations

import atexit
import random
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Generic, TypeVar

from shoal.api import Job, Node, Resources, TaskRef, TaskState
from shoal.control import ControlPlane
from shoal.executors.contract import RecordedAttempt
from shoal.executors.local import LocalExecutor
from shoal.executors.task import RunningTask, TaskLaunch, TaskStatus
from shoal.scheduler.profile import Profile
from shoal.store import Repository, open_store
from shoal.store.repository import TaskRecord

NODES = (Node("n0", Resources.of(cpu=8_000, memory=16_384, gpu=4)),
         Node("n1", Resources.of(cpu=8_000, memory=16_384, gpu=2)))
HOLDING = (TaskState.BOUND, TaskState.RUNNING, TaskState.RELEASING)

#: The default profile without gpu-discipline's CPU reserve for idle GPUs. These tests run
#: every job to its end on an otherwise idle cluster; under the reserve a CPU-only gang that
#: needs the CPU its nodes keep for their idle GPUs rightly waits until GPU work takes them
#: (tests/scenario/cases/gpucpu-*), which on this cluster never comes.
PROFILE = Profile.from_yaml("""
name: default-without-cpu-reserve
actions: "services, enqueue, allocate, backfill, elastic"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: placement},
              {name: gpu-discipline, arguments: {cpuReservedPerIdleGpu: 0}}]
""", "chaos_support")


@cache
def _template(prefix: str) -> Path:
    """A migrated store, made once: each example copies it (migrating costs more than a
    whole example)."""
    directory = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, directory, True)
    path = Path(directory) / "template.db"
    store = open_store(f"sqlite:///{path}")
    store.migrate()
    store.close()
    return path


@dataclass
class Proc:
    """A fake process: it runs for `polls` more polls, then exits with `code`; once asked
    to stop, it may take `stopping` more polls."""

    handle: RunningTask
    ref: TaskRef
    polls: int
    code: int
    stopping: int | None = None
    ended: TaskStatus | None = None


class FakeExecutor(LocalExecutor):
    """Launches fake processes (`start`, in a subclass), at most one per attempt; records a
    violation for every launch of an attempt the store does not hold as BOUND for it."""

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
        return self.start(spec, ref)

    def launch_many(self, specs: Sequence[TaskLaunch]) -> list[RunningTask | BaseException]:
        results: list[RunningTask | BaseException] = []
        for spec in specs:
            try:
                results.append(self.launch(spec))
            except Exception as exc:  # as the contract says: the others still launch
                results.append(exc)
        return results

    def start(self, spec: TaskLaunch, ref: TaskRef) -> RunningTask:
        """Launch a new attempt: raise, or `claim` a handle (and add its `Proc`)."""
        raise NotImplementedError

    def new_pid(self) -> int:
        self.next_pid += 1
        return self.next_pid

    def claim(self, spec: TaskLaunch, ref: TaskRef, pid: int) -> RunningTask:
        """The handle of the attempt, under `pid` (0: no process)."""
        out, err = self.log_paths(spec.job, spec.group, spec.index)
        status = self.task_dir(spec.job, spec.group, spec.index, spec.attempt) / "status"
        handle = RunningTask(spec.job, spec.group, spec.index, spec.attempt, pid,
                             float(pid), out, err, status)
        self.claims[(ref, spec.attempt)] = handle
        return handle

    def adopt(self, recorded: RecordedAttempt) -> RunningTask | None:
        proc = self.procs.get(recorded.pid)
        return None if proc is None else proc.handle

    def live(self) -> dict[int, Proc]:
        return {pid: p for pid, p in self.procs.items() if p.ended is None}


E = TypeVar("E", bound=FakeExecutor)


@dataclass
class World(Generic[E]):
    repository: Repository
    executor: E

    def plane(self) -> ControlPlane:
        plane = ControlPlane(self.repository, self.executor, NODES, PROFILE,
                             interval=0.0, grace_period=0.0)
        plane.start()
        return plane


def worlds(prefix: str, executor: Callable[[Path, Repository], E]) -> Iterator[World[E]]:
    """One world over a fresh copy of the template store, removed after: `executor` makes
    its executor (over a root, and the repository)."""
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    shutil.copy(_template(prefix), directory / "shoal.db")
    store = open_store(f"sqlite:///{directory / 'shoal.db'}")
    try:
        repository = Repository(store)
        yield World(repository, executor(directory / "root", repository))
    finally:
        store.close()
        shutil.rmtree(directory, ignore_errors=True)


def check_tracking(plane: ControlPlane, executor: FakeExecutor, made: dict[str, Job]
                   ) -> dict[TaskRef, TaskRecord]:
    """Every task the store holds as BOUND, RUNNING or RELEASING is tracked by the plane, or
    BOUND and waiting for an eviction's handover; every live process is tracked under the pid
    the store records; the executor only launched attempts the store held as BOUND. The task
    records it checked."""
    records = plane.repository.task_records(made)
    waiting = plane._handover.waiting()
    for ref, rec in records.items():
        if rec.state in HOLDING:
            assert ref in plane._tasks or (rec.state is TaskState.BOUND and ref in waiting), \
                f"{ref} is {rec.state} in the store but not tracked"
    tracked = {t.handle.pid: ref for ref, t in plane._tasks.items()}
    for pid, proc in executor.live().items():
        assert tracked.get(pid) == proc.ref, f"process {pid} of {proc.ref} runs untracked"
        assert records[proc.ref].pid == pid, f"process {pid} of {proc.ref} is not recorded"
    assert executor.violations == []
    return records


def summary(plane: ControlPlane, names: list[str]) -> list[str]:
    out = []
    for name in names:
        job = plane.repository.get_job(name)
        assert job is not None
        out.append(f"{name} {job.state} gang={job.gang_minimum} retries={job.retries}/"
                   f"{job.job_retry_count} tasks=" + ", ".join(
                       f"{t.group}/{t.index}:{t.state}:{t.retries}" for t in job.tasks)
                   + f" waiting={plane.pending_reason(name)}")
    return out


#: A check after a step or a restart: the plane, its executor, the jobs submitted by name.
Check = Callable[[ControlPlane, E, dict[str, Job]], object]


def run_until_quiet(world: World[E], made: list[Job], restart_at: int, max_steps: int,
                    after_restart: Check[E], after_step: Check[E]
                    ) -> tuple[ControlPlane, dict[str, Job]]:
    """Submit the jobs that could ever fit (as the API does: a job that could never fit is
    refused, and never submitted) and step until every job ended and no task is tracked,
    with a crash — a new control plane over the same state — at step `restart_at`; then no
    process is left. The plane at the end, and the jobs submitted by name."""
    plane = world.plane()
    made = [j for j in made if plane.feasibility(j) is None]
    by_name = {j.name: j for j in made}
    names = list(by_name)
    for job in made:
        plane.submit(job)
    for step in range(max_steps):
        if step == restart_at:
            plane = world.plane()
            after_restart(plane, world.executor, by_name)
        plane.step()
        after_step(plane, world.executor, by_name)
        stored = [plane.repository.get_job(n) for n in names]
        if all(j is not None and j.state.terminal for j in stored) and not plane._tasks:
            break
    else:
        raise AssertionError(f"not quiet after {max_steps} steps: {summary(plane, names)}")
    assert world.executor.live() == {}
    return plane, by_name
