"""The local executor: runs each task of a job as a subprocess of this machine.

It owns starting, watching, stopping and re-adopting task processes; it does not decide
anything (the scheduler chose the node and the exact GPUs) and it does not store task state
(the control loop does). What it keeps on disk, under `root`, is only what a restarted control
plane needs to find its processes again:

    <root>/tasks/<job>/<group>-<index>/attempt-<n>/launch.json   claim + what was launched
                                                  /pid.json      wrapper pid + start time
                                                  /status.json   exit code or signal
                                                  /log-start.json where its output starts
    <root>/logs/<job>/<group>-<index>.out|.err                  stdout / stderr (appended)

Every task runs under `wrapper.py` in its own session, so the wrapper's pid is the process
group id: stopping a task signals the whole group (the command and anything it spawned),
and everything in the task's cgroups when it has some (what left the group by `setsid`).
The wrappers are forked by the executor's launcher process (`shoal.executors.launcher`),
not started as fresh interpreters (`launcher=False` does that, for an executor that
launches once); a batch of launches (`launch_many`) is one exchange with the launcher, which
claims, prepares and starts each attempt from one request (`shoal.executors.local_launch`:
the server touches no file of it). Job files, log reads and what a forgotten job leaves
are `shoal.executors.local_files`'.
How tasks are kept apart from the server and from each other (OS users, working
directories, limits) is `Isolation`, whose contract `shoal.executors.isolation` states; the
executor's default, for tests that drive it directly, runs tasks as its own user. Everything
under `root` is the server's only (directories 0700, files 0600).
A process is identified by pid *and* start time, so a pid reused by an unrelated process
after a restart is never mistaken for a task, and never signalled. What it is told and tells
back (`TaskLaunch`, `RunningTask`, `TaskStatus`) lives in `shoal.executors.task`; it is one
engine of the contract `shoal.executors.contract.Executor` states (its nodes are slices of
this machine, declared at start and always ready).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from shoal.executors import local_files, local_launch, native, wrapper
from shoal.executors.contract import (
    Executor,
    NodeHealth,
    RecordedAttempt,
)
from shoal.executors.isolation import (
    Accounts,
    Identity,
    IsolationError,
    home_env,
    task_work_dir,
)
from shoal.executors.launcher import WRAPPER, Forked, Launcher, LaunchRequest
from shoal.executors.local_files import JobFiles, check_name
from shoal.executors.local_launch import Inherited

# Importable from here still: tests and benchmarks of other slices take it from this module.
from shoal.executors.processes import (
    alive,
    append_log,
    check_launchable,
    file_size,
    free_port,  # noqa: F401
    private_dirs,
    read_json,
    read_status,
    same_process,
)
from shoal.executors.task import (
    RUNNING,
    RunningTask,
    TaskLaunch,
    TaskPhase,
    TaskStatus,
    task_env,
)
from shoal.executors.wrapper import (
    LOG_START_FILE,
    PID_FILE,
    STATUS_FILE,
    cgroup_pids,
    create_json_exclusive,
    drain_cgroups,
    signal_cgroups,
    write_json_atomic,
)

# Importable from here still (the Ray engine, `shoal up`): they moved to `local_files`.
Isolation = local_files.Isolation
job_file_paths = local_files.job_file_paths

LAUNCH_FILE = wrapper.LAUNCH_FILE
RELAUNCH_FILE = "relaunch.json"
"""The second, last claim of an attempt whose first claimant never started it."""
DEFAULT_GRACE_PERIOD = 30.0
#: How long `stop` waits for the group to vanish after SIGKILL before giving up (a process in
#: uninterruptible sleep cannot be killed any faster; the caller must not block forever).
KILL_WAIT = 5.0
#: How long a second `launch` of a claimed attempt waits for the first one's pid record.
CLAIM_WAIT = 5.0
_POLL_INTERVAL = 0.02


def stop_by_polling(executor: Executor, task: RunningTask, grace: float) -> TaskStatus:
    """The blocking `stop` of an engine whose `poll` escalates a requested stop: request it,
    then poll until the task ended or grace + KILL_WAIT ran out (the status may then still
    be RUNNING: a process that cannot be killed must not block the caller for ever)."""
    executor.request_stop(task, grace)
    give_up = time.monotonic() + grace + KILL_WAIT
    status = executor.poll(task)
    while status.running and time.monotonic() < give_up:
        time.sleep(_POLL_INTERVAL)
        status = executor.poll(task)
    return status


class LocalExecutor(JobFiles):
    """Starts, polls, stops and re-adopts task processes on this machine (an `Executor`).
    `node_names`: the nodes declared for this machine, which `nodes` lists as ready."""

    #: Batches `launch_many` may launch at once (`shoal.control.inflight`). A launch is
    #: mostly system calls that release the GIL (claim, cgroups, working directories); the
    #: launcher answers one exchange at a time. Two lanes overlap one batch's file-system
    #: work with the other's exchange, on the second core one lane left idle.
    launch_lanes = 2

    def __init__(self, root: Path, *, grace_period: float = DEFAULT_GRACE_PERIOD,
                 base_env: Mapping[str, str] | None = None,
                 isolation: Isolation | None = None, node_names: Sequence[str] = (),
                 launcher: bool = True, compiled: bool = True) -> None:
        """`launcher`: tasks' wrappers are started by a long-lived launcher process
        (`shoal.executors.launcher`); False: each is a fresh interpreter (an executor
        that launches once). `compiled`: the launcher spawns the compiled wrapper where
        the machine can build it (`shoal.executors.native`); False: it forks Python's."""
        # Absolute: the wrapper starts in the task's working directory, not ours.
        self.root = Path(root).absolute()
        self.node_names = tuple(node_names)
        self.grace_period = grace_period
        self._base_env = base_env
        self.isolation = isolation or Isolation()
        if self.isolation.policy.switches_user and self.isolation.work_root is None:
            raise ValueError("an executor that switches users needs a work root")
        self._accounts = Accounts(self.isolation.policy)
        # Our own children, so that we reap them (a zombie would otherwise look alive).
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._launcher = Launcher(compiled=compiled) if launcher else None
        if self._launcher is not None and compiled:
            native.build_soon()
        if self._launcher is not None:
            weakref.finalize(self, self._launcher.close)
        # Stops in progress: status path → monotonic deadline for SIGKILL.
        self._stopping: dict[Path, float] = {}
        # Attempts we SIGKILLed: their wrapper died too, so the executor records the outcome.
        self._killed: set[Path] = set()

    def close(self) -> None:
        """End the launcher process, if one runs (the tasks it started run on)."""
        if self._launcher is not None:
            self._launcher.close()

    @property
    def launcher(self) -> Launcher | None:
        return self._launcher

    def nodes(self) -> tuple[NodeHealth, ...]:
        """The declared nodes, all ready: they are this machine, which runs if we do."""
        return tuple(NodeHealth(name, ready=True) for name in self.node_names)

    # ---- launch -----------------------------------------------------------------------------

    def launch(self, spec: TaskLaunch) -> RunningTask:
        """Start one attempt, at most once: if this attempt was already claimed (by this or an
        earlier executor instance), return a handle on it instead of starting it again."""
        result = self.launch_many([spec])[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def launch_many(self, specs: Sequence[TaskLaunch]) -> list[RunningTask | BaseException]:
        """`launch` for each spec, in order, a launch that raised being its result. With a
        launcher, each attempt is one request that the launcher claims, prepares and
        starts, sent together and answered together (`shoal.executors.local_launch`);
        without, each is claimed and prepared here and started by path."""
        inherited = Inherited(self._base_env)  # read once for the batch, not per task
        if self._launcher is not None:
            # Claimed, prepared and started by the launcher, off the server's GIL.
            return local_launch.launch_many(self, self._launcher, specs, inherited)
        results: list[RunningTask | BaseException | None] = [None] * len(specs)
        forks: list[tuple[int, _Fork]] = []
        for i, spec in enumerate(specs):
            try:
                claimed = self._claim(spec)
                if isinstance(claimed, RunningTask):
                    results[i] = claimed
                    continue
                prepared = self._prepare(spec, claimed, inherited, record_pid=True)
            except Exception as exc:
                results[i] = exc
                continue
            if isinstance(prepared, RunningTask):
                results[i] = prepared
            else:
                forks.append((i, prepared))
        outcomes = self._fork_all([fork for _, fork in forks])
        for (i, fork), outcome in zip(forks, outcomes, strict=True):
            try:
                results[i] = self._started(fork, outcome)
            except Exception as exc:
                results[i] = exc
        return [result for result in results if result is not None]

    def poll_many(self, tasks: Sequence[RunningTask]) -> list[TaskStatus]:
        """`poll` for each task, in order (each is a few reads of this machine's files)."""
        return [self.poll(task) for task in tasks]

    def _claim(self, spec: TaskLaunch) -> Path | RunningTask:
        """Check `spec` and claim its attempt: the attempt's directory, claimed now; or the
        handle of an attempt claimed earlier. Raises ValueError for a launch that can never
        work, having claimed nothing."""
        check_name("job", spec.job)
        check_name("group", spec.group)
        if not spec.command:
            raise ValueError(f"task {spec.job}/{spec.group}/{spec.index} has no command")
        # Who it runs as is settled before the claim: a task refused here leaves no claim.
        self._accounts.identity(spec.user)
        task_dir = self.task_dir(spec.job, spec.group, spec.index, spec.attempt)
        private_dirs(self.root, task_dir)
        out_path, err_path = self.log_paths(spec.job, spec.group, spec.index)
        private_dirs(self.root, out_path.parent)
        cgroups = () if self.isolation.cgroups is None \
            else self.isolation.cgroups.paths(str(task_dir))
        record = {"job": spec.job, "group": spec.group, "index": spec.index,
                  "attempt": spec.attempt, "node": spec.node, "gpus": list(spec.gpus),
                  "command": list(spec.command), "stdout": str(out_path),
                  "stderr": str(err_path), "cgroups": [str(c) for c in cgroups],
                  "claimed_at": time.time()}
        if not create_json_exclusive(task_dir / LAUNCH_FILE, record):
            return self._existing(task_dir, spec, record)
        return task_dir

    def _start(self, spec: TaskLaunch, task_dir: Path, *, record_pid: bool) -> RunningTask:
        """Start the wrapper for a claimed attempt. `record_pid`: the handle is the started
        wrapper's (False: a relaunch, whose handle is whichever wrapper's exclusive pid
        record decides between it and a late first wrapper)."""
        prepared = self._prepare(spec, task_dir, Inherited(self._base_env),
                                 record_pid=record_pid)
        if isinstance(prepared, RunningTask):
            return prepared
        return self._started(prepared, self._fork_all([prepared])[0])

    def _prepare(self, spec: TaskLaunch, task_dir: Path, inherited: Inherited, *,
                 record_pid: bool) -> RunningTask | _Fork:
        """What starting a claimed attempt's wrapper takes (its environment, user,
        cgroups); or, when it cannot start (a missing working directory, a refused user),
        its handle, whose status says why. Raises ValueError for a launch that can never
        work."""
        out_path, err_path = self.log_paths(spec.job, spec.group, spec.index)
        handle = RunningTask(spec.job, spec.group, spec.index, spec.attempt, 0, 0.0,
                             out_path, err_path, task_dir / STATUS_FILE)
        uid = gid = None
        cwd: str | None
        try:
            identity = self._accounts.identity(spec.user)
            if identity is not None:
                env, cwd = self._as_user(spec, identity, inherited.isolated())
                uid, gid = identity.uid, identity.gid
            else:
                env, cwd = task_env(spec, inherited.whole()), spec.working_dir
            check_launchable(spec.command, env, cwd)
            cgroups = self.isolation.cgroups
            if cgroups is not None:
                made = cgroups.create(str(task_dir), spec.limits)
                handle = RunningTask(spec.job, spec.group, spec.index, spec.attempt, 0, 0.0,
                                     out_path, err_path, task_dir / STATUS_FILE, made)
        except (OSError, IsolationError) as exc:
            return _cannot_start(handle, exc)
        except ValueError:  # a launch that can never work (a NUL byte): the caller's to judge
            _release(handle)
            raise
        # No working directory named: the task starts in the server's, as a child of
        # the server would (the launcher's own is "/").
        request = LaunchRequest(task_dir, spec.command, env, cwd or os.getcwd(),
                                out_path, err_path, uid, gid, handle.cgroups)
        return _Fork(spec, task_dir, handle, request, record_pid)

    def _fork_all(self, forks: Sequence[_Fork]) -> list[Forked | int | OSError]:
        """Start the wrappers: forked by the launcher, all from one exchange (a `Forked`
        each), or each a fresh interpreter (its pid); an OSError for one that did not
        start."""
        if not forks:
            return []
        if self._launcher is not None:
            return list(self._launcher.fork_many([fork.request for fork in forks]))
        started: list[Forked | int | OSError] = []
        for fork in forks:
            try:
                started.append(self._exec_wrapper(fork.request))
            except OSError as exc:
                started.append(exc)
        return started

    def _started(self, fork: _Fork, outcome: Forked | int | OSError) -> RunningTask:
        """The handle of a wrapper started (or not: its status then says why)."""
        spec, handle = fork.spec, fork.handle
        if isinstance(outcome, OSError):
            # Typically a fork refused: nothing runs, and the record says why.
            return _cannot_start(handle, outcome)
        if not fork.record_pid or not isinstance(outcome, Forked) or outcome.resent:
            # A wrapper started by path, or a request sent twice: the wrapper's own,
            # exclusive pid record says which process runs the attempt.
            return self._existing(fork.task_dir, None, {})
        # The forked wrapper writes its own pid record before anything else: a control
        # plane that dies now finds it there, or (the wrapper killed before it) the store's
        # record of this pid, which polls LOST.
        return RunningTask(spec.job, spec.group, spec.index, spec.attempt, outcome.pid,
                           outcome.start_time, handle.stdout_path, handle.stderr_path,
                           fork.task_dir / STATUS_FILE, handle.cgroups)

    def _exec_wrapper(self, request: LaunchRequest) -> int:
        """Start the wrapper as a fresh interpreter (`python -I wrapper.py …`): for an
        executor that launches once, where a launcher would not pay."""
        options = [] if request.uid is None else ["--uid", str(request.uid)]
        options += [] if request.gid is None else ["--gid", str(request.gid)]
        options += [arg for path in request.cgroups for arg in ("--cgroup", str(path))]
        argv = [sys.executable, "-I", str(WRAPPER), str(request.task_dir), *options, "--",
                *request.command]
        # Written before the process starts: nothing of this attempt is in the logs yet,
        # so what follows these sizes is its output (and later attempts'). A relaunch
        # keeps the first claimant's record: had that one started a wrapper after all,
        # its output would come after the first sizes, not the second. (A forked wrapper
        # records them itself, once it owns the attempt.) Not fsync'd, as the wrappers':
        # lost with the machine, the attempt's log is shown from its start.
        log_start = request.task_dir / LOG_START_FILE
        if not log_start.exists():
            write_json_atomic(log_start, {"stdout": file_size(request.stdout),
                                          "stderr": file_size(request.stderr)},
                              durable=False)
        # Opened here, as the server: the task gets descriptors, never the files' paths.
        with append_log(request.stdout) as out, append_log(request.stderr) as err:
            proc = subprocess.Popen(
                argv, cwd=request.cwd, env=dict(request.env), stdin=subprocess.DEVNULL,
                stdout=out, stderr=err, start_new_session=True)  # own session ⇒ own group
        self._children[proc.pid] = proc
        return proc.pid

    def _as_user(self, spec: TaskLaunch, identity: Identity, inherited: Mapping[str, str]
                 ) -> tuple[dict[str, str], str]:
        """The environment and working directory of a task that runs as
        `identity`: `inherited` (`isolation.BASE_ENV` of the server's environment), a
        working directory of its own (also its HOME) unless the spec names one."""
        assert self.isolation.work_root is not None
        home = task_work_dir(self.isolation.work_root, identity,
                             (spec.job, f"{spec.group}-{spec.index}"))
        env = task_env(spec, {**inherited, **home_env(identity, home)})
        return env, spec.working_dir or str(home)

    @property
    def accounts(self) -> Accounts:
        """The OS users of this executor's tasks."""
        return self._accounts

    def cannot_start(self, handle: RunningTask, exc: Exception) -> RunningTask:
        """Record that a claimed attempt could not start (nothing runs) and why."""
        return _cannot_start(handle, exc)

    def existing(self, task_dir: Path, spec: TaskLaunch | None, record: dict[str, Any]
                 ) -> RunningTask:
        """The handle of an attempt found claimed (`_existing`)."""
        return self._existing(task_dir, spec, record)

    def _existing(self, task_dir: Path, spec: TaskLaunch | None, record: dict[str, Any]
                  ) -> RunningTask:
        """The handle of an attempt claimed earlier. Its pid record may lag the claim by the
        time the process takes to start. If it never appears, the claimant died before
        starting anything (killed between its claim and its start): given `spec`, the
        attempt is started now, under a second exclusive claim; and should the first
        wrapper start after all, the wrappers' exclusive pid record lets only one of them
        run the command — never a second start. Without `spec` (or when the second claim is
        someone else's), the handle (pid 0) polls as LOST."""
        deadline = time.monotonic() + CLAIM_WAIT
        pid_record = read_json(task_dir / PID_FILE)
        while pid_record is None and time.monotonic() < deadline \
                and not (task_dir / STATUS_FILE).exists():
            time.sleep(_POLL_INTERVAL)
            pid_record = read_json(task_dir / PID_FILE)
        if pid_record is None and spec is not None \
                and not (task_dir / STATUS_FILE).exists() \
                and create_json_exclusive(task_dir / RELAUNCH_FILE, record):
            return self._start(spec, task_dir, record_pid=False)
        pid = int(pid_record["pid"]) if pid_record else 0
        start = float(pid_record["start_time"]) if pid_record else 0.0
        return self._handle(task_dir, pid, start)

    def _handle(self, task_dir: Path, pid: int, start: float) -> RunningTask:
        record = read_json(task_dir / LAUNCH_FILE) or {}
        job = str(record.get("job", task_dir.parent.parent.name))
        group_index = task_dir.parent.name
        group = str(record.get("group", group_index.rsplit("-", 1)[0]))
        index = int(record.get("index", group_index.rsplit("-", 1)[-1] or 0))
        attempt = int(record.get("attempt", task_dir.name.removeprefix("attempt-") or 0))
        out_default, err_default = self.log_paths(job, group, index)
        return RunningTask(job, group, index, attempt, pid, start,
                           Path(record.get("stdout", out_default)),
                           Path(record.get("stderr", err_default)),
                           task_dir / STATUS_FILE,
                           tuple(Path(c) for c in record.get("cgroups", ())))

    # ---- adopt ------------------------------------------------------------------------------

    def adopt(self, recorded: RecordedAttempt) -> RunningTask | None:
        """Re-adopt an attempt after a restart, from what the store recorded. Returns a handle
        when the attempt has a recorded outcome (it ended while we were down) or when its pid
        is alive *with that start time*; None when the pid is gone or now belongs to another
        process and nothing was recorded (the caller treats the task as lost)."""
        task_dir = self.task_dir(recorded.job, recorded.group, recorded.index,
                                 recorded.attempt)
        handle = self._handle(task_dir, recorded.pid, recorded.pid_start_time)
        if handle.status_path.exists() or same_process(recorded.pid,
                                                        recorded.pid_start_time):
            return handle
        return None

    def recorded(self, recorded: RecordedAttempt) -> RunningTask:
        """A handle built from the record alone (no file is read): it polls as running
        while that pid with that start time lives, and as the outcome its wrapper recorded
        (or LOST) after."""
        job, group, index = recorded.job, recorded.group, recorded.index
        status_path = self.task_dir(job, group, index, recorded.attempt) / STATUS_FILE
        out, err = self.log_paths(job, group, index)
        return RunningTask(job, group, index, recorded.attempt, recorded.pid,
                           recorded.pid_start_time, out, err, status_path)

    # ---- poll -------------------------------------------------------------------------------

    def poll(self, task: RunningTask) -> TaskStatus:
        """Where the attempt stands, without blocking. A stopping task counts as RUNNING until
        its whole process group is gone; past its grace period, polling escalates to
        SIGKILL (so `request_stop` + `poll` is the non-blocking form of `stop`)."""
        self._reap(task.pid)
        key = task.status_path
        if key in self._stopping:
            if self._groupalive(task):
                if time.monotonic() >= self._stopping[key]:
                    self._kill_group(task)
                return RUNNING
            del self._stopping[key]
        status = read_status(task.status_path)
        if status is not None:
            self._killed.discard(key)
            _release(task)
            return status
        if same_process(task.pid, task.pid_start_time):
            return RUNNING
        # The wrapper may have written its record and exited between the two checks.
        status = read_status(task.status_path)
        if status is not None:
            _release(task)
            return status
        # The wrapper is gone without a record: nothing of the task may outlive it.
        _release(task)
        if key in self._killed:
            # SIGKILL took the wrapper down with the command: we know the outcome, record it.
            write_json_atomic(task.status_path, {
                "exit_code": None, "signal": int(signal.SIGKILL),
                "error": "killed by the executor after the grace period",
                "finished_at": time.time()})
            self._killed.discard(key)
            return read_status(task.status_path) or TaskStatus(
                TaskPhase.EXITED, signal=int(signal.SIGKILL))
        return TaskStatus(TaskPhase.LOST, detail="process gone and no exit status recorded")

    # ---- stop -------------------------------------------------------------------------------

    def request_stop(self, task: RunningTask, grace_period: float | None = None) -> bool:
        """Send SIGTERM to the task's process group and start its grace period; `poll` then
        escalates to SIGKILL when it runs out. Returns False when the task had already ended
        (nothing was signalled)."""
        grace = self.grace_period if grace_period is None else grace_period
        self._reap(task.pid)
        # A recorded outcome means the command is over (the wrapper may still be exiting).
        if task.status_path.exists() or not same_process(task.pid, task.pid_start_time):
            return False
        with contextlib.suppress(ProcessLookupError):
            os.killpg(task.pid, signal.SIGTERM)
        signal_cgroups(list(task.cgroups), signal.SIGTERM)
        # Keep the earlier deadline if a stop is already under way: asking twice must not
        # extend the grace period.
        deadline = time.monotonic() + grace
        self._stopping[task.status_path] = min(deadline,
                                               self._stopping.get(task.status_path, deadline))
        return True

    def stop(self, task: RunningTask, grace_period: float | None = None) -> TaskStatus:
        """SIGTERM the group, wait up to the grace period, SIGKILL the group, return the final
        status. Bounded: returns after grace + KILL_WAIT at the latest, even if a process
        cannot be killed (then the status is still RUNNING)."""
        return stop_by_polling(self, task,
                               self.grace_period if grace_period is None else grace_period)

    # ---- processes --------------------------------------------------------------------------

    def _reap(self, pid: int) -> None:
        proc = self._children.get(pid)
        if proc is not None and proc.poll() is not None:
            del self._children[pid]

    def _kill_group(self, task: RunningTask) -> None:
        if task.pid <= 1:  # killpg(0) would signal our own group
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(task.pid, signal.SIGKILL)
        signal_cgroups(list(task.cgroups), signal.SIGKILL)
        self._killed.add(task.status_path)

    def _groupalive(self, task: RunningTask) -> bool:
        """True while any non-zombie process is in the task's process group or its
        cgroups. Zombies are skipped: they hold no resources, and where nothing reaps
        orphans they would never go away."""
        if any(alive(pid) for cgroup in task.cgroups for pid in cgroup_pids(cgroup)):
            return True
        pgid = task.pid
        if pgid <= 1:
            return False
        self._reap(pgid)
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        for proc in psutil.process_iter(["status"]):
            try:
                if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                    return True
            except (ProcessLookupError, psutil.Error):
                continue
        return False


@dataclass(frozen=True, slots=True)
class _Fork:
    """A claimed attempt whose wrapper is ready to be started."""

    spec: TaskLaunch
    task_dir: Path
    handle: RunningTask
    """The attempt's handle before a process runs (its cgroups made)."""
    request: LaunchRequest
    record_pid: bool
    """False: a relaunch, whose handle is whichever wrapper's pid record names."""


def _cannot_start(handle: RunningTask, exc: Exception) -> RunningTask:
    """Record that the attempt could not start (nothing runs) and why; its handle."""
    write_json_atomic(handle.status_path, {"exit_code": 127, "signal": None,
                                           "error": f"cannot start: {exc}",
                                           "finished_at": time.time()})
    _release(handle)
    return handle


def _release(task: RunningTask) -> None:
    """The attempt is over: kill what is left in its cgroups and remove them (the wrapper
    does it before recording the outcome; this covers a wrapper that died first)."""
    # Removed first: the kernel removes only a cgroup with no process in it, and the one a
    # wrapper removed is gone — the common case costs one system call, not a read of its
    # processes and a removal, per cgroup of every task that ends.
    left = [cgroup for cgroup in task.cgroups if not _removed(cgroup)]
    if left:
        drain_cgroups(left, time.monotonic() + KILL_WAIT)


def _removed(cgroup: Path) -> bool:
    """Whether `cgroup` is gone now: it was, or it held no process and was removed."""
    try:
        os.rmdir(cgroup)
    except FileNotFoundError:
        return True
    except OSError:  # processes in it (EBUSY): `drain_cgroups` kills them first
        return False
    return True
