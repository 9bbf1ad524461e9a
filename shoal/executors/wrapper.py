"""The tiny process that sits between the local executor and a task's command.

It owns one thing: making a task's outcome durable. It records its own pid and start time
(creating the record exclusively: a second wrapper for the same attempt exits without
running the command), runs the command as its child, waits, and writes the exit code (or the
terminating signal) atomically to `<task-dir>/status.json`. Because the record is a file
and not a `wait()` in the control plane, a task that ends while the control plane is down
still has a known exit status when the control plane comes back (issue item 4,
reconciliation).

Usage: `python -I wrapper.py <task-dir> -- <command> [args…]`

The executor runs this file by path with `-I` (isolated mode) rather than `-m
shoal.executors.wrapper`: the task's environment (PYTHONPATH, PYTHONHOME, a working directory
with its own `shoal/`) must not be able to break or replace the wrapper. For the same reason
it imports only the standard library and psutil, never `shoal`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

PID_FILE = "pid.json"
STATUS_FILE = "status.json"
#: What a shell reports for a command it cannot find or cannot execute.
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Write temp + fsync + rename: a reader sees the old file or the whole new one, never a
    torn write, even if this process is killed half-way."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(payload, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def create_json_exclusive(path: Path, payload: dict[str, Any]) -> bool:
    """Create `path` with `payload` iff it does not exist. link() of a complete temp file is
    atomic and fails on an existing target: no torn or doubled record. The executor's launch
    claims use it too."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    tmp.write_text(json.dumps(payload), encoding="utf-8")
    try:
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


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: wrapper.py <task-dir> -- <command> [args…]", file=sys.stderr)
        return 2
    task_dir = Path(argv[0])
    command = argv[2:]
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _keep_running)
    # The executor writes the same record after Popen returns; writing it here too closes
    # the window where the control plane dies between starting the process and noting it.
    # Created exclusively: of two wrappers started for one attempt (a relaunch after the
    # first claimant seemed never to have started one), only the first runs the command.
    if not _own_attempt(task_dir / PID_FILE,
                        {"pid": os.getpid(), "start_time": _process_start_time()}):
        return 0
    outcome: dict[str, Any]
    try:
        child = subprocess.Popen(command)  # inherits env, cwd, stdio and the process group
    except OSError as exc:
        code = EXIT_NOT_FOUND if isinstance(exc, FileNotFoundError) else EXIT_NOT_EXECUTABLE
        print(f"shoal: cannot start {command[0]!r}: {exc}", file=sys.stderr)
        outcome = {"exit_code": code, "signal": None, "error": str(exc)}
    else:
        returncode = child.wait()  # PEP 475: retried after our no-op signal handlers
        if returncode < 0:
            outcome = {"exit_code": None, "signal": -returncode}
        else:
            outcome = {"exit_code": returncode, "signal": None}
    outcome["finished_at"] = time.time()
    write_json_atomic(task_dir / STATUS_FILE, outcome)
    if outcome["signal"] is not None:
        return 128 + int(outcome["signal"])
    return int(outcome["exit_code"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
