"""The CLI tests' live server: one real `shoal up` subprocess per test module that asks for
the `server` fixture (tests/cli/conftest.py; the pattern of tests/e2e/test_shoal_up.py), with
a node of 2 GPUs and a virtual cluster `team-a`, and the `shoal` app run against it through
typer's CliRunner."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from shoal_documents import node_yaml, virtual_cluster_yaml
from task_users import Scratch
from typer.testing import CliRunner, Result

from shoal.cli.main import app
from shoal.client import wait_until_healthy
from shoal.executors.local import free_port

CLUSTER = node_yaml() + "---\n" + virtual_cluster_yaml("team-a", "{min: {gpu: 1}}")

runner = CliRunner()


@dataclass(frozen=True)
class Server:
    home: Path
    """Where `shoal up` ran with its default data directory: `home/.shoal/admin.token`."""
    url: str
    token: str

    def shoal(self, *args: str, token: str | None = None) -> Result:
        return runner.invoke(app, [*args, "--server", self.url, "--token", token or self.token])


def start_server(home: Path) -> Iterator[Server]:
    """Run `shoal up` in `home` until the generator is closed."""
    (home / "cluster.yaml").write_text(CLUSTER)
    port, log = free_port(), home / "server.log"
    scratch = Scratch()  # as root, tasks run as their own OS user: their --work-dir
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "shoal"), "up", "--port", str(port),
         "--cluster", "cluster.yaml", "--interval", "0.2", "--grace-period", "1",
         "--work-dir", str(scratch.work)],
        cwd=home, stdout=subprocess.DEVNULL, stderr=open(log, "ab"))  # noqa: SIM115
    url = f"http://127.0.0.1:{port}"
    try:
        # A generous safety net: a loaded machine takes long to start a server.
        if not wait_until_healthy(url, 120, lambda: process.poll() is None):
            process.kill()
            raise AssertionError(f"shoal up did not answer /healthz: {log.read_text()}")
        yield Server(home, url, (home / ".shoal" / "admin.token").read_text().strip())
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        scratch.close()
