"""What an executor is told and what it tells back: a task's launch (`TaskLaunch`), the
handle of a launched attempt (`RunningTask`), how an attempt stands (`TaskStatus`), and the
environment every task gets (`task_env`). Value objects only: the local executor is one user
of them, and every later engine speaks the same ones."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from shoal.api.lifecycle import TaskState
from shoal.executors.cgroups import TaskLimits


class TaskPhase(StrEnum):
    RUNNING = "Running"
    EXITED = "Exited"
    """The command ended; `exit_code` or `signal` says how."""
    LOST = "Lost"
    """The process is gone and nothing recorded how it ended (the wrapper itself was killed
    while the control plane was down, or the machine rebooted)."""


@dataclass(frozen=True, slots=True)
class TaskStatus:
    phase: TaskPhase
    exit_code: int | None = None
    signal: int | None = None
    detail: str = ""
    reason: str = ""
    """Why it ended, when the kernel said: "OOMKilled" (`wrapper.OOM_KILLED`)."""
    ended_at: float | None = None
    """When the engine saw the attempt end (wall-clock epoch seconds, the engine's clock);
    None while it runs, or when nothing recorded it (a lost attempt). Usage accounting
    charges an attempt until then, not until the control plane's poll noticed the end,
    which may be much later after a restart."""

    @property
    def running(self) -> bool:
        return self.phase is TaskPhase.RUNNING

    def task_state(self) -> TaskState:
        """The lifecycle state this outcome maps to: exit 0 succeeds, anything else fails.
        (Whether a stopped task is CANCELLED or returns to PENDING is the control loop's call:
        it knows why it stopped it.)"""
        if self.phase is TaskPhase.RUNNING:
            return TaskState.RUNNING
        if self.phase is TaskPhase.EXITED and self.exit_code == 0:
            return TaskState.SUCCEEDED
        return TaskState.FAILED


RUNNING = TaskStatus(TaskPhase.RUNNING)


@dataclass(frozen=True, slots=True)
class TaskLaunch:
    """Everything needed to start one attempt of one task."""

    job: str
    group: str
    index: int
    world_size: int
    rank: int
    master_addr: str
    master_port: int
    gpus: tuple[int, ...]
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    working_dir: str | None = None
    attempt: int = 0
    """Which start of this task this is; a restarted task (after eviction) is a new attempt."""
    shoal_env: Mapping[str, str] = field(default_factory=dict)
    """More of Shoal's own variables (the API's address, the job's token, its virtual
    cluster: `shoal.control.job_scope`), which the job cannot override either."""
    user: str | None = None
    """The Shoal user whose job this is: who the task runs as (`Isolation`)."""
    limits: TaskLimits = field(default_factory=TaskLimits)
    """Its requests, which become its limits where the executor has cgroups."""
    node: str = ""
    """The node the scheduler bound it to: where the engine runs it, and nowhere else (the
    local executor's nodes are all this machine)."""


@dataclass(frozen=True, slots=True)
class RunningTask:
    """A handle on a launched attempt. `pid` is the wrapper's pid (= its process group);
    pid 0 means no process was ever started (the status file says why, or it is LOST)."""

    job: str
    group: str
    index: int
    attempt: int
    pid: int
    pid_start_time: float
    stdout_path: Path
    stderr_path: Path
    status_path: Path
    cgroups: tuple[Path, ...] = ()
    """The attempt's cgroups (none without `Isolation.cgroups`)."""

    @property
    def task_dir(self) -> Path:
        return self.status_path.parent


def check_spec(spec: TaskLaunch) -> None:
    """Raise ValueError when no engine could ever launch `spec`, whatever its node: no
    command, a NUL byte in it or in its working directory, an environment variable that
    cannot be set. Cheap and pure: the control loop checks a batch's specs with it before
    launching any, so that one such task fails its launch before its gang's peers start."""
    if not spec.command:
        raise ValueError(f"task {spec.job}/{spec.group}/{spec.index} has no command")
    if any("\0" in arg for arg in spec.command) or "\0" in (spec.working_dir or ""):
        raise ValueError("embedded null byte in the command or its working directory")
    for env in (spec.env, spec.shoal_env):
        for name, value in env.items():
            if not name or "=" in name or "\0" in name or "\0" in value:
                raise ValueError(f"illegal environment variable name or value: {name!r}")


def task_env(spec: TaskLaunch, base: Mapping[str, str]) -> dict[str, str]:
    """The environment of a task: base (the executor's own, for PATH and friends), then the
    job's env, then Shoal's variables, which the job cannot override. CUDA_VISIBLE_DEVICES is
    always set, to "" when no GPU was assigned, so a task never sees GPUs it was not given.

    RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are what `torch.distributed`'s default
    `env://` rendezvous reads. Each task is its own torchrun "node": it sees only its own GPUs,
    renumbered from cuda:0, so LOCAL_RANK is 0 and LOCAL_WORLD_SIZE 1 — code that calls
    `torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))` then picks its first own GPU."""
    env = dict(base)
    env.update(spec.env)
    env.update({
        "SHOAL_JOB": spec.job,
        "SHOAL_TASK_GROUP": spec.group,
        "SHOAL_TASK_INDEX": str(spec.index),
        "SHOAL_ATTEMPT": str(spec.attempt),
        "SHOAL_WORLD_SIZE": str(spec.world_size),
        "SHOAL_RANK": str(spec.rank),
        "RANK": str(spec.rank),
        "WORLD_SIZE": str(spec.world_size),
        "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": spec.master_addr,
        "MASTER_PORT": str(spec.master_port),
        "CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in spec.gpus),
    })
    env.update(spec.shoal_env)
    return env
