"""`shoal mc cluster add|set|remove` against a real `shoal up` started WITHOUT `--clusters`
(issue 19): the super scheduler runs anyway, an admin declares its one member — itself,
its token read from a tokenFile on the admin's side and stored sealed — and a job is
dispatched to it at the next pass, no restart. Each verb runs as the console script runs
it, in a fresh interpreter that reports the modules it loaded: none of the server, store,
spec or federation. A non-admin is refused; a member in use is not removed; the token is in
no output, not in the server's log and not in its database file."""

from __future__ import annotations

import json
import subprocess
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import light_runs
import pytest
from shoal_documents import multicluster_job_yaml, node_yaml
from shoal_up_process import Up, shoal_up

from shoal.client import ShoalClient

HEAVY = (*light_runs.HEAVY, "cryptography", "shoal.federation")
DEADLINE_S = 90.0


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    home = tmp_path_factory.mktemp("mcadmin")
    (home / "cluster.yaml").write_text(node_yaml())
    with shoal_up(home, "--mc-poll", "0.2") as live:
        yield live


def shoal(up: Up, tmp_path: Path, *args: str, token: str | None = None,
          ok: bool = True) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    return light_runs.run_shoal(tmp_path, *args, server=up.url, token=token or up.token, ok=ok)


def heavy_in(modules: list[str]) -> list[str]:
    return light_runs.heavy_in(modules, HEAVY)


def test_declare_use_change_and_remove_a_member(up: Up, tmp_path: Path) -> None:
    # The member is the server itself, reached with its admin token: the tokenFile is read
    # by the CLI, here, and only the token travels (sealed on the server).
    member = tmp_path / "self.yaml"
    member.write_text(textwrap.dedent(f"""\
        apiVersion: shoal/v1
        kind: Cluster
        metadata: {{name: self}}
        spec: {{uri: '{up.url}', kind: shoal, priority: 50, gpuType: fake,
                credentials: {{tokenFile: {up.home / '.shoal' / 'admin.token'}}}}}
        """))
    with ShoalClient(up.url, up.token) as client:
        alice = client.create_user("alice", queues=["default"]).token
    assert alice is not None
    outputs: list[str] = []

    denied, modules = shoal(up, tmp_path, "mc", "cluster", "add", str(member), token=alice,
                            ok=False)
    assert "not an admin" in denied.stderr and heavy_in(modules) == []
    added, modules = shoal(up, tmp_path, "mc", "cluster", "add", str(member))
    outputs += [added.stdout, added.stderr, denied.stdout, denied.stderr]
    assert "cluster self added" in added.stdout and heavy_in(modules) == []
    listed, modules = shoal(up, tmp_path, "mc", "clusters")
    outputs.append(listed.stdout)
    assert "self" in listed.stdout and "api" in listed.stdout and heavy_in(modules) == []

    job = tmp_path / "echo.yaml"
    job.write_text(multicluster_job_yaml("echo", {"self": up.url},
                                         command="[sh, -c, 'sleep 600']"))

    shoal(up, tmp_path, "mc", "submit", str(job))
    end = time.monotonic() + DEADLINE_S
    while True:  # polled until kept; the deadline is a safety net
        data = json.loads(shoal(up, tmp_path, "mc", "get", "echo", "-o", "json")[0].stdout)
        if data["kept"] == "self" or time.monotonic() > end:
            break
    assert data["kept"] == "self" and data["copies"][0]["remoteId"] == "echo-self"

    changed, modules = shoal(up, tmp_path, "mc", "cluster", "set", "self", "--priority", "70",
                             "--no-gpu-type", "-o", "json")
    assert json.loads(changed.stdout)["priority"] == 70 and heavy_in(modules) == []
    assert json.loads(changed.stdout)["gpuType"] is None
    nothing, _ = shoal(up, tmp_path, "mc", "cluster", "set", "self", ok=False)
    assert "nothing to change" in nothing.stderr

    refused, modules = shoal(up, tmp_path, "mc", "cluster", "remove", "self", ok=False)
    assert "'echo'" in refused.stderr and heavy_in(modules) == []
    shoal(up, tmp_path, "mc", "stop", "echo")
    while True:
        data = json.loads(shoal(up, tmp_path, "mc", "get", "echo", "-o", "json")[0].stdout)
        if data["ended"] is not None or time.monotonic() > end:
            break
    assert data["state"] == "STOPPED"
    removed, modules = shoal(up, tmp_path, "mc", "cluster", "remove", "self")
    assert "cluster self removed" in removed.stdout and heavy_in(modules) == []
    listed, _ = shoal(up, tmp_path, "mc", "clusters", "-o", "json")
    assert json.loads(listed.stdout) == []

    secret = up.token
    for text in [*outputs, changed.stdout, refused.stderr, listed.stdout]:
        assert secret not in text
    server_log = up.log()
    assert "audit: admin 'admin' added cluster 'self'" in server_log, server_log[-2000:]
    assert "removed cluster 'self'" in server_log
    assert secret not in server_log.replace(f"{up.home / '.shoal' / 'admin.token'}", "")
    raw = b"".join(p.read_bytes() for p in (up.home / ".shoal").glob("shoal.db*"))
    assert b"mc_clusters" in raw and secret.encode() not in raw
