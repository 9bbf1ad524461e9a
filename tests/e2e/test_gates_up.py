"""Dependencies, holds and requeues end to end: a real `shoal up` on the local executor,
driven by the client and the `shoal hold|release|requeue` commands.

Tasks write into the scratch directory every task user can reach: a dependency writes its
file, its dependent checks it is there (it ran after) and writes its own; a requeued job
counts its runs in a file; a go-file keeps a job running until the test allows it to end.
One server runs through a `kill -9` while a job waits on its dependency: the restarted one
still runs it, after the dependency succeeded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import shoal_documents
from shoal_documents import node_yaml
from shoal_up_process import Up, shoal_up, until
from task_users import task_python
from typer.testing import CliRunner

from shoal.api import JobState
from shoal.cli.main import app
from shoal.client import ShoalClient

runner = CliRunner()


def job(name: str, code: str, extra: str = "") -> str:
    return shoal_documents.job_yaml(name, queue=None, replicas=1, gpu=0, cpu="1",
                                    memory="256Mi", extra_spec=extra,
                                    command=f"[{task_python()!r}, -c, {code!r}]")


def writes(path: Path, then: str = "") -> str:
    """Code that appends a line to `path`, then runs `then` (with `p`, `time` in scope)."""
    return (f"import pathlib, sys, time\np = pathlib.Path({str(path)!r})\n"
            f"p.write_text((p.read_text() if p.exists() else '') + 'ran\\n')\n{then}")


def waits_for(go: Path) -> str:
    return f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.05)"


def after(first: Path, mine: Path) -> str:
    """Code that exits 3 unless `first` exists, then writes `mine`."""
    return (f"import pathlib, sys\nif not pathlib.Path({str(first)!r}).exists(): sys.exit(3)\n"
            f"pathlib.Path({str(mine)!r}).write_text('after')\n")


def state(client: ShoalClient, name: str) -> JobState:
    return client.get_job(name).state


def ended(client: ShoalClient, name: str) -> JobState | None:
    current = state(client, name)
    return current if current.terminal else None


def shoal(up: Up, *args: str) -> str:
    result = runner.invoke(app, [*args, "--server", up.url, "--token", up.token])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def up(tmp_path: Path) -> Iterator[Up]:
    (tmp_path / "cluster.yaml").write_text(node_yaml())
    with shoal_up(tmp_path) as server:
        yield server


def test_dependencies_order_jobs_and_a_failure_cancels_its_dependents(up: Up) -> None:
    shared, client = up.scratch.shared, up.client()
    go, first, second = shared / "go", shared / "a.out", shared / "b.out"
    client.submit(job("a", writes(first, waits_for(go))))
    client.submit(job("b", after(first, second), "\n  dependsOn: [a]"))
    until("a to run", first.exists)
    waiting = client.get_job("b")
    assert waiting.state is JobState.PENDING and waiting.pending_reason is not None
    assert (waiting.pending_reason.kind, waiting.pending_reason.message) == (
        "Dependency", "waiting for job 'a' to succeed")
    assert "Depends on" in shoal(up, "get", "b")
    go.touch()
    assert until("b to end", lambda: ended(client, "b")) is JobState.SUCCEEDED
    assert second.read_text() == "after"
    assert state(client, "a") is JobState.SUCCEEDED
    # A dependency that fails cancels its dependent, and the dependent's dependent.
    client.submit(job("f", "import sys; sys.exit(5)"))
    client.submit(job("g", writes(shared / "never"), "\n  dependsOn: [f]"))
    client.submit(job("h", writes(shared / "never"), "\n  dependsOn: [g]"))
    assert until("h to end", lambda: ended(client, "h")) is JobState.CANCELLED
    assert state(client, "g") is JobState.CANCELLED
    assert "dependency 'f' ended Failed" in [e.cause for e in client.events("g")]
    assert not (shared / "never").exists()


def test_hold_release_and_requeue_through_the_cli(up: Up) -> None:
    shared, client = up.scratch.shared, up.client()
    held = shared / "held.out"
    client.submit(job("later", writes(held), "\n  hold: true"))
    client.submit(job("marker", "pass"))
    until("a later job to end", lambda: ended(client, "marker"))
    view = client.get_job("later")
    assert view.state is JobState.PENDING and not held.exists()
    assert view.pending_reason is not None and view.pending_reason.kind == "Held"
    assert "job later is released" in shoal(up, "release", "later")
    assert until("later to end", lambda: ended(client, "later")) is JobState.SUCCEEDED
    # A running job is requeued: stopped, then run again from scratch (a second run).
    runs, go = shared / "runs", shared / "go-r"
    client.submit(job("r", writes(runs, f"if len(p.read_text().splitlines()) == 1:\n"
                                        f"    {waits_for(go)}")))
    until("r to run", runs.exists)
    refused = runner.invoke(app, ["hold", "r", "--server", up.url, "--token", up.token])
    assert refused.exit_code == 2 and "only a pending job can be held" in refused.output
    assert "job r is requeued" in shoal(up, "requeue", "r")
    assert until("r to end", lambda: ended(client, "r")) is JobState.SUCCEEDED
    assert runs.read_text().splitlines() == ["ran", "ran"]
    assert client.get_job("r").raw["status"]["retries"] == 0
    kinds = [e.kind for e in client.events("r")]
    assert "JobRequeued" in kinds


def test_a_dependent_still_runs_after_a_kill_9_of_the_server(up: Up) -> None:
    shared, client = up.scratch.shared, up.client()
    go, first, second = shared / "go", shared / "a.out", shared / "b.out"
    client.submit(job("a", writes(first, waits_for(go))))
    client.submit(job("b", after(first, second), "\n  dependsOn: [a]"))
    client.submit(job("c", "pass", "\n  hold: true"))
    until("a to run", first.exists)
    up.kill9()
    up.start()
    client = up.client()
    until("the restarted server to gate b",
          lambda: (client.get_job("b").pending_reason or None) is not None)
    assert client.get_job("b").pending_reason.kind == "Dependency"  # type: ignore[union-attr]
    go.touch()
    assert until("b to end", lambda: ended(client, "b")) is JobState.SUCCEEDED
    assert second.read_text() == "after" and first.read_text() == "ran\n"
    held = client.get_job("c")
    assert held.state is JobState.PENDING and held.held
