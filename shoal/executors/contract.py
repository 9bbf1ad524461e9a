"""The executor contract: what the control loop asks of an engine, and what it may rely on.

Shoal schedules; an engine carries out. The control loop (`shoal.control`) is typed against
`Executor` only: the local executor (`shoal.executors.local`, tasks as subprocesses of this
machine) is one engine, and a Ray engine, a Kubernetes binder or a Slurm launcher are others
that implement the same methods and pass the same shared test suite
(`tests/executors/test_executor_contract.py`, parametrised by engine). The vocabulary is
`shoal.executors.task` (`TaskLaunch`, `RunningTask`, `TaskStatus`) and the few value objects
here (`RecordedAttempt`, `LogChunk`, `NodeHealth`). The scheduling core never sees an engine.

Every engine guarantees:

**Placement is Shoal's.** `launch` runs the task on the node `TaskLaunch.node` names, with
exactly the GPU indices `TaskLaunch.gpus` (`CUDA_VISIBLE_DEVICES`, "" for none) and the
environment `task.task_env` builds. An engine never re-places, re-queues or delays what
Shoal bound: it reserves exactly what was bound (or nothing, and Shoal's accounting is the
only one), so a placed task never waits in the engine's own queue. If the named node cannot
run it, the attempt fails (a status) — it is never moved elsewhere.

**`launch` is idempotent per (task, attempt).** The first launch of an attempt claims it
durably before starting anything; any later launch of the same attempt — by this instance,
or by a new one after a crash between the store's bind and the launch — returns a handle on
that attempt and never starts a second process. An attempt claimed but never started (the
claimant died in between) may be started by a later launch, still at most once. A new
attempt number is a new start. A launch that can never work (no command, a name that cannot
be used) raises `ValueError` and claims nothing; one that fails to start (a missing working
directory, a refused user) returns a handle whose status is EXITED with code 127 and the
reason in `detail`. `RunningTask.pid` > 0 means a process was started: the control loop
records `pid` and `pid_start_time` in the store (an engine's own identity of the attempt
may be richer, but must be re-derivable from the record and the attempt's name).

**Batches.** `launch_many` and `poll_many` are `launch` and `poll` for many attempts at
once, with the same guarantees per attempt: an engine answers a batch in fewer round trips
(the local executor's launcher forks a whole batch from one request; a remote engine asks
each node once). `launch_many` returns one result per spec, in order, and a launch that
raised is its result (an exception), so one bad spec never stops the others. The control
loop calls `launch_many` from launch worker threads of its own, while its own thread goes
on polling, stopping and listing nodes (`shoal.control.inflight`): an engine's launches must
be safe beside those calls for other attempts. One batch at a time, unless the engine has
a `launch_lanes` attribute above 1: then up to that many batches at once, of disjoint
attempts, so its `launch_many` must also be safe beside itself.

**`poll` never blocks** (beyond a bounded, short check) and reports RUNNING until the
attempt's whole process tree is gone, then EXITED with the exit code or the signal (and
`reason` "OOMKilled" when the kernel said so), durably: polling again, or from a new
instance, gives the same outcome. LOST means the attempt's process is gone and nothing
recorded how it ended (its supervisor was killed too, its node died or was drained, its
engine-side handle vanished); the control loop then applies the task's retry policy. An
engine never reports LOST for a process that may still run.

**Stopping has a grace period.** `request_stop(task, grace)` sends SIGTERM to the attempt's
whole process group (and everything it started) and returns at once: False when it had
already ended. Polling after the grace period escalates to SIGKILL, so `request_stop` +
`poll` is the non-blocking stop; asking twice never extends the grace. `stop` is the
blocking form, bounded by grace + a short kill wait (still RUNNING only if a process cannot
be killed at all). A stopped task ends EXITED (by its code or the signal), never LOST.

**`adopt` after a restart** takes what the store recorded of a launched attempt
(`RecordedAttempt`) and returns a handle on it when its process still runs as that same
process (a pid reused by an unrelated process is never taken for it, and never signalled),
or when its outcome was recorded while the control plane was down; None when it is gone
with nothing recorded (the caller treats it as LOST). `recorded` builds a handle from the
record alone, without looking: it polls as the record's process stands (running, its
recorded outcome, or LOST).

**Logs** of a task (its stdout and stderr, all attempts appended) are read as bytes from an
offset, at most `limit` of them (`read_log`): an engine whose tasks run elsewhere fetches
them from wherever the task ran, and a read of a log that does not exist yet is empty.
Followers poll `read_log` with growing offsets, so a read must be cheap, and a byte's offset
never changes. An engine that lost some of a log's bytes (the Ray engine, a dead node's)
skips them: the chunk's `offset` is then where its bytes start, after the one asked, and a
reader goes on from its `next_offset`.

**Files.** `root` is a directory of the control plane's machine, private to the server
(0700), where the engine keeps what a restart needs and the control loop its own records
(`root/control`). A job file is a file every task of a job reads (its membership): no
other tenant's task can read it. `job_file` says where it is: one path, the same on every
node the job's tasks may run on, which tasks are given. `write_job_file` replaces its
content there on every such node (atomically: a reader sees the old or the new content,
never a part; a node that does not answer in bounded time is skipped and logged, and gets
the next write), and `remove_job_file` removes it everywhere. `forget_job` removes
everything the engine keeps of a deleted job (records, logs, working directories), so that
a job of the same name later starts from scratch. `rename_job` moves all that, of a job that
has ended, to another name (the job was kept in history under it): a new job of the old name
starts from scratch, and the old one's logs read under the new name.

**Nodes.** `nodes` lists the engine's nodes and their health (`NodeHealth`): the local
executor's are the nodes it was declared, all ready; an engine with a live inventory reports
each node's state as it is now, with what it offers (`NodeHealth.node`) and its address. It
is called often by the control loop (every few seconds), so it must be cheap and bounded.

**Tenants.** Every engine meets the isolation contract stated in
`shoal.executors.isolation` (tasks never run as the server's user, see nothing of the
control plane nor of another job, and get their requests as limits where possible).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from shoal.api.objects import Node
from shoal.executors.task import RunningTask, TaskLaunch, TaskStatus

LogStream = Literal["stdout", "stderr"]
#: The most one `read_log` returns, whatever it is asked.
MAX_LOG_READ = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RecordedAttempt:
    """What the store recorded of a launched attempt: enough to find it again."""

    job: str
    group: str
    index: int
    attempt: int
    pid: int
    """The process the launch reported (`RunningTask.pid`); 0 when none was recorded."""
    pid_start_time: float
    """When that process started, so that a reused pid is never taken for it."""


@dataclass(frozen=True, slots=True)
class LogChunk:
    """Bytes of a task's log from an offset, and where the next read starts."""

    data: bytes
    offset: int

    @property
    def next_offset(self) -> int:
        return self.offset + len(self.data)


@dataclass(frozen=True, slots=True)
class NodeHealth:
    """One node of an engine and whether it can run tasks now."""

    name: str
    ready: bool
    reason: str = ""
    """Why it is not ready (drained, dead, unreachable); empty when it is."""
    address: str = ""
    """Where other machines reach the node (its IP): rank 0's is a job's MASTER_ADDR.
    Empty: the control plane's own machine (the local executor's nodes)."""
    node: Node | None = None
    """What the engine says the node offers (capacity, labels) when its inventory is live;
    None when the nodes are declared to the control plane instead (a cluster file)."""


class Executor(Protocol):
    """An engine that carries out Shoal's decisions (the module docstring is the contract)."""

    @property
    def root(self) -> Path:
        """The control plane's private directory for this engine and the control loop."""
        ...

    def launch(self, spec: TaskLaunch) -> RunningTask:
        """Start `spec`'s attempt on its node with its GPUs, at most once per attempt."""
        ...

    def poll(self, task: RunningTask) -> TaskStatus:
        """Where the attempt stands, without blocking; escalates a stop past its grace."""
        ...

    def launch_many(self, specs: Sequence[TaskLaunch]) -> list[RunningTask | BaseException]:
        """Launch these attempts together; one result per spec, in order: its handle, or the
        exception its launch raised (the others still launch). Same idempotency per attempt
        as launch."""
        ...

    def poll_many(self, tasks: Sequence[RunningTask]) -> list[TaskStatus]:
        """Poll these tasks together; one status per task, in order."""
        ...

    def request_stop(self, task: RunningTask, grace_period: float | None = None) -> bool:
        """SIGTERM the attempt's process group now, SIGKILL once `grace_period` ran out
        (the engine's default when None); False when it had already ended."""
        ...

    def stop(self, task: RunningTask, grace_period: float | None = None) -> TaskStatus:
        """`request_stop`, then wait (bounded) for the final status."""
        ...

    def adopt(self, recorded: RecordedAttempt) -> RunningTask | None:
        """A handle on a recorded attempt that still runs or whose outcome was recorded;
        None when it is gone with nothing recorded."""
        ...

    def recorded(self, recorded: RecordedAttempt) -> RunningTask:
        """A handle from the record alone, without looking (polls LOST once gone)."""
        ...

    def read_log(self, job: str, group: str, index: int, stream: LogStream, offset: int,
                 limit: int) -> LogChunk:
        """At most `limit` bytes (and `MAX_LOG_READ`) of a task's log from `offset`."""
        ...

    def job_file(self, kind: str, job: str, user: str | None) -> Path:
        """Where a file that every task of `job` reads, and no other tenant's, lives (the
        same path on every node)."""
        ...

    def write_job_file(self, kind: str, job: str, user: str | None, data: bytes) -> Path:
        """Replace the job file's content with `data` on every node that may run the job's
        tasks, atomically; returns `job_file`'s path."""
        ...

    def remove_job_file(self, kind: str, job: str) -> None:
        """Remove the job file wherever it was written (the job ended)."""
        ...

    def forget_job(self, job: str) -> None:
        """Remove everything kept of a deleted job (it runs nothing any more)."""
        ...

    def rename_job(self, job: str, new: str) -> None:
        """Keep everything kept of ended job `job` (records, logs) under `new` instead."""
        ...

    def nodes(self) -> tuple[NodeHealth, ...]:
        """The engine's nodes and their health, now."""
        ...
