"""The pieces of a job watch that need no server: how a watcher types and filters the changes
the reader hands it (a property: a client that applies its events holds exactly the jobs that
match, as last read, and never gets ADDED for a job it holds nor MODIFIED or DELETED for one
it does not), a watcher that falls behind is closed, and the client's reading of the event
stream (comments, keepalives, the reason the server gave for ending it, an event too big)."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import threading
import time
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shoal_documents import job_yaml

from shoal.api import JobState
from shoal.client import JobEvents, ShoalError
from shoal.server.job_watch import BACKLOG, KEEPALIVE, Change, JobFilter, JobWatch, _Watcher
from shoal.spec import load_text
from shoal.store import Repository
from shoal.store.engine import open_store

NAMES = ("a", "b", "c")
STATES = ("Pending", "Running", "Succeeded")


def change(name: str, state: str, queue: str = "q", gone: bool = False) -> Change:
    data = json.dumps({"name": name, "state": state, "queue": queue}).encode()
    return Change(name, state, queue, "alice", data, gone)


def events(watcher: _Watcher, batch: list[Change]) -> list[tuple[str, dict[str, str]]]:
    out = []
    for chunk in watcher.events(batch):
        kind, data = chunk.decode().split("\n")[:2]
        out.append((kind.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


changes = st.lists(st.builds(change, st.sampled_from(NAMES), st.sampled_from(STATES),
                             st.sampled_from(("q", "r")), st.booleans()), max_size=12)


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(changes, max_size=6),
       state=st.sampled_from((None, JobState.RUNNING)), queue=st.sampled_from((None, "q")))
def test_a_client_that_applies_the_events_holds_what_matches(
        batches: list[list[Change]], state: JobState | None, queue: str | None) -> None:
    filters = JobFilter(state=state, queue=queue)
    watcher = _Watcher("alice", filters)
    view: dict[str, dict[str, str]] = {}
    truth: dict[str, Change] = {}
    for batch in batches:
        for kind, data in events(watcher, batch):
            name = data["name"]
            assert (kind == "ADDED") == (name not in view), (kind, name, view)
            if kind == "DELETED":
                del view[name]
            else:
                view[name] = data
        for c in batch:
            truth[c.name] = c
    expected = {name: json.loads(c.data) for name, c in truth.items()
                if not c.gone and filters.matches(c.state, c.queue, c.user)}
    assert view == expected
    assert watcher.shown == set(expected)


def test_a_job_that_stops_matching_is_deleted_as_it_is_now() -> None:
    watcher = _Watcher("alice", JobFilter(state=JobState.RUNNING))
    assert events(watcher, [change("a", "Pending")]) == []
    assert [k for k, _ in events(watcher, [change("a", "Running")])] == ["ADDED"]
    assert events(watcher, [change("a", "Succeeded")]) == \
        [("DELETED", {"name": "a", "state": "Succeeded", "queue": "q"})]


def test_a_watcher_that_falls_behind_is_closed_not_buffered() -> None:
    watcher = _Watcher("alice", JobFilter())
    batch = [change("a", "Running")] * 1000
    for _ in range(BACKLOG // len(batch)):
        watcher.offer(batch)
    assert watcher.closed is None and len(watcher.batches) == BACKLOG // len(batch)
    watcher.offer(batch)
    assert watcher.closed is not None and "fell more than" in watcher.closed
    assert not watcher.batches  # what it held is let go


def _stream(body: bytes) -> JobEvents:
    response = httpx.Response(200, content=body)

    def unanswered(exc: httpx.TransportError) -> Exception:
        return ShoalError(str(exc))

    return JobEvents(response, unanswered)


def _job(name: str) -> str:
    return json.dumps({"metadata": {"name": name}, "spec": {"queue": "default"},
                       "status": {"state": "Running", "taskCounts": {"Running": 1}}})


def test_the_client_reads_events_and_skips_comments() -> None:
    body = (f": keepalive\n\nevent: ADDED\ndata: {_job('a')}\n\n: keepalive\n\n"
            f"event: DELETED\ndata: {_job('b')}\n\n: closed: the server is shutting down\n\n")
    stream = _stream(body.encode())
    got = [(e.type.value, e.job.name, e.job.state.value) for e in stream]
    assert got == [("ADDED", "a", "Running"), ("DELETED", "b", "Running")]
    assert stream.closed_because == "the server is shutting down"


@pytest.mark.parametrize(("body", "problem"), [
    ("event: ADDED\ndata: {not json\n\n", "cannot read"),
    ("event: RENAMED\ndata: {}\n\n", "cannot read"),
    ("event: ADDED\ndata: " + "x" * (1024 * 1024 + 1) + "\n\n", "more than"),
])
def test_an_event_the_client_cannot_read_is_an_error(body: str, problem: str) -> None:
    with pytest.raises(ShoalError, match=problem):
        list(_stream(body.encode()))


def test_silence_is_broken_even_while_filtered_out_changes_arrive(tmp_path: Path) -> None:
    """A watch of a quiet queue on a busy cluster: the changes it filters out are not
    something sent, so its keepalives still come every `heartbeat`."""
    store = open_store(f"sqlite:///{tmp_path / 'shoal.db'}")
    store.migrate()
    repo = Repository(store)
    watch = JobWatch(repo, lambda _name: None, heartbeat=0.3)
    job = load_text(job_yaml("other", replicas=1)).jobs[0]
    busy = threading.Event()
    stop = threading.Event()

    def churn() -> None:  # a change every 50 ms in another queue, until told to stop
        for i in itertools.count():
            if stop.is_set():
                return
            repo.submit_job(dataclasses.replace(job, name=f"other-{i}"))
            busy.set()
            time.sleep(0.05)

    async def first_chunks() -> list[bytes]:
        chunks = []
        stream = watch._stream(_Watcher("alice", JobFilter(queue="quiet")))
        writer = threading.Thread(target=churn, daemon=True)
        try:
            # The first chunk waits for the listing and then a keepalive: start the churn
            # once the watch listens to the store.
            pending = asyncio.ensure_future(stream.__anext__())
            await asyncio.sleep(0)
            writer.start()
            chunks.append(await asyncio.wait_for(pending, 60))
            chunks.append(await asyncio.wait_for(stream.__anext__(), 60))
        finally:
            stop.set()
            await stream.aclose()
            writer.join(60)
        return chunks

    chunks = asyncio.run(first_chunks())
    assert busy.is_set() and chunks == [KEEPALIVE, KEEPALIVE]
    store.close()
