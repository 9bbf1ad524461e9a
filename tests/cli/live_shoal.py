"""The CLI tests' live server: one real `shoal up` subprocess per test module that asks for
the `server` fixture (tests/cli/conftest.py; the pattern of tests/e2e/test_shoal_up.py), with
a node of 2 GPUs and a virtual cluster `team-a`, and the `shoal` app run against it through
typer's CliRunner."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from shoal_documents import node_yaml, virtual_cluster_yaml
from shoal_up_process import shoal_up
from typer.testing import CliRunner, Result

from shoal.cli.main import app

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
    with shoal_up(home) as up:
        yield Server(home, up.url, up.token)
