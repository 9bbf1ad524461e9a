"""The Ray engine: Shoal schedules, Ray carries out, on as many machines as the Ray cluster has.

It meets the executor contract (`shoal.executors.contract`) and passes the same shared test
suite as the local executor, against a real multi-node Ray cluster. Ray is an optional
dependency (`shoal[ray]`): this module is imported only when the Ray engine is used.

**One detached, named actor per (task, attempt).** `launch` creates, with get-if-exists
semantics, a detached actor named `<job>:<group>:<index>:<attempt>` in the engine's Ray
namespace (`namespace`, "shoal" by default; one per control plane sharing a Ray cluster). The
name is derived from the attempt alone, so any instance of the engine — the same one, or a
control plane restarted after a crash — finds the attempt's actor again by name
(`ray.get_actor`), and never makes a second one.

**The actor is the node's local executor.** Each actor hosts a `LocalExecutor` rooted in the
node's directory `<root>/nodes/<node>` (on the node's own disk: a path of the same name on
every machine) and delegates launch, poll, request_stop, adopt and read_log to it, so the
wrapper, the durable claim and status records, process groups, cgroups and isolation are the
same code on every node. Idempotency is the local executor's on-disk claim, made on the node
the attempt runs on: a second launch of an attempt — through the same actor, or through a
new actor of the same name should the first have gone — returns the handle of that attempt
and never starts a second process. The handles (`RunningTask`) an engine returns are the
node's: their paths are paths on the node that ran the attempt, meaningful only there.

**Placement is exactly Shoal's.** The actor is pinned to the node Shoal chose with
`NodeAffinitySchedulingStrategy(node_id, soft=False)`: it runs there or not at all. Shoal
node names map to Ray nodes by the node label `shoal.io/node` (`NODE_LABEL`: `ray start
--labels='{"shoal.io/node": "gpu-07"}'`); a node without that label is named by its Ray node
id. The actor reserves nothing in Ray's accounting (`num_cpus=0`, no GPUs, no custom
resources): Shoal's own accounting is the only one, so a task Shoal placed never waits in
Ray's queue for resources Ray thinks are taken, and `CUDA_VISIBLE_DEVICES` is the GPU indices
Shoal assigned (the local executor sets it), never what Ray would pick. A launch on a node
Ray does not know (or that is dead) starts nothing and its handle polls LOST, which the
control loop retries under the task's policy.

**Outcomes and loss.** `poll` asks the attempt's actor (a bounded call: while the answer is
late the attempt counts as RUNNING, never as LOST). An attempt whose actor vanished (its node
died, it was killed) has nothing its control plane can read any more: it polls LOST, and
`adopt` returns None for it. Actors stay after their attempt ended, so that its outcome and
its logs remain readable (through the actor, on the node that ran it), until `forget_job`
removes the job's files on every node through its actors and ends them.

**Stopping** is the local executor's: SIGTERM to the attempt's process group, SIGKILL once
the grace period ran out, escalated by polling — the actor keeps the deadline, so every
instance that polls the attempt escalates it.

**Logs** are read through the actor of the task's latest attempt known to this instance (or
found by name), on the node that ran it.

**Nodes** are Ray's: alive nodes are ready, dead ones are listed not ready with Ray's reason.
Wiring into `shoal up --engine ray` and a live node inventory (resources, labels, nodes that
join or die while Shoal runs) are the next step; `master_addr` is used as the control loop
gives it.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from shoal.executors.contract import (
    MAX_LOG_READ,
    LogChunk,
    LogStream,
    NodeHealth,
    RecordedAttempt,
)
from shoal.executors.local import (
    DEFAULT_GRACE_PERIOD,
    KILL_WAIT,
    Isolation,
    LocalExecutor,
    _check_name,
)
from shoal.executors.task import RUNNING, RunningTask, TaskLaunch, TaskPhase, TaskStatus

#: The Ray node label that names a node for Shoal.
NODE_LABEL = "shoal.io/node"
DEFAULT_NAMESPACE = "shoal"
#: How long a poll waits for its actor's answer before counting the attempt as RUNNING.
POLL_TIMEOUT = 10.0
#: How long launch, adopt, stop requests and log reads wait for the actor (its start
#: included: a worker process on a busy machine can take seconds).
CALL_TIMEOUT = 120.0
_POLL_INTERVAL = 0.05
#: Variables of the Ray worker's own environment that a task must not inherit.
_WORKER_ONLY = ("RAY_", "PYTHONBREAKPOINT")


def actor_name(job: str, group: str, index: int, attempt: int) -> str:
    """The name of an attempt's actor: the attempt alone decides it."""
    return f"{job}:{group}:{index}:{attempt}"


class TaskActor:
    """The actor of one (task, attempt), on the node Shoal chose: a `LocalExecutor` over the
    node's directory, which does the work."""

    def __init__(self, node_root: str, grace_period: float,
                 isolation: Isolation | None) -> None:
        base = {k: v for k, v in os.environ.items() if not k.startswith(_WORKER_ONLY)}
        self._local = LocalExecutor(Path(node_root), grace_period=grace_period,
                                    base_env=base, isolation=isolation)
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

    def read_log(self, job: str, group: str, index: int, stream: LogStream, offset: int,
                 limit: int) -> LogChunk:
        return self._local.read_log(job, group, index, stream, offset, limit)

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


_RemoteTaskActor: Any = ray.remote(num_cpus=0, max_restarts=0)(TaskActor)


class RayExecutor:
    """Carries out Shoal's decisions on a Ray cluster (an `Executor`). `address`: the Ray
    cluster to connect to when this process is not connected yet (None: Ray's default)."""

    def __init__(self, root: Path, *, address: str | None = None,
                 namespace: str = DEFAULT_NAMESPACE,
                 grace_period: float = DEFAULT_GRACE_PERIOD,
                 isolation: Isolation | None = None) -> None:
        self.root = Path(root).absolute()
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.namespace = namespace
        self.grace_period = grace_period
        self.isolation = isolation
        if not ray.is_initialized():
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        self._node_ids: dict[str, str] = {}
        self._actors: dict[str, Any] = {}
        # The actor of each task's latest attempt this instance launched or adopted.
        self._latest: dict[tuple[str, str, int], tuple[int, Any]] = {}

    # ---- nodes ------------------------------------------------------------------------------

    @staticmethod
    def _node_name(node: Mapping[str, Any]) -> str:
        labels = node.get("Labels") or {}
        return str(labels.get(NODE_LABEL) or node["NodeID"])

    def nodes(self) -> tuple[NodeHealth, ...]:
        """Ray's nodes: alive ones ready, dead ones not ready with Ray's reason (a name
        that has an alive node is that node)."""
        found: dict[str, NodeHealth] = {}
        for node in ray.nodes():  # type: ignore[no-untyped-call]
            name = self._node_name(node)
            if node.get("Alive"):
                self._node_ids[name] = str(node["NodeID"])
                found[name] = NodeHealth(name, ready=True)
            elif name not in found:
                why = str(node.get("DeathReasonMessage") or "") or "dead"
                found[name] = NodeHealth(name, ready=False, reason=f"dead: {why}")
        return tuple(found[name] for name in sorted(found))

    def _node_id(self, name: str) -> str | None:
        if name not in self._node_ids:
            self.nodes()
        return self._node_ids.get(name)

    # ---- actors -----------------------------------------------------------------------------

    def node_root(self, node: str) -> Path:
        """The directory of a node's local executor, on that node."""
        return self.root / "nodes" / node

    def _actor(self, name: str) -> Any | None:
        actor = self._actors.get(name)
        if actor is None:
            try:
                actor = ray.get_actor(name, namespace=self.namespace)
            except ValueError:
                return None
            self._actors[name] = actor
        return actor

    def _call(self, name: str, method: str, *args: Any, timeout: float = CALL_TIMEOUT
              ) -> Any:
        """Call a method of an attempt's actor; RayActorError when the actor is gone."""
        actor = self._actor(name)
        if actor is None:
            raise RayActorError(error_msg=f"no actor {name!r}")
        try:
            return ray.get(getattr(actor, method).remote(*args), timeout=timeout)
        except RayActorError:
            self._actors.pop(name, None)
            raise

    def _remember(self, task: RunningTask) -> None:
        key = (task.job, task.group, task.index)
        latest = self._latest.get(key)
        if latest is None or latest[0] <= task.attempt:
            name = actor_name(task.job, task.group, task.index, task.attempt)
            self._latest[key] = (task.attempt, self._actors.get(name))

    def _placeholder(self, job: str, group: str, index: int, attempt: int,
                     pid: int = 0, start: float = 0.0) -> RunningTask:
        """A handle built without asking any node (its paths are where the node keeps the
        attempt's files, on a node not known here)."""
        base = self.root / "unplaced" / job / f"{group}-{index}"
        return RunningTask(job, group, index, attempt, pid, start, base / "out", base / "err",
                           base / f"attempt-{attempt}" / "status.json")

    # ---- launch -----------------------------------------------------------------------------

    def launch(self, spec: TaskLaunch) -> RunningTask:
        """Start the attempt on its node through its actor, at most once per attempt."""
        if not spec.command:
            raise ValueError("a task needs a command")
        _check_name("job", spec.job)
        _check_name("group", spec.group)
        _check_name("node", spec.node)
        node_id = self._node_id(spec.node)
        if node_id is None:  # unknown or dead: nothing starts, the attempt is lost
            return self._placeholder(spec.job, spec.group, spec.index, spec.attempt)
        name = actor_name(spec.job, spec.group, spec.index, spec.attempt)
        try:
            actor = self._actor(name)
            if actor is None:
                actor = _RemoteTaskActor.options(
                    name=name, namespace=self.namespace, lifetime="detached",
                    get_if_exists=True,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                ).remote(str(self.node_root(spec.node)), self.grace_period, self.isolation)
                self._actors[name] = actor
            handle: RunningTask = ray.get(actor.launch.remote(spec), timeout=CALL_TIMEOUT)
        except (RayActorError, GetTimeoutError):
            # The node could not run it (died meanwhile): the attempt polls as LOST.
            self._actors.pop(name, None)
            return self._placeholder(spec.job, spec.group, spec.index, spec.attempt)
        self._remember(handle)
        return handle

    # ---- adopt ------------------------------------------------------------------------------

    def adopt(self, recorded: RecordedAttempt) -> RunningTask | None:
        """The attempt's handle, found through its actor by name; None when the actor is gone
        (nothing of the attempt can be read any more) or it has gone with nothing recorded."""
        name = actor_name(recorded.job, recorded.group, recorded.index, recorded.attempt)
        try:
            handle: RunningTask | None = self._call(name, "adopt", recorded)
        except RayActorError:
            return None
        if handle is not None:
            self._remember(handle)
        return handle

    def recorded(self, recorded: RecordedAttempt) -> RunningTask:
        """A handle from the record alone; its actor answers for it when polled."""
        return self._placeholder(recorded.job, recorded.group, recorded.index,
                                 recorded.attempt, recorded.pid, recorded.pid_start_time)

    # ---- poll and stop ----------------------------------------------------------------------

    def poll(self, task: RunningTask) -> TaskStatus:
        """Where the attempt stands, asked of its actor (bounded: a late answer is RUNNING);
        LOST once the actor is gone."""
        name = actor_name(task.job, task.group, task.index, task.attempt)
        try:
            status: TaskStatus = self._call(name, "poll", task, timeout=POLL_TIMEOUT)
        except GetTimeoutError:
            return RUNNING
        except RayActorError:
            return TaskStatus(TaskPhase.LOST,
                              detail="its Ray actor is gone and nothing recorded its outcome")
        return status

    def request_stop(self, task: RunningTask, grace_period: float | None = None) -> bool:
        """SIGTERM the attempt's process group on its node; its actor escalates to SIGKILL
        when polled past the grace period. False when it had ended (or is gone)."""
        grace = self.grace_period if grace_period is None else grace_period
        name = actor_name(task.job, task.group, task.index, task.attempt)
        try:
            return bool(self._call(name, "request_stop", task, grace))
        except RayActorError:
            return False

    def stop(self, task: RunningTask, grace_period: float | None = None) -> TaskStatus:
        """`request_stop`, then poll until it ended (bounded by grace + a kill wait)."""
        grace = self.grace_period if grace_period is None else grace_period
        self.request_stop(task, grace)
        give_up = time.monotonic() + grace + KILL_WAIT
        status = self.poll(task)
        while status.running and time.monotonic() < give_up:
            time.sleep(_POLL_INTERVAL)
            status = self.poll(task)
        return status

    # ---- logs and files ---------------------------------------------------------------------

    def _log_actor(self, job: str, group: str, index: int) -> Any | None:
        latest = self._latest.get((job, group, index))
        if latest is not None and latest[1] is not None:
            return latest[1]
        prefix = f"{job}:{group}:{index}:"
        attempts = sorted(
            (int(entry["name"].removeprefix(prefix)), entry["name"])
            for entry in ray.util.list_named_actors(all_namespaces=True)
            if entry["namespace"] == self.namespace and entry["name"].startswith(prefix)
            and entry["name"].removeprefix(prefix).isdigit())
        if not attempts:
            return None
        attempt, name = attempts[-1]
        actor = self._actor(name)
        if actor is not None:
            self._latest[(job, group, index)] = (attempt, actor)
        return actor

    def read_log(self, job: str, group: str, index: int, stream: LogStream, offset: int,
                 limit: int) -> LogChunk:
        """At most `limit` (and `MAX_LOG_READ`) bytes of a task's log, read on the node that
        ran its latest attempt; empty when there is none."""
        actor = self._log_actor(job, group, index)
        if actor is None:
            return LogChunk(b"", offset)
        try:
            chunk: LogChunk = ray.get(
                actor.read_log.remote(job, group, index, stream, offset,
                                      max(0, min(limit, MAX_LOG_READ))),
                timeout=CALL_TIMEOUT)
        except (RayActorError, GetTimeoutError):
            self._latest.pop((job, group, index), None)
            return LogChunk(b"", offset)
        return chunk

    def job_file(self, kind: str, job: str, user: str | None) -> Path:
        """Where the control plane keeps a file every task of `job` reads. The Ray engine's
        tasks run elsewhere: it is the control plane's own record (shipping it to the nodes
        is the live-inventory step's)."""
        _check_name("job", job)
        return self.root / "control" / kind / f"{job}.json"

    def _job_actors(self, job: str | None) -> list[str]:
        prefix = "" if job is None else f"{job}:"
        return [entry["name"] for entry in ray.util.list_named_actors(all_namespaces=True)
                if entry["namespace"] == self.namespace
                and str(entry["name"]).startswith(prefix)]

    def _end(self, names: list[str], method: str, *args: Any) -> None:
        """Call `method` on each actor, then kill it and wait until its name is free (so a
        later launch of the same attempt makes a new one)."""
        for name in names:
            actor = self._actor(name)
            if actor is None:
                continue
            with contextlib.suppress(RayError):
                ray.get(getattr(actor, method).remote(*args), timeout=CALL_TIMEOUT)
            with contextlib.suppress(RayError):
                ray.kill(actor, no_restart=True)
            self._actors.pop(name, None)
        deadline = time.monotonic() + CALL_TIMEOUT
        for name in names:
            while time.monotonic() < deadline:
                try:
                    ray.get_actor(name, namespace=self.namespace)
                except ValueError:
                    break
                time.sleep(_POLL_INTERVAL)

    def forget_job(self, job: str) -> None:
        """Remove the job's files on every node its actors ran on, and end its actors."""
        _check_name("job", job)
        self._end(self._job_actors(job), "forget_job", job)
        for key in [k for k in self._latest if k[0] == job]:
            del self._latest[key]

    def close(self) -> None:
        """Stop every attempt of this namespace and end their actors (tests, teardown)."""
        self._end(self._job_actors(None), "close")
        self._latest.clear()
