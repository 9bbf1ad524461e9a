"""Watching jobs through one real `shoal up` (issue 21): `GET /api/v1/jobs?watch=true`
streams an ADDED per job that exists, then each change — a submitted job ADDED and MODIFIED
until it Succeeded, a deleted one DELETED — with the list's filters; each user holds a
bounded number of watches (429 beyond, a JSON error), a watch needs a token (401), and
`shoal jobs --watch` in a pipe prints one line per change. Last, the server shuts down
promptly with a watch open, which it ends.

Every wait is on a condition (an event seen, a line printed); the deadlines are safety nets.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from shoal_documents import node_yaml, virtual_cluster_yaml
from shoal_up_process import DEADLINE_S, Up, shoal_up, until

from shoal.client import JobEvent, JobEvents, ShoalApiError, ShoalClient

STREAMS_PER_USER = 3
SHOAL = str(Path(sys.executable).parent / "shoal")


def quick_job(name: str, queue: str = "default") -> str:
    return f"""\
apiVersion: shoal/v1
kind: Job
metadata: {{name: {name}}}
spec:
  queue: {queue}
  taskGroups:
    - name: main
      replicas: 1
      resources: {{cpu: 100m, memory: 64Mi}}
      command: ["true"]
"""


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    home = tmp_path_factory.mktemp("watch")
    (home / "cluster.yaml").write_text(
        node_yaml() + "---\n" + virtual_cluster_yaml("team-a", "{min: {cpu: 1}}"))
    with shoal_up(home, "--max-follows-per-user", str(STREAMS_PER_USER)) as server:
        with server.client() as shoal:
            shoal.submit(quick_job("before"))
            shoal.wait("before", timeout=DEADLINE_S)
        yield server


class Watch:
    """A watch read on a thread of its own, its events kept for the test to wait on."""

    def __init__(self, events: JobEvents) -> None:
        self.source = events
        self.events: list[JobEvent] = []
        self.ended = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for event in self.source:
                self.events.append(event)
        except Exception:  # closed by the test, or the server stopped
            pass
        finally:
            self.ended.set()

    def wait_for(self, what: str, check: Callable[[JobEvent], bool]) -> JobEvent:
        return until(what, lambda: next((e for e in list(self.events) if check(e)), None))

    def of(self, name: str) -> list[tuple[str, str]]:
        return [(e.type.value, e.job.state.value) for e in list(self.events)
                if e.job.name == name]

    def close(self) -> None:
        """Hang up, from this thread: the reading thread, blocked on the socket, ends."""
        self.source.close()
        assert self.ended.wait(DEADLINE_S), "closing the watch left its reader blocked"


def test_a_watch_lists_then_follows_submissions_changes_and_deletions(up: Up) -> None:
    with up.client() as shoal:
        watch = Watch(shoal.watch_jobs())
        try:
            first = watch.wait_for("the existing job", lambda e: e.job.name == "before")
            assert first.type.value == "ADDED"
            # Exactly an item of the list: an ended job's summary no longer changes.
            listed = next(j for j in shoal.list_jobs().items if j.name == "before")
            assert first.raw == listed.raw

            shoal.submit(quick_job("watched"))
            watch.wait_for("watched to succeed", lambda e: e.job.name == "watched"
                           and e.job.state.value == "Succeeded")
            seen = watch.of("watched")
            assert seen[0][0] == "ADDED"
            assert all(kind == "MODIFIED" for kind, _ in seen[1:]) and len(seen) > 1

            shoal.delete_job("watched")
            gone = watch.wait_for("watched deleted", lambda e: e.job.name == "watched"
                                  and e.type.value == "DELETED")
            assert gone.job.state.value == "Succeeded"  # as it was last stored
            assert [kind for kind, _ in watch.of("before")] == ["ADDED"]
        finally:
            watch.close()


def test_filters_choose_what_a_watch_shows(up: Up) -> None:
    with up.client() as shoal:
        everything = Watch(shoal.watch_jobs())
        team_a = Watch(shoal.watch_jobs(queue="team-a"))
        succeeded = Watch(shoal.watch_jobs(state="Succeeded", queue="team-a"))
        try:
            shoal.submit(quick_job("elsewhere"))
            everything.wait_for("elsewhere to succeed", lambda e: e.job.name == "elsewhere"
                                and e.job.state.value == "Succeeded")
            shoal.submit(quick_job("in-team-a", queue="team-a"))
            team_a.wait_for("in-team-a to succeed", lambda e: e.job.name == "in-team-a"
                            and e.job.state.value == "Succeeded")
            succeeded.wait_for("in-team-a among the succeeded",
                               lambda e: e.job.name == "in-team-a")
            # The server hands every watch the same changes in order: elsewhere's came
            # before in-team-a's, so a watch that showed neither has filtered them out.
            for watch in (team_a, succeeded):
                assert {e.job.queue for e in watch.events} == {"team-a"}
                assert watch.of("elsewhere") == []
            assert team_a.of("in-team-a")[0][0] == "ADDED"  # in whatever state it was read
            # A job that comes to match is ADDED then, in the state that made it match.
            assert succeeded.of("in-team-a") == [("ADDED", "Succeeded")]
        finally:
            for watch in (everything, team_a, succeeded):
                watch.close()


def test_each_user_holds_a_bounded_number_of_watches(up: Up) -> None:
    with up.client() as shoal:
        held = [shoal.watch_jobs() for _ in range(STREAMS_PER_USER)]
        try:
            with pytest.raises(ShoalApiError) as refused:
                shoal.watch_jobs()
            assert refused.value.status == 429
            assert refused.value.errors[0].path == "query.watch"
            assert "watches jobs 3 times" in refused.value.errors[0].message
        finally:
            for events in held:
                events.close()
        # Closed streams give their slots back (the server sees the client leave).
        until("a slot given back", lambda: _opens(shoal))


def _opens(shoal: ShoalClient) -> bool:
    try:
        shoal.watch_jobs().close()
    except ShoalApiError as exc:
        if exc.status == 429:
            return False
        raise
    return True


def test_a_watch_needs_a_token(up: Up) -> None:
    answer = httpx.get(f"{up.url}/api/v1/jobs", params={"watch": "true"}, timeout=30)
    assert answer.status_code == 401
    assert answer.json()["errors"][0]["path"] == "header.Authorization"
    bad = httpx.get(f"{up.url}/api/v1/jobs", params={"watch": "true", "after": "before"},
                    headers={"Authorization": f"Bearer {up.token}"}, timeout=30)
    assert bad.status_code == 422 and bad.json()["errors"][0]["path"] == "query.after"


def test_jobs_watch_in_a_pipe_prints_a_line_per_change(up: Up) -> None:
    env = {**os.environ, "SHOAL_SERVER": up.url, "SHOAL_TOKEN": up.token}
    process = subprocess.Popen([SHOAL, "jobs", "--watch"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or ()],
                     daemon=True).start()
    printed: list[str] = []

    def printed_line(check: Callable[[list[str]], bool]) -> list[str] | None:
        while not lines.empty():
            printed.append(lines.get().rstrip("\n"))
        return printed if check(printed) else None

    try:
        until("the existing job's line", lambda: printed_line(
            lambda seen: ["ADDED", "before", "Succeeded", "default", "admin", "0/1"]
            in [line.split() for line in seen]))
        with up.client() as shoal:
            shoal.submit(quick_job("piped"))
        until("piped's change to Succeeded", lambda: printed_line(
            lambda seen: any(line.split()[:3] == ["MODIFIED", "piped", "Succeeded"]
                             for line in seen)))
        assert next(line for line in printed if " piped " in line).startswith("ADDED piped")
    finally:
        process.kill()
        process.wait(timeout=DEADLINE_S)


def test_the_server_ends_open_watches_when_it_shuts_down(up: Up) -> None:
    """Last: it stops the module's server."""
    with up.client() as shoal:
        watch = Watch(shoal.watch_jobs())
        watch.wait_for("the listing", lambda e: e.job.name == "before")
        assert up.process is not None
        up.process.send_signal(signal.SIGTERM)
        # Without the watch ended first, uvicorn would wait for its connection for ever.
        up.process.wait(timeout=DEADLINE_S)
        assert watch.ended.wait(DEADLINE_S)
        assert watch.source.closed_because == "the server is shutting down"
        assert "Waiting for connections to close" not in up.log()
