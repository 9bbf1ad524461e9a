"""The tiny process that sits between the local executor and a task's command.

It owns one thing: making a task's outcome durable. It records its own pid and start time
(creating the record exclusively: a second wrapper for the same attempt exits without
running the command), runs the command as its child, waits, and writes the exit code (or the
terminating signal) atomically to `<task-dir>/status.json`. Because the record is a file
and not a `wait()` in the control plane, a task that ends while the control plane is down
still has a known exit status when the control plane comes back (issue item 4,
reconciliation).

It also applies the task's isolation (`shoal.executors.isolation`) to the command, and only
to the command: the wrapper itself keeps the executor's user, so a task can neither forge
its status record (the task directory is the executor's, 0700) nor signal its wrapper.
Between fork and exec the child joins the task's cgroups (so everything it ever spawns is
counted and limited there), drops every group, switches to the task's gid and uid and sets
a umask of 0o077. When the command ends, the wrapper kills whatever it left in its cgroups,
notes whether the kernel's OOM killer struck (`"reason": "OOMKilled"` in the record) and
removes the cgroups, before it records the outcome.

Usage: `python -I wrapper.py <task-dir> [--uid N --gid N] [--cgroup DIR]… -- <command> [args…]`,
or `python -I wrapper.py --serve [--native WRAPPER]`: the executor's launcher
(`shoal.executors.launcher`), which claims the attempts the executor sends it whole
(`_claimed`, with `claims.py` beside this file: the launcher alone may import it) and
forks a wrapper per request — the same `run_task`, without a fresh interpreter — or
spawns WRAPPER, `wrapper.c` compiled
(`shoal.executors.native`), which keeps every record of this file's, field for field:
a change to what this wrapper records is a change to `wrapper.c` too, and the executor
tests run on both.

The executor runs this file by path with `-I` (isolated mode) rather than `-m
shoal.executors.wrapper`: the task's environment (PYTHONPATH, PYTHONHOME, a working directory
with its own `shoal/`) must not be able to break or replace the wrapper. For the same reason
it imports only the standard library and psutil, never `shoal`.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

PID_FILE = "pid.json"
STATUS_FILE = "status.json"
LOG_START_FILE = "log-start.json"
"""The sizes of the task's stdout and stderr logs just before the attempt's command starts:
where its output begins in them (an engine that runs a task's attempts on several nodes
reassembles its log from these, `shoal.executors.ray_logs`)."""
#: What a shell reports for a command it cannot find or cannot execute.
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
#: The reason recorded for a command the kernel's OOM killer ended (Kubernetes' word for it).
OOM_KILLED = "OOMKilled"
CGROUP_PROCS = "cgroup.procs"
#: How long the wrapper waits for its cgroups to empty after killing what is left in them.
CGROUP_DRAIN = 5.0


def write_json_atomic(path: Path, payload: dict[str, Any], *, durable: bool = True) -> None:
    """Write temp + fsync + rename: a reader sees the old file or the whole new one, never a
    torn write, even if this process is killed half-way. `durable` False: no fsync, for a
    record a machine's crash may lose (the file is then missing, or empty)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    _write_private(tmp, json.dumps(payload).encode(), durable=durable)
    os.replace(tmp, path)


def _write_private(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Write `path`, created 0600 whatever the umask (records are the server's), fsync'd
    when `durable`. On the descriptor itself: a text file object would also ask whether it
    is a terminal and where it stands, system calls each launch paid for nothing."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def create_json_exclusive(path: Path, payload: dict[str, Any]) -> bool:
    """Create `path` with `payload` iff it does not exist. link() of a complete temp file is
    atomic and fails on an existing target: no torn or doubled record. The executor's launch
    claims use it too."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        _write_private(tmp, json.dumps(payload).encode())
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)


def _own_attempt(path: Path, record: dict[str, Any]) -> bool:
    """Create the pid record if there is none. True when this process owns the attempt: it
    created the record, or the record names it (its executor wrote it first)."""
    if create_json_exclusive(path, record):
        return True
    try:
        owner = json.loads(path.read_text(encoding="utf-8")).get("pid")
    except (OSError, ValueError):
        return False
    return bool(owner == os.getpid())


def _process_start_time() -> float:
    import psutil  # only here: the executor reads the same clock for the same pid

    return float(psutil.Process().create_time())


def _keep_running(signum: int, frame: FrameType | None) -> None:
    """The executor signals the whole process group, so the command gets SIGTERM directly;
    the wrapper only has to survive it to record how the command ended. A Python handler
    (unlike SIG_IGN) is reset to the default by exec, so the command is not affected."""


# ---- cgroups: the primitives the executor shares (the wrapper may import nothing of shoal) --

def cgroup_pids(cgroup: Path) -> list[int]:
    """The processes in a cgroup now (none when it is gone)."""
    try:
        text = (cgroup / CGROUP_PROCS).read_text(encoding="ascii")
    except OSError:
        return []
    return [int(line) for line in text.split()]


def signal_cgroups(cgroups: list[Path], signum: int) -> int:
    """Signal every process in `cgroups`; how many were there. A process that forks while it
    is being signalled lands in the same cgroup: callers loop until the cgroups are empty."""
    count = 0
    for cgroup in cgroups:
        for pid in cgroup_pids(cgroup):
            try:
                os.kill(pid, signum)
                count += 1
            except ProcessLookupError:
                continue
    return count


def oom_killed(cgroup: Path, *, sigkilled: bool) -> bool:
    """Whether the OOM killer killed a process of this cgroup: cgroup v2's memory.events and
    v1's memory.oom_control count it (`oom_kill`). An older v1 kernel only counts the times
    the limit was hit (memory.failcnt): trusted only when the command died of SIGKILL."""
    for name in ("memory.events", "memory.oom_control"):
        try:
            lines = (cgroup / name).read_text(encoding="ascii").splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value) > 0
    if not sigkilled:
        return False
    try:
        return int((cgroup / "memory.failcnt").read_text(encoding="ascii")) > 0
    except (OSError, ValueError):
        return False


def drain_cgroups(cgroups: list[Path], deadline: float) -> bool:
    """SIGKILL everything in `cgroups` until they are empty or `deadline` (monotonic) passes,
    then remove them. True when every one of them is gone."""
    while signal_cgroups(cgroups, signal.SIGKILL) and time.monotonic() < deadline:
        time.sleep(0.01)
    gone = True
    for cgroup in cgroups:
        while True:
            try:
                cgroup.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                # A killed process leaves its cgroup a moment after it dies.
                if time.monotonic() >= deadline:
                    gone = False
                    break
                time.sleep(0.01)
    return gone


# ---- the task's side of the fork --------------------------------------------------------

def _isolate(uid: int | None, gid: int | None, cgroups: list[Path]) -> None:
    """Run in the child between fork and exec (the wrapper is single-threaded, so
    `preexec_fn` is safe here). Joins the cgroups first: it must, as the executor's user,
    and a process that joined before exec takes every descendant with it. subprocess's own
    `user=`/`group=` would switch users *before* `preexec_fn` runs, too early for that."""
    for cgroup in cgroups:
        with open(cgroup / CGROUP_PROCS, "w", encoding="ascii") as procs:
            procs.write("0")  # 0: the writing process
    if gid is not None:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
    if uid is not None:
        os.setresuid(uid, uid, uid)
    os.umask(0o077)


def _parse(argv: list[str]) -> tuple[Path, int | None, int | None, list[Path], list[str]
                                     ] | None:
    if "--" not in argv or argv.index("--") < 1:
        return None
    split = argv.index("--")
    options, command = argv[1:split], argv[split + 1:]
    uid: int | None = None
    gid: int | None = None
    cgroups: list[Path] = []
    if len(options) % 2 or not command:
        return None
    for flag, value in zip(options[::2], options[1::2], strict=True):
        if flag == "--uid":
            uid = int(value)
        elif flag == "--gid":
            gid = int(value)
        elif flag == "--cgroup":
            cgroups.append(Path(value))
        else:
            return None
    return Path(argv[0]), uid, gid, cgroups, command


def main(argv: list[str]) -> int:
    if argv == ["--serve"]:
        return serve()
    if len(argv) == 3 and argv[:2] == ["--serve", "--native"]:
        return serve(argv[2])
    parsed = _parse(argv)
    if parsed is None:
        print("usage: wrapper.py <task-dir> [--uid N --gid N] [--cgroup DIR]… -- <command> "
              "[args…]  |  wrapper.py --serve [--native WRAPPER]", file=sys.stderr)
        return 2
    task_dir, uid, gid, cgroups, command = parsed
    return run_task(task_dir, uid, gid, cgroups, command)


def run_task(task_dir: Path, uid: int | None, gid: int | None, cgroups: list[Path],
             command: list[str], env: dict[str, str] | None = None,
             log_start: tuple[Path, Path] | None = None, cwd: str | None = None) -> int:
    """Own the attempt, run its command, record how it ended; the wrapper's whole job.
    `env`: the command's environment (None: this process's). `log_start`: the task's
    stdout and stderr logs, whose sizes are recorded first (`log-start.json`) unless a
    first claimant recorded them already. `cwd`: the working directory to enter (None:
    this process's); one that cannot be entered is recorded as a command not found."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _keep_running)
    # Started by path, the executor writes the same record after Popen returns; writing it
    # here too closes the window where the control plane dies between starting the process
    # and noting it. Forked by the launcher, this is the record.
    # Created exclusively: of two wrappers started for one attempt (a relaunch after the
    # first claimant seemed never to have started one), only the first runs the command.
    if not _own_attempt(task_dir / PID_FILE,
                        {"pid": os.getpid(), "start_time": _process_start_time()}):
        return 0
    if log_start is not None and not (task_dir / LOG_START_FILE).exists():
        # Not fsync'd: a reader that finds it missing or torn after a machine's crash
        # shows the attempt's log from its start (`ray_logs`), and nothing else reads it.
        write_json_atomic(task_dir / LOG_START_FILE, {"stdout": _size(log_start[0]),
                                                      "stderr": _size(log_start[1])},
                          durable=False)
    outcome: dict[str, Any]
    isolated = uid is not None or gid is not None or bool(cgroups)
    try:
        if cwd is not None:
            os.chdir(cwd)
    except OSError as exc:  # as the executor's Popen would have: nothing runs
        outcome = {"exit_code": EXIT_NOT_FOUND, "signal": None,
                   "error": f"cannot start: {exc}", "finished_at": time.time()}
        write_json_atomic(task_dir / STATUS_FILE, outcome)
        return EXIT_NOT_FOUND
    try:
        # Inherits cwd, stdio and the process group. preexec_fn is safe: the wrapper
        # never starts a thread.
        child = subprocess.Popen(
            command, env=env,
            preexec_fn=(lambda: _isolate(uid, gid, cgroups)) if isolated else None)  # noqa: PLW1509
    except (OSError, subprocess.SubprocessError) as exc:
        code = EXIT_NOT_FOUND if isinstance(exc, FileNotFoundError) else EXIT_NOT_EXECUTABLE
        print(f"shoal: cannot start {command[0]!r}: {exc}", file=sys.stderr)
        outcome = {"exit_code": code, "signal": None, "error": str(exc)}
    else:
        returncode = child.wait()  # PEP 475: retried after our no-op signal handlers
        if returncode < 0:
            outcome = {"exit_code": None, "signal": -returncode}
        else:
            outcome = {"exit_code": returncode, "signal": None}
        # A shell reports its OOM-killed child as 137: any failure counts, not only SIGKILL.
        if returncode != 0 and any(oom_killed(c, sigkilled=returncode == -signal.SIGKILL)
                                   for c in cgroups):
            outcome["reason"] = OOM_KILLED
            outcome["error"] = "killed by the OOM killer: memory above the task's request"
    # The command is over: what it left behind (double forks, setsid daemons) goes with it.
    drain_cgroups(cgroups, time.monotonic() + CGROUP_DRAIN)
    outcome["finished_at"] = time.time()
    write_json_atomic(task_dir / STATUS_FILE, outcome)
    if outcome["signal"] is not None:
        return 128 + int(outcome["signal"])
    return int(outcome["exit_code"])


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


# ---- the launcher: one long-lived wrapper that forks the others ------------------------------

def serve(native: str | None = None) -> int:
    """Serve launch requests, one JSON line each on stdin, until stdin closes: fork a
    wrapper per request (`_forked`), or spawn `native`, the compiled wrapper
    (`shoal.executors.native`), and answer its pid and start time on stdout (or the
    error). Single-threaded, so that fork is safe; children that ended are reaped between
    requests and at least every REAP_INTERVAL seconds (a zombie is never taken for a live
    task meanwhile: the executor skips zombies)."""
    import psutil

    claims = _load_claims()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _keep_running)  # only the end of stdin ends the launcher
    replies = sys.stdout.buffer
    pending = b""
    while True:
        _reap()
        if b"\n" not in pending:
            # Waiting with a timeout, so that wrappers that ended are reaped while no
            # request comes (a zombie holds its pid until then).
            if select.select([STDIN], [], [], REAP_INTERVAL)[0]:
                chunk = os.read(STDIN, 1 << 16)
                if not chunk:
                    return 0
                pending += chunk
            continue
        line, pending = pending.split(b"\n", 1)
        reply: dict[str, Any] | None
        try:
            request = json.loads(line)
            reply = None if "claim" not in request else _claimed(claims, request)
            if reply is None:
                pid = _forked(request) if native is None else _spawned(request, native)
                reply = {"pid": pid, "start_time": psutil.Process(pid).create_time()}
        except Exception as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        replies.write(json.dumps(reply).encode() + b"\n")
        replies.flush()


STDIN = 0
LAUNCH_FILE = "launch.json"
"""An attempt's claim: whoever creates it (exclusively) starts the attempt."""


def _load_claims() -> ModuleType:
    """`claims.py`, beside this file, loaded by its path: run by path with `-I`, the
    launcher has no `shoal` to import it from (nor wants one a task could plant)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("shoal_launch_claims",
                                                  Path(__file__).with_name("claims.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _claimed(claims: ModuleType, request: dict[str, Any]) -> dict[str, Any] | None:
    """Claim an attempt the executor sent whole (`shoal.executors.local_launch`): its
    directories, its exclusive claim record, its user's working directory, its cgroups —
    what the executor did on its own thread before. None: claimed and ready, start its
    wrapper. Otherwise the reply: `refused` (nothing claimed: the executor raises it),
    `claimed` (claimed before, by an earlier launcher or executor: the executor adopts it,
    or claims it again, as it does any attempt found claimed), `not_started` (claimed, and
    it cannot start: its status record says why, as the executor's own would)."""
    claim = request["claim"]
    task_dir = request["task_dir"]
    try:
        claims.private_dirs(claim["root"], task_dir)
        claims.private_dirs(claim["root"], os.path.dirname(request["stdout"]))
    except OSError as exc:
        return {"refused": str(exc)}
    if not create_json_exclusive(Path(task_dir, LAUNCH_FILE), claim["record"]):
        return {"claimed": True}
    try:
        work = claim["work"]
        if work is not None:
            claims.owned_dirs(work[0], request["uid"], request["gid"], work[1])
        claims.check_dir(claim["check_dir"])
        if claim["cgroups"] is not None:
            claims.make_cgroups(request["cgroups"], **claim["cgroups"])
    except (OSError, claims.WorkDirError) as exc:
        error = f"cannot start: {exc}"
        write_json_atomic(Path(task_dir, STATUS_FILE), {
            "exit_code": EXIT_NOT_FOUND, "signal": None, "error": error,
            "finished_at": time.time()})
        return {"not_started": error}
    return None
#: How often (s) an idle launcher reaps the wrappers it forked that have ended.
REAP_INTERVAL = 1.0


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _forked(request: dict[str, Any]) -> int:
    """Fork the wrapper of one task; its pid. The child never returns."""
    pid = os.fork()
    if pid:
        return pid
    code = EXIT_NOT_EXECUTABLE
    try:
        code = _as_task(request)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def _spawned(request: dict[str, Any], native: str) -> int:
    """Spawn the compiled wrapper of one task (no copy of this interpreter: vfork and
    exec) in a session of its own; its pid. Its arguments say what `_as_task` reads from
    the request; its own environment is empty (`wrapper.c`)."""
    def unset(value: object) -> str:
        return "" if value is None else str(value)

    cgroups = [str(c) for c in request.get("cgroups", [])]
    env = [f"{k}={v}" for k, v in request["env"].items()]
    argv = [native, str(request["task_dir"]), str(request["stdout"]), str(request["stderr"]),
            unset(request.get("cwd")), unset(request.get("uid")), unset(request.get("gid")),
            str(len(cgroups)), *cgroups, str(len(env)), *env, "--",
            *(str(a) for a in request["command"])]
    try:
        return os.posix_spawn(native, argv, {}, setsid=True)
    except (OSError, NotImplementedError):
        # It did not start (its file removed from under us, setsid not supported): the
        # Python wrapper, which keeps the same guarantees, runs the task instead.
        return _forked(request)


def _as_task(request: dict[str, Any]) -> int:
    """In the forked child: become the task's wrapper, as `main` would have been started
    by the executor — its own session, stdin from /dev/null, stdout and stderr appended to
    the task's logs (opened here, as the executor's user: the task gets descriptors, never
    the paths), the task's working directory — then `run_task`."""
    os.setsid()
    out, err = Path(request["stdout"]), Path(request["stderr"])
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                            (1, str(out), os.O_WRONLY | os.O_APPEND | os.O_CREAT),
                            (2, str(err), os.O_WRONLY | os.O_APPEND | os.O_CREAT)):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    uid, gid, cwd = request.get("uid"), request.get("gid"), request.get("cwd")
    return run_task(Path(request["task_dir"]), None if uid is None else int(uid),
                    None if gid is None else int(gid),
                    [Path(c) for c in request.get("cgroups", [])],
                    [str(a) for a in request["command"]],
                    {str(k): str(v) for k, v in request["env"].items()}, (out, err),
                    None if cwd is None else str(cwd))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
