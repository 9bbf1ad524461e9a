"""What the Ray engine runs on a Ray node: an attempt's actor, and short pinned tasks.

The control plane's side is `shoal.executors.ray_engine` (its docstring tells the design);
this module is what Ray workers import and run on the node Shoal chose. Both are the node's
`LocalExecutor` over the node's directory `<root>/nodes/<node>` and the engine's isolation,
so claims, records, process groups, cgroups and task users are the local executor's code on
every node. Neither reserves anything in Ray's accounting (`num_cpus=0`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

# As `ray_engine` does, before Ray is imported: no `uv run` hook for Ray's workers.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")

import ray

from shoal.executors import cgroups, ray_logs
from shoal.executors.contract import RecordedAttempt
from shoal.executors.local import DEFAULT_GRACE_PERIOD, Isolation, LocalExecutor
from shoal.executors.processes import replace_file
from shoal.executors.task import RunningTask, TaskLaunch, TaskPhase, TaskStatus

log = logging.getLogger(__name__)

#: Variables of the Ray worker's own environment that a task must not inherit.
_WORKER_ONLY = ("RAY_", "PYTHONBREAKPOINT")


def _node_cgroups(isolation: Isolation | None) -> Isolation | None:
    """The engine's isolation with cgroup parents that exist on this node. `shoal up` made
    (and named by its tag) the parents on the control plane's machine; on another machine
    they are missing, so the node makes its own under the same tag (`cgroups.detect`), or,
    with no writable hierarchy, runs its tasks without limits (logged)."""
    found = None if isolation is None else isolation.cgroups
    if isolation is None or found is None:
        return isolation
    parents = [p for p in (found.memory_parent, found.cpu_parent) if p is not None]
    if all(parent.is_dir() for parent in parents):
        return isolation
    mine = cgroups.detect(parents[0].name.removeprefix("shoal-"))
    if isinstance(mine, cgroups.Unavailable):
        log.warning("no cgroup limits for tasks on this node: %s", mine.reason)
        return replace(isolation, cgroups=None)
    return replace(isolation, cgroups=mine)


def node_executor(node_root: str, isolation: Isolation | None,
                  grace_period: float = DEFAULT_GRACE_PERIOD) -> LocalExecutor:
    """The node's `LocalExecutor` over `node_root` (`<root>/nodes/<node>`). The engine's
    root and its `nodes` directory are made private on this node too (0700, as on the
    control plane's machine): the local executor keeps its own root private, not the
    directories above it, and a node's records and logs are the server's only. Its task
    cgroups are made under parents of this node's (`_node_cgroups`)."""
    below = Path(node_root).parent
    for directory in (below.parent, below):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if directory.stat().st_mode & 0o077:
            directory.chmod(0o700)
    base = {k: v for k, v in os.environ.items() if not k.startswith(_WORKER_ONLY)}
    # One launch per actor: a launcher process would not pay for itself.
    return LocalExecutor(Path(node_root), grace_period=grace_period, base_env=base,
                         isolation=_node_cgroups(isolation), launcher=False)


class TaskActor:
    """The actor of one (task, attempt), on the node Shoal chose: a `LocalExecutor` over the
    node's directory, which does the work."""

    def __init__(self, node_root: str, grace_period: float,
                 isolation: Isolation | None) -> None:
        self._local = node_executor(node_root, isolation, grace_period)
        self._handles: dict[tuple[str, str, int, int], RunningTask] = {}

    def _handle(self, task: RunningTask) -> RunningTask:
        key = (task.job, task.group, task.index, task.attempt)
        known = self._handles.get(key)
        if known is not None:
            return known
        record = RecordedAttempt(task.job, task.group, task.index, task.attempt, task.pid,
                                 task.pid_start_time)
        adopted = self._local.adopt(record)
        if adopted is None:
            return self._local.recorded(record)
        self._handles[key] = adopted
        return adopted

    def launch(self, spec: TaskLaunch) -> RunningTask:
        handle = self._local.launch(spec)
        self._handles[(spec.job, spec.group, spec.index, spec.attempt)] = handle
        return handle

    def adopt(self, recorded: RecordedAttempt) -> RunningTask | None:
        handle = self._local.adopt(recorded)
        if handle is not None:
            self._handles[(recorded.job, recorded.group, recorded.index,
                           recorded.attempt)] = handle
        return handle

    def poll(self, task: RunningTask) -> TaskStatus:
        return self._local.poll(self._handle(task))

    def request_stop(self, task: RunningTask, grace_period: float | None) -> bool:
        return self._local.request_stop(self._handle(task), grace_period)

    def node_id(self) -> str:
        """The Ray node this actor runs on."""
        return str(ray.get_runtime_context().get_node_id())

    def forget_job(self, job: str) -> None:
        """Stop whatever still runs of the attempts this actor knows, and remove the job's
        files on this node."""
        for handle in self._handles.values():
            if handle.job == job:
                self._local.stop(handle, 0.0)
        self._local.forget_job(job)

    def close(self) -> None:
        """Stop the attempts this actor knows (the actor is about to be killed)."""
        for handle in self._handles.values():
            self._local.stop(handle, 0.0)


RemoteTaskActor: Any = ray.remote(num_cpus=0, max_restarts=0)(TaskActor)


def on_node(node_root: str, isolation: Isolation | None, op: str, *args: Any) -> Any:
    """What a short Ray task pinned to a node does there, with no actor: look at an
    attempt's files (adopt, poll), measure or read a task's log (`ray_logs`), forget a job."""
    local = node_executor(node_root, isolation)
    if op == "adopt":
        return local.adopt(args[0])
    if op == "poll":
        handle = local.adopt(args[0])
        if handle is None:
            return LOST_ACTOR
        return local.poll(handle)
    if op == "log_layout":
        return ray_logs.layout(local, *args)
    if op == "read_segment":
        return ray_logs.read_segment(local, *args)
    if op == "forget":
        local.forget_job(args[0])
        return None
    if op == "rename":
        local.rename_job(args[0], args[1])
        return None
    if op == "write_job_file":
        kind, job, user, path, data = args
        target = Path(path)
        if local.isolation.policy.switches_user:
            # Prepares its directory for the job's OS user; another path: a refused user,
            # whose tasks cannot run here either.
            if local.job_file(kind, job, user) != target:
                return None
        else:
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        replace_file(target, data)
        return None
    if op == "remove":
        for path in args[0]:
            Path(path).unlink(missing_ok=True)
        return None
    raise ValueError(f"unknown operation {op!r}")


RemoteOnNode: Any = ray.remote(num_cpus=0, max_retries=0)(on_node)
LOST_ACTOR = TaskStatus(TaskPhase.LOST,
                         detail="its Ray actor is gone and nothing recorded its outcome")
