"""One real `shoal up` process for the tests that need a live server (`Up`: started on a
port, waited for until healthy, stopped or `kill -9`ed; `shoal_up`: one for the length of a
`with`), and `until`, the poll those tests wait with: a condition decides, the deadline is
only a safety net."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from task_users import Scratch

from shoal.client import ShoalApiError, ShoalClient, wait_until_healthy
from shoal.executors.local import free_port

T = TypeVar("T")
DEADLINE_S = 90.0
"""A safety net only: every wait ends as soon as its condition holds."""


def until(what: str, check: Callable[[], T | None], deadline: float = DEADLINE_S) -> T:
    end = time.monotonic() + deadline
    last: object = None
    while time.monotonic() < end:
        try:
            value = check()
        except (ShoalApiError, OSError) as exc:  # a server restarting
            value, last = None, exc
        if value is not None and value is not False:
            return value
        time.sleep(0.1)  # a poll interval, not a guessed duration: the condition decides
    raise AssertionError(f"timed out waiting for {what} (last: {last})")


@dataclass
class Up:
    """One `shoal up` process."""

    home: Path
    args: list[str]
    scratch: Scratch
    process: subprocess.Popen[bytes] | None = None
    url: str = ""
    env: dict[str, str] = field(default_factory=dict)
    """Added to the server's environment (a member's `tokenEnv`)."""
    port: int = 0
    """The port to listen on; 0: a free one, chosen at each start."""

    def start(self) -> None:
        port = self.port or free_port()
        log = open(self.home / "server.log", "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            [str(Path(sys.executable).parent / "shoal"), "up", "--port", str(port),
             "--cluster", "cluster.yaml", "--interval", "0.2", "--grace-period", "1",
             "--work-dir", str(self.scratch.work), *self.args],
            cwd=self.home, stdout=subprocess.DEVNULL, stderr=log,
            env={**os.environ, **self.env})
        self.url = f"http://127.0.0.1:{port}"
        process = self.process
        if not wait_until_healthy(self.url, 120, lambda: process.poll() is None):
            process.kill()
            raise AssertionError(f"shoal up did not start: {self.log()[-3000:]}")

    def log(self) -> str:
        return (self.home / "server.log").read_text(errors="replace")

    @property
    def token_file(self) -> Path:
        return self.home / ".shoal" / "admin.token"

    @property
    def token(self) -> str:
        """The server's admin token."""
        return self.token_file.read_text().strip()

    def client(self) -> ShoalClient:
        return ShoalClient(self.url, self.token_file.read_text().strip(), timeout=30)

    def kill9(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()


@contextmanager
def shoal_up(home: Path, *args: str, port: int = 0) -> Iterator[Up]:
    """A `shoal up` started in `home` (which holds its `cluster.yaml`) with `args`, its tasks
    run as their own OS users under a scratch work directory, stopped at the end."""
    scratch = Scratch()  # as root, tasks run as their own OS user: their --work-dir
    up = Up(home, list(args), scratch, port=port)
    try:
        up.start()
        yield up
    finally:
        up.stop()
        scratch.close()
