"""Watching jobs: `GET /api/v1/jobs?watch=true`, a server-sent event stream of the jobs the
list would show (the same `state`, `queue`, `user` filters).

A watcher first gets one `ADDED` per job that matches now, in submission order, then an
event per change: `ADDED` (a job appears, or comes to match the filters), `MODIFIED`,
`DELETED` (removed, or no longer matching: the job as it is now says why). Each event's
data is one item of the list, `JobSummaryOut`, on one line. A `: keepalive` comment is sent
every HEARTBEAT seconds of silence, so that proxies keep the connection and a client can
tell a quiet cluster from a dead server. Events carry no id: a client that reconnects gets
the jobs that match anew (`Last-Event-ID` is not served).

Many watchers cost one reader, not one store poll each. The store's change feed
(`shoal.store.job_changes`) names the jobs each committed transaction touched, whichever
thread wrote it; `JobWatch` gathers those names, reads their summaries once per TICK at most
(a query per READ_SLICE jobs, off the event loop), renders each as JSON once, and hands the
batch to every watcher, which only filters. Nothing is read while nobody watches: the feed
is listened to from the first watcher to the last.

A watcher that falls behind — more than BACKLOG changes waiting for a client that does not
read — is closed (a last comment says so) rather than buffered without bound: it watches
again and gets the jobs anew. Each user holds at most `per_user` watches at once (429
beyond, like log follows). Every stream ends when the client leaves and when the server
shuts down (`close`, called by `shoal up` before uvicorn waits for its connections).

A job's pending reason is the one the scheduler gives when the job's change is read: a
change of reason alone is seen when the control loop writes it to the job's history
(`shoal.control.waiting`).
"""

# No `from __future__ import annotations`: FastAPI resolves the route's annotations.
import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
from fastapi.responses import StreamingResponse

from shoal.api import JobState, PendingReason
from shoal.server.errors import ApiError
from shoal.server.job_models import job_summary_json
from shoal.server.logs import FollowSlots, SlotResponse
from shoal.store import JobSummary, NotFoundError, Repository
from shoal.store.job_changes import JobChange

log = logging.getLogger(__name__)

#: Seconds of silence after which a watcher gets a `: keepalive` comment.
HEARTBEAT = 15.0
#: The least time between two reads of changed jobs: changes in between are read together.
TICK = 0.1
#: Changes waiting for one watcher beyond which it is closed as fallen behind.
BACKLOG = 10_000
#: Jobs per read of changed jobs: a burst of changes (the first cycle after a restart notes
#: every waiting job's reason) reaches watchers a slice at a time, each sent while the next
#: is read, and a watcher that keeps up never holds more than a few slices.
READ_SLICE = 1000
#: Jobs per read of a watcher's first listing.
LIST_PAGE = 500
#: Watches one user may hold open at once.
WATCHES_PER_USER = 8
#: Threads that read for watchers: their own, not the route pool's.
READ_THREADS = 2
EVENT_STREAM = "text/event-stream"

Reasons = Callable[[str], PendingReason | None]

WATCH_HELP = ("Stream the jobs that match, then their changes, as server-sent events "
              "(`text/event-stream`): `event: ADDED|MODIFIED|DELETED`, `data:` one item of "
              "the list; a `: keepalive` comment every 15 s. `limit` and `after` do not "
              "apply. A few open at once per user.")
WATCH_RESPONSE: dict[int | str, dict[str, Any]] = {200: {
    "description": "A page of jobs; with `watch=true`, an event stream.",
    "content": {EVENT_STREAM: {"schema": {"type": "string"},
                               "example": "event: ADDED\ndata: {\"apiVersion\": "
                                          "\"shoal/v1\", \"kind\": \"Job\", ...}\n\n"}}}}


class WatchSlots(FollowSlots):
    """How many watches each user holds open, capped at `per_user`."""

    def refusal(self, user: str, held: int) -> ApiError:
        return ApiError(429, f"user {user!r} already watches jobs {held} times, the most one "
                             "user may at once; close one, or list without `watch`",
                        "query.watch")


@dataclass(frozen=True, slots=True)
class JobFilter:
    """A watch's filters, as the list's."""

    state: JobState | None = None
    queue: str | None = None
    user: str | None = None

    def matches(self, state: str, queue: str, user: str | None) -> bool:
        return ((self.state is None or self.state.value == state)
                and (self.queue is None or self.queue == queue)
                and (self.user is None or self.user == user))


@dataclass(frozen=True, slots=True)
class Change:
    """One job as read after a change, rendered once for every watcher."""

    name: str
    state: str
    queue: str
    user: str | None
    data: bytes
    """Its `JobSummaryOut`, as JSON."""
    gone: bool
    """Removed from the store."""


def render(summary: JobSummary, reason: PendingReason | None) -> bytes:
    """A job as the list shows it, as one line of JSON."""
    return job_summary_json(summary, reason)


def changes(deleted: Iterable[JobSummary], present: Iterable[JobSummary],
            reasons: Reasons) -> list[Change]:
    """The batch watchers get: the removed jobs first, then the others in submission
    order (a name removed and submitted again in one batch ends present)."""
    out = [Change(s.job.name, s.job.state.value, s.job.queue, s.job.user, render(s, None), True)
           for s in deleted]
    for s in sorted(present, key=lambda s: (s.job.submitted, s.job.name)):
        out.append(Change(s.job.name, s.job.state.value, s.job.queue, s.job.user,
                          render(s, reasons(s.job.name)), False))
    return out


def sse(kind: str, data: bytes) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n"


KEEPALIVE = b": keepalive\n\n"


class _Watcher:
    """One open watch: its filters, the jobs it has shown (by name), and the batches the hub
    handed it that it has not sent yet. Lives on the event loop."""

    def __init__(self, user: str, filters: JobFilter) -> None:
        self.user = user
        self.filters = filters
        self.shown: set[str] = set()
        self.batches: deque[list[Change]] = deque()
        self.waiting = 0
        self.ready = asyncio.Event()
        self.closed: str | None = None
        """Why the stream ends (fell behind, server shutting down); None while open."""

    def offer(self, batch: list[Change]) -> None:
        if self.closed is not None:
            return
        self.waiting += len(batch)
        if self.waiting > BACKLOG:
            self.close(f"this watch fell more than {BACKLOG} changes behind; watch again")
            return
        self.batches.append(batch)
        self.ready.set()

    def close(self, why: str) -> None:
        if self.closed is None:
            self.closed = why
            self.batches.clear()
        self.ready.set()

    def events(self, batch: list[Change]) -> Iterable[bytes]:
        """The batch as this watcher's events: filtered, typed by what it has shown."""
        self.waiting -= len(batch)
        for change in batch:
            shown = change.name in self.shown
            if not change.gone and self.filters.matches(change.state, change.queue,
                                                        change.user):
                self.shown.add(change.name)
                yield sse("MODIFIED" if shown else "ADDED", change.data)
            elif shown:
                self.shown.discard(change.name)
                yield sse("DELETED", change.data)


class JobWatch:
    """Every watch of one server, and the reader that feeds them all."""

    def __init__(self, repository: Repository, reasons: Reasons, *,
                 per_user: int = WATCHES_PER_USER, heartbeat: float = HEARTBEAT) -> None:
        self.repository = repository
        self.reasons = reasons
        self.slots = WatchSlots(per_user)
        self.heartbeat = heartbeat
        self._watchers: set[_Watcher] = set()
        self._lock = threading.Lock()  # the feed's listener runs in the writers' threads
        self._changed: set[int] = set()
        self._deleted: list[JobSummary] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._reader: asyncio.Task[None] | None = None
        self._stop_listening: Callable[[], None] | None = None
        self._threads = anyio.CapacityLimiter(READ_THREADS)
        self._closed = False

    @property
    def open(self) -> int:
        return len(self._watchers)

    def response(self, user: str, filters: JobFilter) -> StreamingResponse:
        """The stream of one watch by `user`; its slot is taken now (429 when none is
        left) and given back however the stream ends. Call from any thread."""
        if self._closed:
            raise ApiError(503, "the server is shutting down")
        self.slots.take(user)
        watcher = _Watcher(user, filters)
        return SlotResponse(self._stream(watcher), lambda: self.slots.give_back(user),
                            media_type=EVENT_STREAM,
                            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    def close(self) -> None:
        """End every stream (the server is shutting down). Call on the event loop."""
        self._closed = True
        for watcher in list(self._watchers):
            watcher.close("the server is shutting down")
        if self._wake is not None:
            self._wake.set()

    # ---- one watcher ------------------------------------------------------------------------

    async def _stream(self, watcher: _Watcher) -> AsyncIterator[bytes]:
        self._join(watcher)
        try:
            async for chunk in self._listing(watcher):
                yield chunk
            sent = time.monotonic()
            while watcher.closed is None:
                if not watcher.batches:
                    watcher.ready.clear()
                    with anyio.move_on_after(sent + self.heartbeat - time.monotonic()):
                        await watcher.ready.wait()
                chunk = b"".join(watcher.events(watcher.batches.popleft())) \
                    if watcher.batches else b""
                # Silence is measured in what was sent: changes it filters out are none.
                if not chunk and time.monotonic() - sent >= self.heartbeat:
                    chunk = KEEPALIVE
                if chunk:
                    sent = time.monotonic()
                    yield chunk
            yield f": closed: {watcher.closed}\n\n".encode()
        finally:
            self._leave(watcher)

    async def _listing(self, watcher: _Watcher) -> AsyncIterator[bytes]:
        """One ADDED per job that matches now, a page at a time. Changes made meanwhile
        wait in the watcher's batches: a job listed and then changed is MODIFIED after."""
        after: str | None = None
        filters = watcher.filters
        while watcher.closed is None:
            try:
                page = await anyio.to_thread.run_sync(self._page, filters, after,
                                                      limiter=self._threads)
            except NotFoundError:  # the job to page after was removed meanwhile
                watcher.close("the listing lost its place; watch again")
                return
            chunk = []
            for summary, data in page:
                watcher.shown.add(summary.job.name)
                chunk.append(sse("ADDED", data))
            if chunk:
                yield b"".join(chunk)
            if len(page) < LIST_PAGE:
                return
            after = page[-1][0].job.name

    def _page(self, filters: JobFilter, after: str | None
              ) -> list[tuple[JobSummary, bytes]]:
        page = self.repository.list_job_summaries(
            state=filters.state, queue=filters.queue, user=filters.user, limit=LIST_PAGE,
            after=after)
        return [(s, render(s, self.reasons(s.job.name))) for s in page]

    def _join(self, watcher: _Watcher) -> None:
        """Register the watcher, listening to the feed from the first on: before its listing
        is read, so that no change after the listing is missed."""
        self._watchers.add(watcher)
        if self._closed:
            watcher.close("the server is shutting down")
        if self._wake is None:  # one server, one event loop
            self._loop = asyncio.get_running_loop()
            self._wake = asyncio.Event()
        if self._stop_listening is None:
            self._stop_listening = self.repository.store.job_changes.listen(self._noted)
        if self._reader is None or self._reader.done():
            self._reader = asyncio.get_running_loop().create_task(self._read_changes())

    def _leave(self, watcher: _Watcher) -> None:
        self._watchers.discard(watcher)
        if not self._watchers and self._stop_listening is not None:
            self._stop_listening()
            self._stop_listening = None
            with self._lock:
                self._changed.clear()
                self._deleted.clear()
            if self._wake is not None:
                self._wake.set()  # the reader sees nobody watches, and ends

    # ---- the one reader -------------------------------------------------------------------

    def _noted(self, change: JobChange) -> None:
        """The feed's listener: in whatever thread committed. Queue it and wake the reader."""
        with self._lock:
            self._changed |= change.changed
            self._deleted += change.deleted
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with suppress(RuntimeError):  # the loop is closed: the server has stopped
                loop.call_soon_threadsafe(wake.set)

    async def _read_changes(self) -> None:
        wake = self._wake
        assert wake is not None
        while self._watchers and not self._closed:
            await wake.wait()
            wake.clear()
            with self._lock:
                changed, self._changed = self._changed, set()
                deleted, self._deleted = self._deleted, []
            if not (changed or deleted) or not self._watchers:
                continue
            ids = sorted(changed)
            for start in range(0, max(len(ids), 1), READ_SLICE):
                try:
                    batch = await anyio.to_thread.run_sync(
                        self._read, ids[start:start + READ_SLICE], deleted if start == 0
                        else [], limiter=self._threads)
                except Exception:  # a watcher that missed a change must not go on as if not
                    log.exception("reading changed jobs for watchers failed")
                    for watcher in list(self._watchers):
                        watcher.close("the server could not read a change; watch again")
                    break
                for watcher in list(self._watchers):
                    watcher.offer(batch)
            await anyio.sleep(TICK)  # what changes meanwhile is read together

    def _read(self, changed: list[int], deleted: list[JobSummary]) -> list[Change]:
        return changes(deleted, self.repository.job_summaries_by_id(changed), self.reasons)
