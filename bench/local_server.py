"""A `shoal up` subprocess for the benchmarks: a temporary data directory, a free port, and a
client holding the admin token. Started as `python -m shoal` so that it also runs where the
`shoal` entry point is not installed (the GPU machine, with wheels on PYTHONPATH).

As root, `shoal up` runs tasks as their own OS users, in `WORKDIR/work` (WORKDIR is made
traversable for them); not as root, it would refuse tasks, so a benchmark, whose commands are
its own, passes `--insecure-same-user` then."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from shoal.client import wait_until_healthy
from shoal.executors.local import free_port

#: The one node of the API benchmarks' `--cluster` file: CPU and memory, no GPU.
CLUSTER = """\
apiVersion: shoal/v1
kind: Node
metadata: {name: local}
spec:
  capacity: {cpu: 8, memory: 16Gi}
"""


@contextmanager
def local_server(workdir: Path, *args: str, timeout: float = 60.0) -> Iterator[httpx.Client]:
    """Run `shoal up --data-dir WORKDIR/data ARGS…` until the block ends; yields an admin
    client. The server's stderr goes to WORKDIR/server.log."""
    data = workdir / "data"
    port = free_port()
    workdir.chmod(0o711)  # the tasks' users reach their directories under WORKDIR/work
    if os.geteuid() != 0 and "--insecure-same-user" not in args:
        args = (*args, "--insecure-same-user")
    log = (workdir / "server.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "shoal", "up", "--data-dir", str(data), "--port", str(port),
         "--work-dir", str(workdir / "work"), *args], stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_until_healthy(url, timeout, lambda: process.poll() is None):
            raise SystemExit(f"shoal up did not answer within {timeout} s (exit code "
                             f"{process.poll()}); see {workdir / 'server.log'}")
        token = (data / "admin.token").read_text().strip()
        with httpx.Client(base_url=url, timeout=30,
                          headers={"Authorization": f"Bearer {token}"}) as client:
            yield client
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()

