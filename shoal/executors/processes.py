"""This machine's processes, known by pid *and* start time, and the private files the local
executor keeps of an attempt: the helpers of `shoal.executors.local` (and of the engines
built on it) that hold no executor state.

A pid alone is never a process's identity: after a restart it may belong to another
process, so a process is the pair (pid, start time), compared with a tolerance because the
start time makes a JSON round trip (`same_process`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from shoal.executors import claims
from shoal.executors.task import TaskPhase, TaskStatus

#: psutil derives start times from boot time + clock ticks: equal for one process, but
#: compared with a tolerance so that a JSON round trip never breaks the match.
START_TIME_TOLERANCE = 0.05


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free right now, for MASTER_PORT. Another process may take it before
    the task binds it; torch.distributed then fails fast and the task is retried."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from `path`; None if it is missing or not (yet) a whole object.

    Read as bytes through the descriptor and decoded as UTF-8 here: a text file object
    (its buffer, its decoder) cost more than the read itself, and the control loop reads
    the status of every task that ends. The same answers as reading it as UTF-8 text (a
    byte-order mark is no JSON either way; bytes that are no UTF-8 still raise)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        data = json.loads(b"".join(chunks).decode("utf-8"))
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def read_status(status_path: Path) -> TaskStatus | None:
    """The recorded outcome of an attempt, or None while none is recorded."""
    data = read_json(status_path)
    if data is None:
        return None
    return TaskStatus(TaskPhase.EXITED, exit_code=data.get("exit_code"),
                      signal=data.get("signal"), detail=str(data.get("error", "")),
                      reason=str(data.get("reason", "")),
                      ended_at=_finished_at(data.get("finished_at")))


def _finished_at(value: object) -> float | None:
    """The record's `finished_at` (both wrappers write their clock's time when the command
    ended), or None when it is missing or not a finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def replace_file(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `path` whole, atomically (a reader sees the old or the new content): a temporary
    file of a name no other writer uses, then a rename. 0644 by default: a job file's
    directory is its gate (`LocalExecutor.job_file`)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                             mode)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        temporary.chmod(mode)  # the umask may have narrowed it
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def private_dirs(root: Path, path: Path) -> None:
    """`path` and its parents up to `root` made if missing, 0700 (root itself included)."""
    claims.private_dirs(os.fspath(root), os.fspath(path))


@contextlib.contextmanager
def append_log(path: Path) -> Iterator[int]:
    """A log opened for appending, created 0600."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def check_launchable(command: Sequence[str], env: Mapping[str, str], cwd: str | None) -> None:
    """Refuse what `subprocess.Popen` would refuse, before anything is forked: a launch
    that can never work raises ValueError (the caller's to judge); a working directory that
    does not exist is a failed start (OSError, recorded as exit code 127)."""
    if any("\0" in arg for arg in command) or (cwd is not None and "\0" in cwd):
        raise ValueError("embedded null byte in the command or its working directory")
    for name, value in env.items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ValueError(f"illegal environment variable name or value: {name!r}")
    if cwd and not os.path.isdir(cwd):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), cwd)


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def alive(pid: int) -> bool:
    """Whether `pid` is a process that is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def start_time_of(pid: int) -> float:
    """When `pid` started (0.0 when it is gone)."""
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return 0.0


def same_process(pid: int, start_time: float) -> bool:
    """True when `pid` is alive, not a zombie, and started at `start_time`."""
    if pid <= 1:
        return False
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - start_time) > START_TIME_TOLERANCE:
            return False  # the pid was reused by another process
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
