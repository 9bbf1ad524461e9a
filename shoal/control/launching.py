"""How a bound task becomes an executor launch, and how an ended one is described.

Pure functions: the task's rank is its index over the job's groups in order, world size is
the job's replica count, MASTER_ADDR is this machine (the local executor runs every task
here), and the port is the job's one MASTER_PORT (see `records.MasterPorts`).

An elastic job's (seed 001) elastic group counts the tasks it has placed when the task is
launched: a task started as the job grows to four learns WORLD_SIZE 4. The job's shrinks
stop its highest-indexed tasks and its growth starts the lowest-indexed ones left, so the
placed tasks are always indices 0..n-1 and ranks stay dense. Later changes reach running
tasks through the membership file (`shoal.control.membership`) or the framework's own
rendezvous.
"""

from __future__ import annotations

from collections.abc import Mapping

from shoal.api import Job
from shoal.executors.cgroups import TaskLimits
from shoal.executors.task import TaskLaunch, TaskPhase, TaskStatus
from shoal.store.repository import TaskRecord

MASTER_ADDR = "127.0.0.1"


def rank_of(job: Job, group: str, index: int, elastic_size: int | None = None) -> int:
    offset = 0
    for g in job.groups:
        if g.name == group:
            return offset + index
        offset += _size(job, g.name, g.replicas, elastic_size)
    raise KeyError(f"job {job.name} has no task group {group!r}")


def world_size(job: Job, elastic_size: int | None = None) -> int:
    return sum(_size(job, g.name, g.replicas, elastic_size) for g in job.groups)


def _size(job: Job, group: str, replicas: int, elastic_size: int | None) -> int:
    elastic = job.elastic
    if elastic is None or elastic.group != group:
        return replicas
    return elastic.min_replicas if elastic_size is None else elastic_size


def launch_spec(job: Job, rec: TaskRecord, master_port: int,
                shoal_env: Mapping[str, str] | None = None,
                elastic_size: int | None = None) -> TaskLaunch:
    """The launch of `rec`'s current attempt (its bind count in the store); `shoal_env`:
    Shoal's variables beyond the launch's own (`job_scope.TaskCredentials`, the membership
    file); `elastic_size`: how many tasks of an elastic job's elastic group are placed now
    (None: its minimum)."""
    ref = rec.ref
    group = job.group(ref.group)
    return TaskLaunch(
        job=ref.job, group=ref.group, index=ref.index,
        world_size=world_size(job, elastic_size),
        rank=rank_of(job, ref.group, ref.index, elastic_size), master_addr=MASTER_ADDR,
        master_port=master_port, gpus=rec.gpus, command=group.command, env=group.env,
        working_dir=group.working_dir, attempt=rec.attempts, shoal_env=shoal_env or {},
        user=job.user, limits=TaskLimits(cpu_millis=group.resources.cpu,
                                          memory_mib=group.resources.memory),
        node=rec.node or "")


def describe(status: TaskStatus) -> str:
    """How a process ended, for event causes."""
    if status.phase is TaskPhase.LOST:
        return f"was lost ({status.detail})" if status.detail else "was lost"
    if status.reason:  # the kernel's word for it comes first: "OOMKilled"
        return f"ended {status.reason} ({status.detail})" if status.detail \
            else f"ended {status.reason}"
    if status.signal:
        return f"was killed by signal {status.signal}"
    detail = f" ({status.detail})" if status.detail else ""
    return f"exited with code {status.exit_code}{detail}"


def retry_reason(status: TaskStatus) -> str:
    """How a process ended, short, for retry causes: "exit code 2", "signal 9", "a lost
    process"."""
    if status.phase is TaskPhase.LOST:
        return "a lost process"
    if status.reason:
        return status.reason
    if status.signal:
        return f"signal {status.signal}"
    return f"exit code {status.exit_code}"


def exit_code_of(status: TaskStatus) -> int | None:
    """The exit code to record: the code, or minus the signal (Popen's convention)."""
    if status.exit_code is not None:
        return status.exit_code
    return -status.signal if status.signal else None
