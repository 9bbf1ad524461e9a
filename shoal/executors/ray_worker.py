"""What the Ray engine runs on a Ray node: the node's supervisor actor, and short pinned tasks.

The control plane's side is `shoal.executors.ray_engine` (its docstring tells the design);
this module is what Ray workers import and run on the node Shoal chose. Both are the node's
`LocalExecutor` over the node's directory `<root>/nodes/<node>` and the engine's isolation,
so claims, records, process groups, cgroups and task users are the local executor's code on
every node. Neither reserves anything in Ray's accounting (`num_cpus=0`). The supervisor
(`NodeSupervisor`, one per namespace and node) launches, polls, adopts and stops; the short
tasks (`on_node`) read files: logs, an outcome when no supervisor answers, job files.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

# As `ray_engine` does, before Ray is imported: no `uv run` hook for Ray's workers.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")

import ray

from shoal.executors import cgroups, ray_logs
from shoal.executors.contract import RecordedAttempt
from shoal.executors.local import DEFAULT_GRACE_PERIOD, KILL_WAIT, Isolation, LocalExecutor
from shoal.executors.processes import read_json, replace_file
from shoal.executors.task import RunningTask, TaskLaunch, TaskPhase, TaskStatus
from shoal.executors.wrapper import PID_FILE, STATUS_FILE

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
                  grace_period: float = DEFAULT_GRACE_PERIOD, *,
                  launcher: bool = False) -> LocalExecutor:
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
    # `launcher`: the supervisor's, which forks (or spawns, compiled) every task's wrapper;
    # a short pinned task launches nothing and starts no launcher.
    return LocalExecutor(Path(node_root), grace_period=grace_period, base_env=base,
                         isolation=_node_cgroups(isolation), launcher=launcher)


@dataclass(frozen=True, slots=True)
class NodeSetup:
    """What a node's local executor is made of, sent with every call to the node's
    supervisor: the engine's directory for the node, its grace period and isolation. A
    supervisor keeps one executor per setup, so a control plane restarted with other
    settings (or another root in the same namespace) gets an executor of its own."""

    node_root: str
    grace_period: float
    isolation: Isolation | None


#: How many calls a supervisor serves at once: a launch that waits on a slow claim (a
#: second launch of an attempt waits for its pid record) never holds up the polls.
SUPERVISOR_CONCURRENCY = 8


class NodeSupervisor:
    """The long-lived supervisor of one node (one per Ray namespace and node, detached and
    named: `ray_batches.supervisor_name`): the node's `LocalExecutor`, whose launcher forks
    (or spawns, compiled) each task's wrapper, so no attempt costs a Ray worker process or
    a fresh interpreter. It keeps no state that matters: the attempts' claims, pid records
    and outcomes are the executor's files, and their wrappers run in sessions of their own,
    so a supervisor that dies leaves its tasks running and a new one adopts them from those
    files. Threaded (`SUPERVISOR_CONCURRENCY`): the executor is safe to launch on one
    thread while others poll and stop, as the control loop uses it on one machine."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[NodeSetup, LocalExecutor] = {}
        # The node's handles of the attempts it launched or adopted, by attempt: what a
        # control plane's nominal handle (a placeholder, a late launch's pid 0) stands for.
        self._handles: dict[tuple[str, str, str, int, int], RunningTask] = {}

    def _local(self, setup: NodeSetup) -> LocalExecutor:
        with self._lock:
            local = self._nodes.get(setup)
            if local is None:
                local = node_executor(setup.node_root, setup.isolation, setup.grace_period,
                                      launcher=True)
                self._nodes[setup] = local
            return local

    def _handle(self, local: LocalExecutor, task: RunningTask) -> RunningTask:
        key = _key(local, task)
        known = self._handles.get(key)
        if known is not None:
            return known
        pid, start = task.pid, task.pid_start_time
        if pid <= 0:  # a launch whose answer came late: its wrapper's pid record says
            found = read_json(local.task_dir(*key[1:]) / PID_FILE)
            if found is not None:
                pid, start = int(found["pid"]), float(found["start_time"])
        record = RecordedAttempt(task.job, task.group, task.index, task.attempt, pid, start)
        adopted = local.adopt(record)
        if adopted is None:
            return local.recorded(record)
        self._handles[key] = adopted
        return adopted

    def launch_many(self, setup: NodeSetup, specs: list[TaskLaunch]
                    ) -> list[RunningTask | BaseException]:
        """The node's launches of a cycle, in one call (`LocalExecutor.launch_many`)."""
        local = self._local(setup)
        results = local.launch_many(specs)
        for result in results:
            if isinstance(result, RunningTask):
                self._handles[_key(local, result)] = result
        return results

    def adopt(self, setup: NodeSetup, recorded: RecordedAttempt) -> RunningTask | None:
        local = self._local(setup)
        handle = local.adopt(recorded)
        if handle is not None and not handle.status_path.exists():  # kept while it runs
            self._handles[_key(local, handle)] = handle
        return handle

    def poll_many(self, setup: NodeSetup, tasks: list[RunningTask]) -> list[TaskStatus]:
        """The node's polls, in one call; an attempt whose outcome is known is forgotten
        here (its files answer from then on)."""
        local = self._local(setup)
        statuses = []
        for task in tasks:
            status = local.poll(self._handle(local, task))
            if not status.running:
                self._handles.pop(_key(local, task), None)
            statuses.append(status)
        return statuses

    def request_stop(self, setup: NodeSetup, task: RunningTask,
                     grace_period: float | None) -> bool:
        local = self._local(setup)
        return local.request_stop(self._handle(local, task), grace_period)

    def node_id(self) -> str:
        """The Ray node this supervisor runs on."""
        return str(ray.get_runtime_context().get_node_id())

    def pid(self) -> int:
        """This supervisor's process (a test kills it and finds its tasks still running)."""
        return os.getpid()

    def forget_job(self, setup: NodeSetup, job: str) -> None:
        """Stop whatever still runs of the job on this node (found from its records, not
        from memory: a supervisor started since knows them too), then remove its files."""
        local = self._local(setup)
        _stop_all(local, [self._handle(local, task) for task in _running(local, job)])
        for key in [k for k in list(self._handles) if k[:2] == (str(local.root), job)]:
            self._handles.pop(key, None)
        local.forget_job(job)

    def close(self, setup: NodeSetup) -> None:
        """Stop every attempt that runs on this node under this setup (teardown)."""
        local = self._local(setup)
        _stop_all(local, [self._handle(local, task) for task in _running(local, None)])
        for key in [k for k in list(self._handles) if k[0] == str(local.root)]:
            self._handles.pop(key, None)
        local.close()


def _key(local: LocalExecutor, task: RunningTask) -> tuple[str, str, str, int, int]:
    return str(local.root), task.job, task.group, task.index, task.attempt


def _running(local: LocalExecutor, job: str | None) -> list[RunningTask]:
    """The attempts of `job` (every job: None) on this node with a pid record and no
    outcome: those that may still run."""
    found = []
    for pid_path in (local.root / "tasks").glob(f"{job or '*'}/*/attempt-*/{PID_FILE}"):
        task_dir = pid_path.parent
        record = read_json(pid_path)
        if record is None or (task_dir / STATUS_FILE).exists():
            continue
        job_name, group_index = task_dir.parent.parent.name, task_dir.parent.name
        group, _, index = group_index.rpartition("-")
        attempt = task_dir.name.removeprefix("attempt-")
        if not (index.isdigit() and attempt.isdigit()):
            continue
        found.append(local.recorded(RecordedAttempt(
            job_name, group, int(index), int(attempt), int(record["pid"]),
            float(record["start_time"]))))
    return found


def _stop_all(local: LocalExecutor, handles: list[RunningTask]) -> None:
    """Stop these attempts at once, without a grace period (bounded by `KILL_WAIT`)."""
    for handle in handles:
        local.request_stop(handle, 0.0)
    give_up = time.monotonic() + KILL_WAIT
    while handles and time.monotonic() < give_up:
        handles = [h for h in handles if local.poll(h).running]
        if handles:
            time.sleep(0.02)


# Ray's stubs do not know `max_concurrency` (a threaded actor), hence the call through Any.
_remote: Any = ray.remote
RemoteSupervisor: Any = _remote(num_cpus=0, max_restarts=0,
                                max_concurrency=SUPERVISOR_CONCURRENCY)(NodeSupervisor)


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
            # Its directory prepared for the job's OS user; another path: a refused user,
            # whose tasks cannot run here either.
            if local.job_file(kind, job, user) == target:
                local.write_job_file(kind, job, user, data)
            return None
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
                        detail="its process is gone and nothing on its node recorded its outcome")
