"""The one torch the end-to-end tests' tasks use: a virtual environment with the CPU build of
torch 2.13.0 under `.cache/`, made once (pip installs it: this machine's pip configuration
decides where from) and reused by every later run.

It is made from `task_users.task_python()`, an interpreter that a task running as another OS
user can start, and left readable by every user: the same environment serves tasks that run
as their own OS user (the Ray gloo gang) and tasks that run as the server's (the elastic
torchrun job). One environment, not one per test: installing torch is tens of seconds on a
loaded 2-core machine, a fresh clone's CI pays it once."""

from __future__ import annotations

import fcntl
import functools
import os
import subprocess
from pathlib import Path

from task_users import task_python

ROOT = Path(__file__).resolve().parents[1]
TORCH_ENV = ROOT / ".cache" / "torch-2.13.0-task"


@functools.cache
def torch_python() -> Path:
    """The environment's interpreter, the environment made if missing or broken. Under a
    lock: another test process may be making it too (two at once break it). Checked once
    per test session (the check imports torch, seconds on a loaded machine)."""
    python = TORCH_ENV / "bin" / "python"
    TORCH_ENV.parent.mkdir(parents=True, exist_ok=True)
    with open(TORCH_ENV.parent / f"{TORCH_ENV.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        check = [str(python), "-c", "import torch.distributed.run"]
        if not python.exists() or subprocess.run(check, check=False,
                                                 capture_output=True).returncode:
            readable = os.umask(0o022)  # the task users run it: whatever the run's umask is
            try:
                subprocess.run([task_python(), "-m", "venv", "--clear", str(TORCH_ENV)],
                               check=True)
                subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                                "torch==2.13.0"], check=True)
            finally:
                os.umask(readable)
            subprocess.run(check, check=True)
    return python


def torch_bin() -> Path:
    """The environment's `bin` (its `torchrun` among it), to lead a PATH."""
    return torch_python().parent
