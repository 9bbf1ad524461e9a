"""A `shoal up` subprocess for the benchmarks: a temporary data directory, a free port, and a
client holding the admin token. Started as `python -m shoal` so that it also runs where the
`shoal` entry point is not installed (the GPU machine, with wheels on PYTHONPATH)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from shoal.executors.local import free_port


@contextmanager
def local_server(workdir: Path, *args: str, timeout: float = 60.0) -> Iterator[httpx.Client]:
    """Run `shoal up --data-dir WORKDIR/data ARGS…` until the block ends; yields an admin
    client. The server's stderr goes to WORKDIR/server.log."""
    data = workdir / "data"
    port = free_port()
    log = (workdir / "server.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "shoal", "up", "--data-dir", str(data), "--port", str(port),
         *args], stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process, timeout, workdir / "server.log")
        token = (data / "admin.token").read_text().strip()
        with httpx.Client(base_url=url, timeout=30,
                          headers={"Authorization": f"Bearer {token}"}) as client:
            yield client
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _wait_healthy(url: str, process: subprocess.Popen[bytes], timeout: float,
                  log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"shoal up exited with {process.returncode}; see {log}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit(f"shoal up did not answer within {timeout} s; see {log}")
