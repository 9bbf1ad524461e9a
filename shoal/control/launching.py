"""How a bound task becomes an executor launch, and how an ended one is described.

Pure functions (and `NodeAddresses`, a cache of the executor's answer): the task's rank is
its index over the job's groups in order, world size is the job's replica count, and the
port is the job's one MASTER_PORT (see `records.MasterPorts`).

MASTER_ADDR is the address of the node rank 0 is placed on (`rank_zero_node`): what the
executor's `nodes()` says of it (`NodeHealth.address`), kept by `NodeAddresses`; a node
without one is the control plane's machine, 127.0.0.1 (the local executor's nodes). Rank 0
is placed whenever its peers launch: a gang's tasks are bound together in one cycle, and an
elastic job's task 0 runs for as long as the job does (its shrinks stop the highest indices).
Should it not be placed (a job whose gang minimum is below its size), a task is told its own
node's address. MASTER_PORT is a port that was free on the control plane's machine when the
job's first task launched: on many machines it is probably free on rank 0's node too, and a
clash fails the attempt, which is retried under the task's policy.

An elastic job's (seed 001) elastic group counts the tasks it has placed when the task is
launched: a task started as the job grows to four learns WORLD_SIZE 4. The job's shrinks
stop its highest-indexed tasks and its growth starts the lowest-indexed ones left, so the
placed tasks are always indices 0..n-1 and ranks stay dense. Later changes reach running
tasks through the membership file (`shoal.control.membership`) or the framework's own
rendezvous.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from shoal.api import Job
from shoal.executors.cgroups import TaskLimits
from shoal.executors.contract import NodeHealth
from shoal.executors.task import TaskLaunch, TaskPhase, TaskStatus
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.model import SchedulerModel
from shoal.store.repository import TaskRecord

#: MASTER_ADDR of a job whose rank 0 runs on the control plane's machine.
MASTER_ADDR = "127.0.0.1"


class NodeAddresses:
    """Where each node is reached, as the executor's `nodes()` last said (for MASTER_ADDR).
    Whoever lists the executor's nodes passes the list to `update` (the control loop's node
    watch does, every few seconds); a node not known yet (it joined since) makes one more
    listing through `refresh`."""

    def __init__(self, refresh: Callable[[], Iterable[NodeHealth]] | None = None) -> None:
        self._refresh = refresh
        self._addresses: dict[str, str] = {}

    def update(self, nodes: Iterable[NodeHealth]) -> None:
        """Replace what is known by this listing of the executor's nodes."""
        self._addresses = {n.name: n.address for n in nodes}

    def address(self, node: str) -> str:
        """The node's address; MASTER_ADDR (this machine) when it has none."""
        if node not in self._addresses and self._refresh is not None:
            self.update(self._refresh())
        return self._addresses.get(node) or MASTER_ADDR


def rank_zero(job: Job, elastic_size: int | None = None) -> tuple[str, int]:
    """The group and index of the job's rank 0: index 0 of its first group that has tasks."""
    for g in job.groups:
        if _size(job, g.name, g.replicas, elastic_size) > 0:
            return g.name, 0
    raise KeyError(f"job {job.name} has no task")


def rank_zero_node(model: SchedulerModel, info: JobInfo, rec: TaskRecord) -> str:
    """The physical node of the job's rank 0 as the model places it, for the launch of
    `rec`; `rec`'s own node when rank 0 is not placed (or is `rec`)."""
    size = info.elastic_size() if info.job.elastic is not None else None
    group, index = rank_zero(info.job, size)
    own = rec.node or ""
    if (rec.ref.group, rec.ref.index) == (group, index):
        return own
    for task in info.running:
        if (task.ref.group, task.ref.index) == (group, index):
            return model.node(task.node).physical.name
    return own


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
                elastic_size: int | None = None, master_addr: str = MASTER_ADDR
                ) -> TaskLaunch:
    """The launch of `rec`'s current attempt (its bind count in the store); `shoal_env`:
    Shoal's variables beyond the launch's own (`job_scope.TaskCredentials`, the membership
    file); `elastic_size`: how many tasks of an elastic job's elastic group are placed now
    (None: its minimum); `master_addr`: rank 0's node's address."""
    ref = rec.ref
    group = job.group(ref.group)
    return TaskLaunch(
        job=ref.job, group=ref.group, index=ref.index,
        world_size=world_size(job, elastic_size),
        rank=rank_of(job, ref.group, ref.index, elastic_size), master_addr=master_addr,
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
