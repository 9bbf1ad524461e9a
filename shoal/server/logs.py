"""The task-log route: `GET /api/v1/jobs/{name}/logs`, a task's stdout or stderr as text.

The server does not know where logs live; it is handed a `LogSource` (the local executor's
`log_paths` under `shoal up`). With `follow=true` the response is streamed: what the file
holds from `offset`, then whatever is appended, until the task has ended and the file is
drained — like `kubectl logs -f`. A task's logs are its owner's and the admins' to read: a
job's output may hold what its command line does not show (tokens, data paths).
"""

# No `from __future__ import annotations`: FastAPI must resolve `Depends(current_user)`, a
# closure variable, from the live annotations.
import time
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import PlainTextResponse, Response, StreamingResponse

from shoal.api import Job, TaskRef
from shoal.server.auth import Authenticator, check_owner
from shoal.server.errors import ApiError, responses
from shoal.store import Repository, User

#: Where a task's (stdout, stderr) are written.
LogSource = Callable[[TaskRef], tuple[Path, Path]]

#: How often a followed log is checked for more output and its task for an end (seconds).
FOLLOW_POLL = 0.2
CHUNK = 64 * 1024
TASK_HEADER = "X-Shoal-Task"


class Stream(StrEnum):
    STDOUT = "stdout"
    STDERR = "stderr"


def task_name(ref: TaskRef) -> str:
    """How a task is named in the API and the CLI: `GROUP-INDEX` (`worker-0`)."""
    return f"{ref.group}-{ref.index}"


def _find_task(job: Job, name: str | None) -> TaskRef:
    refs = [TaskRef(job.name, g.name, i) for g in job.groups for i in range(g.replicas)]
    if name is None:
        return refs[0]
    for ref in refs:
        if name in (task_name(ref), f"{ref.group}/{ref.index}"):
            return ref
    known = ", ".join(task_name(r) for r in refs[:10])
    raise ApiError(404, f"job {job.name!r} has no task {name!r} (tasks: {known})",
                   "query.task")


def logs_router(repository: Repository, logs: LogSource | None,
                current_user: Authenticator) -> APIRouter:
    router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"], responses=responses(401))

    def ended(ref: TaskRef) -> bool:
        job = repository.get_job(ref.job)
        if job is None or job.state.terminal:
            return True
        task = next((t for t in job.tasks if t.ref == ref), None)
        return task is not None and task.state.terminal

    def follow(path: Path, ref: TaskRef, offset: int) -> Iterator[bytes]:
        while True:
            # Check for the end *before* reading so that output written just before the task
            # ended is still sent.
            done = ended(ref)
            chunk = _read(path, offset)
            while chunk:
                offset += len(chunk)
                yield chunk
                chunk = _read(path, offset)
            if done:
                return
            time.sleep(FOLLOW_POLL)

    @router.get("/{name}/logs", response_class=PlainTextResponse,
                responses={200: {"content": {"text/plain": {}},
                                 "description": "The log from `offset` (streamed with "
                                                "`follow`); the task served is named in the "
                                                f"`{TASK_HEADER}` header."},
                           **responses(403, 404)})
    def task_logs(name: str, user: Annotated[User, Depends(current_user)],
                  task: Annotated[str | None, Query(
                      description="`GROUP-INDEX`, e.g. `worker-1`; default the first task")]
                  = None,
                  stream: Stream = Stream.STDOUT, follow_: Annotated[bool, Query(
                      alias="follow", description="Keep streaming until the task ends")]
                  = False,
                  offset: Annotated[int, Query(ge=0)] = 0) -> Response:
        """A task's stdout or stderr from `offset` bytes on: its owner or an admin."""
        job = repository.get_job(name)
        if job is None:
            raise ApiError(404, f"no job {name!r}", "path.name")
        check_owner(user, job)
        ref = _find_task(job, task)
        if logs is None:
            raise ApiError(404, "this server keeps no task logs", "path.name")
        out, err = logs(ref)
        path = out if stream is Stream.STDOUT else err
        headers = {TASK_HEADER: task_name(ref)}
        if follow_:
            return StreamingResponse(follow(path, ref, offset), media_type="text/plain",
                                     headers=headers)
        return Response(_read(path, offset, limit=None), media_type="text/plain",
                        headers=headers)

    return router


def _read(path: Path, offset: int, limit: int | None = CHUNK) -> bytes:
    """Bytes of `path` from `offset`; nothing when it does not exist (yet)."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read(-1 if limit is None else limit)
    except FileNotFoundError:
        return b""
