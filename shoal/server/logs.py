"""The task-log route: `GET /api/v1/jobs/{name}/logs`, a task's stdout or stderr as text.

The server does not know where logs live; it is handed a `LogSource`, which reads a task's
log as bytes from an offset (the executor's `read_log` under `shoal up`, whatever engine
runs the task; `file_logs` over local files). Without `follow`, one bounded read: at most
`limit` bytes from `offset` (`MAX_READ` at most), and the `X-Shoal-Next-Offset` header says
where the next read starts. With `follow=true` the response is streamed: what the log holds
from `offset`, then whatever is appended, until the task has ended and the log is drained —
like `kubectl logs -f`. A task's logs are its owner's and the admins' to read: a job's
output may hold what its command line does not show (tokens, data paths).

A followed log may be silent for hours, so a follow must cost the server nothing while it
waits: it is an async generator on the event loop, never a worker thread of the pool that
the other routes share. Between polls it sleeps on the loop; it reads the log in small
chunks (the source must answer in microseconds: a regular file, from the page cache, so on
the loop; an engine whose logs are remote serves them from a local copy); it learns that
the task ended through `TaskEnds`, which asks the store at most once per `END_CHECK`
seconds per job for all of that job's followers together, on a thread of its own small
pool. It stops when the client leaves. And each user may hold at most
`FollowSlots.per_user` follows open at once (429 beyond), so that no one fills the server
with them.
"""

# No `from __future__ import annotations`: FastAPI must resolve `Depends(current_user)`, a
# closure variable, from the live annotations.
import threading
import time
from collections.abc import AsyncIterator, Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import anyio
import anyio.to_thread
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import PlainTextResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from shoal.api import Job, TaskRef
from shoal.api.defaults import FOLLOWS_PER_USER
from shoal.server.auth import Authenticator, check_owner
from shoal.server.errors import ApiError, responses
from shoal.store import Repository, User

#: A task's log: (task, "stdout" | "stderr", offset, limit) → (where the bytes start, at
#: most `limit` bytes), empty when there are none (yet). They start at `offset`, or later
#: when the source skipped bytes it lost (a dead node's, on the Ray engine): a reader goes
#: on from the start + their length, so every later byte keeps its offset.
LogSource = Callable[[TaskRef, str, int, int], tuple[int, bytes]]

#: How often a followed log is checked for more output and for a client that left (seconds).
FOLLOW_POLL = 0.2
#: How old the store's word on whether a followed task has ended may be (seconds).
END_CHECK = 0.5
#: Threads that ask the store whether followed tasks ended: their own, not the route pool's.
END_CHECK_THREADS = 2
CHUNK = 64 * 1024
#: The most a read without `follow` returns; its default.
MAX_READ = 8 * 1024 * 1024
DEFAULT_READ = 1024 * 1024
TASK_HEADER = "X-Shoal-Task"
NEXT_OFFSET_HEADER = "X-Shoal-Next-Offset"


class Stream(StrEnum):
    STDOUT = "stdout"
    STDERR = "stderr"


def task_name(ref: TaskRef) -> str:
    """How a task is named in the API and the CLI: `GROUP-INDEX` (`worker-0`)."""
    return f"{ref.group}-{ref.index}"


class FollowSlots:
    """How many follows each user holds open, capped at `per_user`.

    Taken by the route (a worker thread), given back by the stream's end on the event loop:
    hence the lock."""

    def __init__(self, per_user: int = FOLLOWS_PER_USER) -> None:
        if per_user < 1:
            raise ValueError(f"follows per user must be at least 1, not {per_user}")
        self.per_user = per_user
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def open(self, user: str | None = None) -> int:
        """Follows open now: `user`'s, or everyone's."""
        with self._lock:
            return sum(self._open.values()) if user is None else self._open.get(user, 0)

    def take(self, user: str) -> None:
        with self._lock:
            held = self._open.get(user, 0)
            if held >= self.per_user:
                raise self.refusal(user, held)
            self._open[user] = held + 1

    def refusal(self, user: str, held: int) -> ApiError:
        """The 429 for one stream too many (a subclass names its own kind of stream)."""
        return ApiError(429, f"user {user!r} already follows {held} logs, the most one user "
                             "may at once; close one, or read without `follow`", "query.follow")

    def give_back(self, user: str) -> None:
        with self._lock:
            left = self._open.get(user, 0) - 1
            if left > 0:
                self._open[user] = left
            else:
                self._open.pop(user, None)


class TaskEnds:
    """Whether a followed task has ended, from a store read shared by every follower of its
    job and at most `max_age` seconds old. A hundred followers of one silent job cost one
    query per `max_age`, not five hundred a second, and never a thread of the route pool."""

    def __init__(self, repository: Repository, max_age: float = END_CHECK) -> None:
        self.repository = repository
        self.max_age = max_age
        self._seen: dict[str, tuple[float, Job | None]] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._threads = anyio.CapacityLimiter(END_CHECK_THREADS)

    async def ended(self, ref: TaskRef) -> bool:
        lock = self._locks.setdefault(ref.job, anyio.Lock())
        async with lock:  # one query in flight per job; the others wait for its answer
            seen = self._seen.get(ref.job)
            if seen is None or time.monotonic() - seen[0] >= self.max_age:
                job = await anyio.to_thread.run_sync(self.repository.get_job, ref.job,
                                                     limiter=self._threads)
                seen = self._seen[ref.job] = (time.monotonic(), job)
                self._forget_old(seen[0])
        job = seen[1]
        if job is None or job.state.terminal:
            return True
        task = next((t for t in job.tasks if t.ref == ref), None)
        return task is not None and task.state.terminal

    def _forget_old(self, now: float) -> None:
        """Drop what no follower asked about for a while, so the cache does not grow with
        every job ever followed."""
        stale = [job for job, (at, _) in self._seen.items() if now - at > 60 * self.max_age]
        for job in stale:
            del self._seen[job]
            lock = self._locks.get(job)
            if lock is not None and not lock.locked():
                del self._locks[job]


class SlotResponse(StreamingResponse):
    """A stream (a followed log, a watch) that gives its slot back however it ends: the task
    ended, the client left, or the server is shutting down."""

    def __init__(self, content: AsyncIterator[bytes], release: Callable[[], None], *,
                 media_type: str, headers: dict[str, str]) -> None:
        super().__init__(content, media_type=media_type, headers=headers)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


def _find_task(job: Job, name: str | None) -> TaskRef:
    """The task `GROUP-INDEX` (or `GROUP/INDEX`) of the job's spec, without listing every
    task of a large job."""
    if name is None:
        return TaskRef(job.name, job.groups[0].name, 0)
    for group in job.groups:
        for separator in ("-", "/"):
            prefix = group.name + separator
            index = name[len(prefix):]
            if (name.startswith(prefix) and 0 < len(index) <= 18 and index.isdigit()
                    and index == str(int(index))
                    and int(index) < group.replicas):
                return TaskRef(job.name, group.name, int(index))
    known = ", ".join(task_name(TaskRef(job.name, g.name, i)) for g in job.groups
                      for i in range(min(g.replicas, 10)))[:300]
    raise ApiError(404, f"job {job.name!r} has no task {name[:100]!r} (tasks: {known})",
                   "query.task")


def logs_router(repository: Repository, logs: LogSource | None,
                current_user: Authenticator, slots: FollowSlots | None = None
                ) -> APIRouter:
    """`slots`: the per-user cap on open follows (default `FOLLOWS_PER_USER`)."""
    router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"], responses=responses(401))
    follows = slots or FollowSlots()
    ends = TaskEnds(repository)

    async def follow(request: Request, read: LogSource, ref: TaskRef, stream: Stream,
                     offset: int) -> AsyncIterator[bytes]:
        while True:
            # Check for the end *before* reading so that output written just before the task
            # ended is still sent.
            done = await ends.ended(ref)
            start, chunk = read(ref, stream.value, offset, CHUNK)
            while chunk:
                offset = start + len(chunk)
                yield chunk
                start, chunk = read(ref, stream.value, offset, CHUNK)
            if done or await request.is_disconnected():
                return
            await anyio.sleep(FOLLOW_POLL)

    @router.get("/{name}/logs", response_class=PlainTextResponse,
                responses={200: {"content": {"text/plain": {}},
                                 "description": "The log from `offset` (streamed with "
                                                "`follow`); the task served is named in the "
                                                f"`{TASK_HEADER}` header, and where a read "
                                                "without `follow` stopped in the "
                                                f"`{NEXT_OFFSET_HEADER}` header."},
                           **responses(403, 404, 429)})
    def task_logs(name: str, user: Annotated[User, Depends(current_user)], request: Request,
                  task: Annotated[str | None, Query(
                      description="`GROUP-INDEX`, e.g. `worker-1`; default the first task")]
                  = None,
                  stream: Stream = Stream.STDOUT, follow_: Annotated[bool, Query(
                      alias="follow", description="Keep streaming until the task ends "
                                                  "(a few open at once per user)")]
                  = False,
                  offset: Annotated[int, Query(ge=0, le=2**63 - 1)] = 0,
                  limit: Annotated[int, Query(
                      ge=1, le=MAX_READ, description="Without `follow`: the most bytes "
                                                     "returned")] = DEFAULT_READ) -> Response:
        """A task's stdout or stderr from `offset` bytes on: its owner or an admin."""
        summary = repository.job_summary(name)  # the spec names its tasks: none are read
        if summary is None:
            raise ApiError(404, f"no job {name!r}", "path.name")
        check_owner(user, summary.job)
        ref = _find_task(summary.job, task)
        if logs is None:
            raise ApiError(404, "this server keeps no task logs", "path.name")
        headers = {TASK_HEADER: task_name(ref)}
        if follow_:
            follows.take(user.name)
            return SlotResponse(follow(request, logs, ref, stream, offset),
                                lambda: follows.give_back(user.name),
                                media_type="text/plain", headers=headers)
        start, content = logs(ref, stream.value, offset, limit)
        headers[NEXT_OFFSET_HEADER] = str(start + len(content))
        return Response(content, media_type="text/plain", headers=headers)

    return router


def file_logs(paths: Callable[[TaskRef], tuple[Path, Path]]) -> LogSource:
    """A `LogSource` over local files: `paths` says where a task's (stdout, stderr) are."""

    def read(ref: TaskRef, stream: str, offset: int, limit: int) -> tuple[int, bytes]:
        out, err = paths(ref)
        return offset, _read(out if stream == Stream.STDOUT.value else err, offset, limit)

    return read


def _read(path: Path, offset: int, limit: int) -> bytes:
    """At most `limit` bytes of `path` from `offset`; nothing when it does not exist (yet)."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read(limit)
    except FileNotFoundError:
        return b""
