"""The Ray engine: Shoal schedules, Ray carries out, on as many machines as the Ray cluster has.

It meets the executor contract (`shoal.executors.contract`) and passes the same shared test
suite as the local executor, against a real multi-node Ray cluster. Ray is an optional
dependency (`shoal[ray]`): this module is imported only when the Ray engine is used.

**One long-lived supervisor actor per node.** Each node Shoal launches on gets one
detached, named, threaded actor (`ray_worker.NodeSupervisor`), named `supervisor:<node>`
(`ray_batches.supervisor_name`) in the engine's Ray namespace (`namespace`, "shoal" by
default; one per control plane sharing a Ray cluster) and made with get-if-exists
semantics, so any instance of the engine — the same one, or a control plane restarted after
a crash — finds the node's supervisor again by name and never makes a second one. No actor
is made per attempt: an attempt costs its node a fork (or `posix_spawn` of the compiled
wrapper) by the supervisor's launcher, not a Ray worker process (~100 MB, ~1.5 CPU-seconds
to start on a loaded machine) nor a fresh interpreter.

**Batches.** `launch_many` splits a cycle's launches by node and sends each node's share to
its supervisor in one call, every call fired before one bounded wait; `poll_many` asks each
node once for all its attempts before one short wait; so a cycle's launches and a poll of
every running attempt each cost one round of Ray calls, one call per node, with the same
guarantees per attempt (`shoal.executors.ray_batches`; `launch` and `poll` are batches of
one). The supervisor serves several calls at once (`ray_worker.SUPERVISOR_CONCURRENCY`
threads): a launch waiting on a slow claim does not hold up polls and stops.

**The supervisor is the node's local executor.** It hosts a `LocalExecutor` rooted in the
node's directory `<root>/nodes/<node>` (on the node's own disk: a path of the same name on
every machine), with a launcher (`shoal.executors.launcher`) that spawns the compiled
wrapper where the node can build it and forks the Python one where it cannot; so the
wrapper, the durable claim and status records, process groups, cgroups and isolation are
the same code on every node. Each call carries the engine's `NodeSetup` (root, grace period,
isolation): a supervisor keeps one executor per setup, so a control plane restarted with
other settings gets an executor of its own. The handles (`RunningTask`) an engine returns
are the node's: their paths are paths on the node that ran the attempt, meaningful only
there.

**Crash safety is the node's files, not the supervisor.** Idempotency is the local
executor's on-disk claim, made on the node the attempt runs on: a second launch of an
attempt — through the same supervisor, or through a new one after the first died — returns
the handle of that attempt and never starts a second process. Every wrapper runs in a
session of its own and outlives the supervisor (and its launcher): a supervisor that dies
leaves its tasks running, the polls meanwhile read the attempts' files on the node (short
pinned Ray tasks), and the next call makes a new supervisor, which adopts the attempts from
their records (pid and start time, outcome). An attempt is LOST only when its node is gone
or nothing on its node says how it ended; `adopt` then returns None.

**Placement is exactly Shoal's.** The supervisor is pinned to its node with
`NodeAffinitySchedulingStrategy(node_id, soft=False)`: it runs there or not at all. Shoal
node names map to Ray nodes by the node label `shoal.io/node` (`NODE_LABEL`: `ray start
--labels='{"shoal.io/node": "gpu-07"}'`); a node without that label is named by its Ray node
id. The supervisor reserves nothing in Ray's accounting (`num_cpus=0`, no GPUs, no custom
resources): Shoal's own accounting is the only one, so a task Shoal placed never waits in
Ray's queue for resources Ray thinks are taken, and `CUDA_VISIBLE_DEVICES` is the GPU indices
Shoal assigned (the local executor sets it), never what Ray would pick. A launch on a node
Ray does not know (or that is dead) starts nothing and its handle polls LOST, which the
control loop retries under the task's policy. Which node each attempt was launched on is
the control plane's record (`<root>/placements/...`, written before anything starts; a
relaunch of an attempt goes where the first went).

**Stopping** is the local executor's: SIGTERM to the attempt's process group, SIGKILL once
the grace period ran out, escalated by polling — the node's supervisor keeps the deadline.
`forget_job` has each node the job was placed on stop what still runs of it (found from the
node's records) and remove its files, then forgets its placements; `close` (teardown) stops
every attempt the engine placed and ends the namespace's supervisors. `shoal up` never ends
a supervisor: it waits on its node for the next control plane.

**Logs** of a task are all its attempts' output, in attempt order, whichever nodes ran
them, at offsets that never change (a follower goes on across a move to another node):
`shoal.executors.ray_logs` reassembles them from each node's log, by short pinned tasks.
A node that dies takes its bytes with it, not their offsets.

**Nodes** are Ray's, live (`shoal.executors.ray_nodes` reads them): alive nodes are ready,
drained and dead ones are listed not ready with the reason, each with its address (rank 0's
is a job's MASTER_ADDR) and what it offers (CPUs, memory, GPUs, custom resources, labels,
`gpu-type`).

**Job files** (an elastic job's membership) are written on every alive node, at the same
path (`job_file`), by short pinned tasks, so a task reads its job's file on whichever node
it runs. What runs on the nodes (the supervisors, the pinned tasks) is
`shoal.executors.ray_worker`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# A control plane started with `uv run` (as `make run` and `make test` do) would otherwise
# have Ray start every worker through `uv run` again (Ray's uv hook, read when `ray` is
# imported): a project sync per worker, which can hang a launch. Ray's workers run the Python
# their nodes were started with; a task's environment is Shoal's (the local executor's).
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")

import ray
from ray.exceptions import (
    GetTimeoutError,
    NodeDiedError,
    RayActorError,
    RayError,
    TaskUnschedulableError,
)
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from shoal.executors import ray_batches, ray_nodes
from shoal.executors.contract import (
    LogChunk,
    LogStream,
    NodeHealth,
    RecordedAttempt,
)
from shoal.executors.local import DEFAULT_GRACE_PERIOD, stop_by_polling
from shoal.executors.local_files import Isolation, check_name, job_file_paths
from shoal.executors.processes import private_dirs
from shoal.executors.ray_batches import CALL_TIMEOUT, NodeGoneError, supervisor_name
from shoal.executors.ray_logs import GONE, LATE, Answer, TaskLogs
from shoal.executors.ray_nodes import inventory
from shoal.executors.ray_worker import NodeSetup, RemoteOnNode, RemoteSupervisor
from shoal.executors.task import RunningTask, TaskLaunch, TaskStatus
from shoal.executors.wrapper import create_json_exclusive

log = logging.getLogger(__name__)

#: The Ray node label that names a node for Shoal (`shoal.executors.ray_nodes`).
NODE_LABEL = ray_nodes.NODE_LABEL
DEFAULT_NAMESPACE = "shoal"
#: How long writing or removing a job file waits for the nodes (the loop waits meanwhile).
JOB_FILE_TIMEOUT = 30.0
_POLL_INTERVAL = 0.05


def _draining() -> frozenset[str]:
    """The ids of the nodes Ray is draining. Ray publishes them through its private state
    API only (as Ray Serve reads them); should that move, no node counts as draining and
    a drained node is seen when it dies."""
    try:
        return frozenset(ray._private.state.state.get_draining_nodes())
    except (AttributeError, RayError, OSError):
        return frozenset()


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
        # Each node's supervisor actor, by node name (replaced whole, never mutated).
        self._supervisors: dict[str, Any] = {}
        # Outcomes this instance saw: such an attempt is never asked again.
        self._ended: dict[str, TaskStatus] = {}
        # Nodes (ids) that refused work pinned to them: gone, though Ray may list them
        # alive a little longer; a node id never comes back.
        self._unplaceable: set[str] = set()
        # Polls asked and not answered yet: attempt → (the call that carries its answer,
        # its place among that call's answers, asked of the node's supervisor).
        self._asked: dict[str, tuple[Any, int, bool]] = {}
        self._logs = TaskLogs(self._task_placements, self._ask_nodes)

    # ---- nodes ------------------------------------------------------------------------------

    def nodes(self) -> tuple[NodeHealth, ...]:
        """Ray's nodes, as `shoal.executors.ray_nodes` reads them: alive ones ready (not
        when being drained), dead ones not ready with Ray's reason; each with its address
        and what it offers. Two calls to Ray's control store (its nodes, the drained ones)."""
        found = inventory(ray.nodes(), _draining(),  # type: ignore[no-untyped-call]
                          self._unplaceable)
        self._node_ids = dict(found.alive)
        return found.health

    def _node_id(self, name: str) -> str | None:
        if name not in self._node_ids:
            self.nodes()
        return self._node_ids.get(name)

    def node_root(self, node: str) -> Path:
        """The directory of a node's local executor, on that node."""
        return self.root / "nodes" / node

    # ---- placements: which node each attempt was launched on (the control plane's record) --

    def _placement(self, job: str, group: str, index: int, attempt: int) -> Path:
        return self.root / "placements" / job / f"{group}-{index}" / f"attempt-{attempt}.json"

    def _place(self, spec: TaskLaunch) -> str:
        """Record the attempt's node before anything starts; an earlier record wins (a
        relaunch of an attempt goes where the first launch went)."""
        path = self._placement(spec.job, spec.group, spec.index, spec.attempt)
        private_dirs(self.root, path.parent)
        create_json_exclusive(path, {"node": spec.node})
        return self._placed(spec.job, spec.group, spec.index, spec.attempt) or spec.node

    def _placed(self, job: str, group: str, index: int, attempt: int) -> str | None:
        try:
            data = json.loads(self._placement(job, group, index, attempt).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        node = data.get("node") if isinstance(data, dict) else None
        return node if isinstance(node, str) else None

    def _task_placements(self, job: str, group: str, index: int
                         ) -> tuple[list[tuple[int, str]], Path]:
        """The task's placed attempts in order, each with its node, and the directory of
        its placements (where `ray_logs` keeps what it measured of their logs)."""
        directory = self.root / "placements" / job / f"{group}-{index}"
        attempts = sorted(int(p.stem.removeprefix("attempt-"))
                          for p in directory.glob("attempt-*.json")
                          if p.stem.removeprefix("attempt-").isdigit())
        placed = [(a, self._placed(job, group, index, a)) for a in attempts]
        return [(a, node) for a, node in placed if node is not None], directory

    def _run_on(self, node: str | None, op: str, *args: Any, timeout: float = CALL_TIMEOUT
                ) -> Any:
        """Run `op` of `ray_worker.on_node` on `node` (a short pinned Ray task):
        NodeGoneError when the node is unknown, dead or does not answer in time
        (GetTimeoutError)."""
        ref = self._submit_on(node, op, *args)
        try:
            return ray.get(ref, timeout=timeout)
        except GetTimeoutError:
            raise
        except RayError as exc:
            self._forget_node(node or "", exc)
            raise NodeGoneError(node) from exc

    def _ask_nodes(self, calls: Mapping[str, tuple[str, tuple[Any, ...]]]
                   ) -> dict[str, Answer]:
        """Run one op on each node named, at once (short pinned tasks), for `ray_logs`: its
        answer, GONE when the node is (not alive, or Ray can no longer place anything on
        it), LATE when it did not answer in CALL_TIMEOUT or failed otherwise (nothing is
        concluded from that: a node that is merely slow must not lose its bytes)."""
        answers: dict[str, Answer] = {}
        refs: dict[str, Any] = {}
        for node, (op, args) in calls.items():
            try:
                refs[node] = self._submit_on(node, op, *args)
            except NodeGoneError:
                answers[node] = GONE
        if refs:
            ray.wait(list(refs.values()), num_returns=len(refs), timeout=CALL_TIMEOUT)
        for node, ref in refs.items():
            try:
                answers[node] = ray.get(ref, timeout=0)
            except GetTimeoutError:
                answers[node] = LATE
                with contextlib.suppress(RayError):
                    ray.cancel(ref, force=True)
            except (TaskUnschedulableError, NodeDiedError) as exc:
                self._forget_node(node, exc)
                answers[node] = GONE
            except RayError as exc:
                log.warning("node %s: reading a log failed: %s", node, exc)
                answers[node] = LATE
        return answers

    def _forget_node(self, node: str, error: RayError) -> None:
        """A call pinned to `node` failed: ask Ray for its id again next time; one that Ray
        says it can no longer place anything on is gone (Ray may still list it alive for
        a while, and a task lost with it must not be placed there again meanwhile)."""
        node_id = self._node_ids.pop(node, None)
        if node_id is not None and isinstance(error, TaskUnschedulableError):
            self._unplaceable.add(node_id)

    def _submit_on(self, node: str | None, op: str, *args: Any) -> Any:
        """Start `op` on `node` (a short pinned Ray task) and return its answer's ref;
        NodeGoneError when the node is unknown or dead."""
        node_id = None if node is None else self._node_id(node)
        if node is None or node_id is None:
            raise NodeGoneError(node)
        return RemoteOnNode.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        ).remote(str(self.node_root(node)), self.isolation, op, *args)

    # ---- supervisors: one long-lived actor per node ----------------------------------------

    def _setup(self, node: str) -> NodeSetup:
        """What the node's supervisor makes its local executor of, for this engine."""
        return NodeSetup(str(self.node_root(node)), self.grace_period, self.isolation)

    def _supervisor(self, node: str, *, fresh: bool = False) -> Any | None:
        """The node's supervisor, made if missing (get-if-exists, by its name), pinned to
        the node; None when the node is unknown or dead. `fresh`: the one this engine knew
        died, so wait (bounded) until Ray has freed its name before making another."""
        supervisor = None if fresh else self._supervisors.get(node)
        if supervisor is not None:
            return supervisor
        node_id = self._node_id(node)
        if node_id is None:
            return None
        name = supervisor_name(node)
        if fresh:
            self._wait_name_free(name)
        supervisor = RemoteSupervisor.options(
            name=name, namespace=self.namespace, lifetime="detached", get_if_exists=True,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        ).remote()
        self._supervisors = {**self._supervisors, node: supervisor}
        return supervisor

    def _lose_supervisor(self, node: str) -> None:
        """The node's supervisor died: the next call makes (or finds) another."""
        if node in self._supervisors:
            self._supervisors = {k: v for k, v in self._supervisors.items() if k != node}

    def _wait_name_free(self, name: str) -> None:
        deadline = time.monotonic() + CALL_TIMEOUT
        while time.monotonic() < deadline:
            try:
                ray.get_actor(name, namespace=self.namespace)
            except ValueError:
                return
            time.sleep(_POLL_INTERVAL)

    def _ask_supervisor(self, node: str | None, method: str, *args: Any) -> Any:
        """Call `method` of the node's supervisor (bounded by CALL_TIMEOUT), once more
        through a new supervisor should this one have died; NodeGoneError when the node is
        unknown or dead, RayActorError when the new one died too."""
        if node is None:
            raise NodeGoneError(node)
        for round_ in range(2):
            supervisor = self._supervisor(node, fresh=round_ > 0)
            if supervisor is None:
                raise NodeGoneError(node)
            try:
                return ray.get(getattr(supervisor, method).remote(self._setup(node), *args),
                               timeout=CALL_TIMEOUT)
            except RayActorError:
                self._lose_supervisor(node)
                if round_ > 0:
                    raise
        raise AssertionError("unreachable")

    def _placeholder(self, job: str, group: str, index: int, attempt: int,
                     pid: int = 0, start: float = 0.0) -> RunningTask:
        """A handle built without asking any node (its paths are only nominal)."""
        base = self.root / "unplaced" / job / f"{group}-{index}"
        return RunningTask(job, group, index, attempt, pid, start, base / "out", base / "err",
                           base / f"attempt-{attempt}" / "status.json")

    # ---- launch -----------------------------------------------------------------------------

    def launch(self, spec: TaskLaunch) -> RunningTask:
        """Start the attempt on its node through the node's supervisor, at most once per
        attempt (a batch of one: `launch_many`)."""
        result = ray_batches.launch_many(self, [spec])[0]
        if isinstance(result, BaseException):
            raise result
        return result

    # ---- adopt ------------------------------------------------------------------------------

    @staticmethod
    def _record(task: RunningTask) -> RecordedAttempt:
        return RecordedAttempt(task.job, task.group, task.index, task.attempt, task.pid,
                               task.pid_start_time)

    def adopt(self, recorded: RecordedAttempt) -> RunningTask | None:
        """The attempt's handle, from its node's supervisor (or, should the supervisor have
        died twice, from its files on its node); None when it is gone with nothing recorded
        (or its node is)."""
        node = self._placed(recorded.job, recorded.group, recorded.index, recorded.attempt)
        try:
            handle: RunningTask | None = self._ask_supervisor(node, "adopt", recorded)
            return handle
        except NodeGoneError:
            return None
        except GetTimeoutError:
            # Slow is not gone: a handle from the record, which polls as the node answers
            # (None here would have the attempt retried while it may run).
            return self.recorded(recorded)
        except RayError:
            pass
        try:
            found: RunningTask | None = self._run_on(node, "adopt", recorded)
        except (NodeGoneError, GetTimeoutError):
            return None
        return found

    def recorded(self, recorded: RecordedAttempt) -> RunningTask:
        """A handle from the record alone; its node's supervisor answers when polled."""
        return self._placeholder(recorded.job, recorded.group, recorded.index,
                                 recorded.attempt, recorded.pid, recorded.pid_start_time)

    # ---- poll and stop ----------------------------------------------------------------------

    def poll(self, task: RunningTask) -> TaskStatus:
        """Where the attempt stands, asked of its node's supervisor (or, should that have
        died, read from the attempt's files on its node); never blocking for long: an
        answer that is late is RUNNING now, and the question stays in flight for the next
        poll. LOST once nothing can tell. (A batch of one: `poll_many`.)"""
        return ray_batches.poll_many(self, [task])[0]

    def request_stop(self, task: RunningTask, grace_period: float | None = None) -> bool:
        """SIGTERM the attempt's process group on its node; its supervisor escalates to
        SIGKILL when polled past the grace period. False when it had ended (or is gone)."""
        grace = self.grace_period if grace_period is None else grace_period
        name = ray_batches.attempt_name(task.job, task.group, task.index, task.attempt)
        if name in self._ended:
            return False
        node = self._placed(task.job, task.group, task.index, task.attempt)
        try:
            return bool(self._ask_supervisor(node, "request_stop", task, grace))
        except (NodeGoneError, RayError):
            return False

    def stop(self, task: RunningTask, grace_period: float | None = None) -> TaskStatus:
        """`request_stop`, then poll until it ended (bounded by grace + a kill wait)."""
        return stop_by_polling(self, task,
                               self.grace_period if grace_period is None else grace_period)

    # ---- logs and files ---------------------------------------------------------------------

    def read_log(self, job: str, group: str, index: int, stream: LogStream, offset: int,
                 limit: int) -> LogChunk:
        """At most `limit` (and `MAX_LOG_READ`) bytes of a task's log, all its attempts in
        order across the nodes that ran them (`ray_logs`); empty when there is none. Bytes
        lost with a dead node are skipped: the chunk's `offset` then says where its bytes
        start."""
        return self._logs.read(job, group, index, stream, offset, limit)

    def job_file(self, kind: str, job: str, user: str | None) -> Path:
        """Where every task of `job` reads a job file, the same path on every node: as the
        local executor puts it (`LocalExecutor.job_file`), with the work root (tasks that
        switch users) or the engine's root (tasks that run as Ray's own user) standing for
        that directory on each node. Computed here, touching nothing."""
        check_name("job", job)
        check_name("kind", kind)
        isolation = self.isolation
        if isolation is not None and isolation.policy.switches_user \
                and isolation.work_root is not None:
            return isolation.work_root / ".jobs" / job / f"{kind}.json"
        return self.root / "control" / kind / f"{job}.json"

    def write_job_file(self, kind: str, job: str, user: str | None, data: bytes) -> Path:
        """Write the job file on every alive node (short pinned tasks, at once; bounded by
        JOB_FILE_TIMEOUT): a task may be placed on any of them. A node that does not answer
        is skipped and logged; the next write reaches it."""
        path = self.job_file(kind, job, user)
        self._on_every_node("write_job_file", kind, job, user, str(path), data)
        return path

    def remove_job_file(self, kind: str, job: str) -> None:
        """Remove the job file on every alive node (bounded as `write_job_file`)."""
        work_root = None if self.isolation is None else self.isolation.work_root
        paths = [str(p) for p in job_file_paths(self.root, work_root, kind, job)]
        self._on_every_node("remove", paths)

    def _on_every_node(self, op: str, *args: Any) -> None:
        self.nodes()
        refs = {name: RemoteOnNode.options(
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                ).remote(str(self.node_root(name)), self.isolation, op, *args)
                for name, node_id in self._node_ids.items()}
        if not refs:
            return
        done, _ = ray.wait(list(refs.values()), num_returns=len(refs),
                           timeout=JOB_FILE_TIMEOUT)
        for name, ref in refs.items():
            if ref not in done:
                log.warning("node %s did not answer in %.0f s (%s): skipped", name,
                            JOB_FILE_TIMEOUT, op)
                with contextlib.suppress(RayError):
                    ray.cancel(ref, force=True)
                continue
            try:
                ray.get(ref)
            except RayError as exc:
                log.warning("node %s: %s failed: %s", name, op, exc)

    def _job_nodes(self, job: str | None) -> list[str]:
        """The nodes the job's attempts (every job's: None) were placed on."""
        placements = self.root / "placements"
        paths = placements.glob("*/*/attempt-*.json") if job is None \
            else (placements / job).glob("*/attempt-*.json")
        nodes = {self._placed(p.parent.parent.name, *_group_index(p.parent.name), _attempt(p))
                 or "" for p in paths}
        return sorted(nodes - {""})

    def _on_supervisors(self, nodes: Sequence[str], method: str, *args: Any) -> set[str]:
        """Call `method` of each node's supervisor at once (bounded by CALL_TIMEOUT); the
        nodes that did it."""
        refs: dict[str, Any] = {}
        for node in nodes:
            supervisor = self._supervisor(node)
            if supervisor is not None:
                refs[node] = getattr(supervisor, method).remote(self._setup(node), *args)
        if refs:
            ray.wait(list(refs.values()), num_returns=len(refs), timeout=CALL_TIMEOUT)
        done: set[str] = set()
        for node, ref in refs.items():
            try:
                ray.get(ref, timeout=0)
                done.add(node)
            except RayActorError:
                self._lose_supervisor(node)
            except RayError as exc:
                log.warning("node %s: %s failed: %s", node, method, exc)
        return done

    def rename_job(self, job: str, new: str) -> None:
        """Move the ended job's files to the name `new` on every node it was placed on, and
        its placements with them (nothing of it runs)."""
        check_name("job", job)
        check_name("job", new)
        placements = self.root / "placements" / job
        nodes = {self._placed(job, *_group_index(p.parent.name), _attempt(p)) or ""
                 for p in placements.glob("*/attempt-*.json")}
        for node in sorted(nodes - {""}):
            with contextlib.suppress(NodeGoneError, GetTimeoutError):
                self._run_on(node, "rename", job, new)
        if placements.exists():
            shutil.rmtree(placements.with_name(new), ignore_errors=True)
            placements.rename(placements.with_name(new))
        for name in [n for n in self._ended if n.startswith(f"{job}:")]:
            del self._ended[name]

    def forget_job(self, job: str) -> None:
        """Stop what still runs of the job and remove its files, on every node it was
        placed on (through the nodes' supervisors; a node whose supervisor does not answer
        has its files removed by a short pinned task), and forget its placements."""
        check_name("job", job)
        nodes = self._job_nodes(job)
        done = self._on_supervisors(nodes, "forget_job", job)
        for node in nodes:
            if node not in done:
                with contextlib.suppress(NodeGoneError, GetTimeoutError):
                    self._run_on(node, "forget", job)
        shutil.rmtree(self.root / "placements" / job, ignore_errors=True)
        for name in [n for n in self._ended if n.startswith(f"{job}:")]:
            del self._ended[name]
        for name in [n for n in self._asked if n.startswith(f"{job}:")]:
            del self._asked[name]

    def close(self) -> None:
        """Stop every attempt this engine placed that still runs, and end the supervisors
        of its namespace (tests, teardown; `shoal up` never calls it: tasks outlive it)."""
        self._on_supervisors(self._job_nodes(None), "close")
        for entry in ray.util.list_named_actors(all_namespaces=True):
            if entry["namespace"] != self.namespace \
                    or not str(entry["name"]).startswith(supervisor_name("")):
                continue
            with contextlib.suppress(ValueError, RayError):
                ray.kill(ray.get_actor(str(entry["name"]), namespace=self.namespace),
                         no_restart=True)
        self._supervisors = {}

    def launch_many(self, specs: Sequence[TaskLaunch]) -> list[RunningTask | BaseException]:
        """Launch these attempts together (`ray_batches`: one call per node's supervisor,
        all fired before one bounded wait); one result per spec, in order: its handle, or
        the exception its launch raised (the others still launch). Idempotent per
        attempt."""
        return ray_batches.launch_many(self, specs)

    def poll_many(self, tasks: Sequence[RunningTask]) -> list[TaskStatus]:
        """Poll these tasks together (`ray_batches`: one question per node, all put before
        one wait of at most `POLL_WAIT`); one status per task, in order, a late answer
        RUNNING."""
        return ray_batches.poll_many(self, tasks)


def _group_index(text: str) -> tuple[str, int]:
    group, _, index = text.rpartition("-")
    return group, int(index) if index.isdigit() else 0


def _attempt(path: Path) -> int:
    number = path.stem.removeprefix("attempt-")
    return int(number) if number.isdigit() else 0
