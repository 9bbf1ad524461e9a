"""`shoal mc clusters|submit|get|jobs|stop|logs` against a real `shoal up --clusters` whose
one member is itself (issue 19), each verb run as the console script runs it, in a fresh
interpreter that reports the modules it loaded: the client verbs load no server, store,
spec or scheduler module. `shoal mc get` shows the kept copy and why; `-o json` is the
server's data."""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import light_runs
import pytest
from shoal_documents import multicluster_job_yaml, node_yaml
from shoal_up_process import Up, shoal_up

from shoal.executors.local import free_port

HEAVY = (*light_runs.HEAVY, "cryptography", "shoal.federation")
DEADLINE_S = 90.0


@pytest.fixture(scope="module")
def sup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    home = tmp_path_factory.mktemp("super")
    (home / "cluster.yaml").write_text(node_yaml())
    port = free_port()
    # Its one member is itself, reached with its own admin token (read when first used).
    (home / "clusters.yaml").write_text(textwrap.dedent(f"""\
        apiVersion: shoal/v1
        kind: Cluster
        metadata: {{name: self}}
        spec: {{uri: 'http://127.0.0.1:{port}', kind: shoal, priority: 50, gpuType: fake,
                credentials: {{tokenFile: .shoal/admin.token}}}}
        """))
    with shoal_up(home, "--clusters", "clusters.yaml", "--mc-poll", "0.2", port=port) as up:
        yield up


def shoal(sup: Up, tmp_path: Path, *args: str) -> tuple[str, list[str]]:
    done, modules = light_runs.run_shoal(tmp_path, *args, server=sup.url, token=sup.token)
    return done.stdout, modules


def heavy_in(modules: list[str]) -> list[str]:
    return light_runs.heavy_in(modules, HEAVY)


def test_the_mc_verbs_run_light_and_show_why(sup: Up, tmp_path: Path) -> None:
    job = tmp_path / "echo.yaml"
    job.write_text(multicluster_job_yaml(
        "echo", {"self": sup.url}, command="[sh, -c, 'echo said; sleep 600']"))

    out, modules = shoal(sup, tmp_path, "mc", "submit", str(job))
    assert out.strip() == "echo" and heavy_in(modules) == []
    out, modules = shoal(sup, tmp_path, "mc", "clusters")
    assert "self" in out and "fake" in out and heavy_in(modules) == []
    end = time.monotonic() + DEADLINE_S
    while True:  # polled until the copy is kept; the deadline is a safety net
        out, modules = shoal(sup, tmp_path, "mc", "get", "echo", "-o", "json")
        data = json.loads(out)
        if data["kept"] == "self" or time.monotonic() > end:
            break
    assert data["kept"] == "self" and data["copies"][0]["remoteId"] == "echo-self"
    assert heavy_in(modules) == []
    table, modules = shoal(sup, tmp_path, "mc", "get", "echo")
    assert "kept" in table and "echo-self" in table and "RUNNING" in table
    assert heavy_in(modules) == []
    while True:
        logs, modules = shoal(sup, tmp_path, "mc", "logs", "echo")
        if "said" in logs or time.monotonic() > end:
            break
    assert logs == "said\n" and heavy_in(modules) == []
    listed, _ = shoal(sup, tmp_path, "mc", "jobs")
    assert "echo" in listed
    stopped, _ = shoal(sup, tmp_path, "mc", "stop", "echo")
    assert "stop requested" in stopped
    while True:
        data = json.loads(shoal(sup, tmp_path, "mc", "get", "echo", "-o", "json")[0])
        if data["ended"] is not None or time.monotonic() > end:
            break
    assert data["state"] == "STOPPED" and data["copies"][0]["state"] == "STOPPED"
