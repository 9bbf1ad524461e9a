"""Following job changes: `ShoalClient.watch_jobs`, an iterator over the server-sent events of
`GET /api/v1/jobs?watch=true` (`shoal.server.job_watch`).

    with shoal.watch_jobs(queue="team-a") as events:
        for event in events:
            print(event.type, event.job.name, event.job.state.value)

The first events are one `ADDED` per job that matches, then one per change. The iterator
ends when the server ends the stream (it shuts down, or the client fell too far behind:
watch again, and every job is `ADDED` anew); a server that stops answering — no event nor
keepalive for `read_timeout` seconds — raises `ShoalConnectionError`.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from enum import StrEnum
from types import TracebackType

import httpx

from shoal.client.errors import ShoalError
from shoal.client.models import JobView, Json

#: The server sends a keepalive every 15 s: a stream silent four times as long is dead.
WATCH_READ_TIMEOUT = 60.0
#: The most bytes one event may hold (an event is one job's summary: a few KiB).
MAX_EVENT = 1024 * 1024


class WatchEventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class JobEvent:
    """One change: the job as the list shows it after the change (before it, for a job
    removed; as it is now, for one that no longer matches the filters: `DELETED`)."""

    type: WatchEventType
    job: JobView

    @property
    def raw(self) -> Json:
        return self.job.raw


class JobEvents(Iterator[JobEvent]):
    """The events of one watch, as they arrive. Close it (or use it as a context manager)
    to stop watching. `closed_because` holds the server's word on why it ended the stream,
    when it said."""

    def __init__(self, response: httpx.Response,
                 unanswered: Callable[[httpx.TransportError], Exception]) -> None:
        """`unanswered`: the error to raise for a transport failure (the client's)."""
        self._response = response
        self._unanswered = unanswered
        self._closing = False
        self._events = self._parse()
        self.closed_because: str | None = None

    def _parse(self) -> Iterator[JobEvent]:
        kind: str | None = None
        data: list[str] = []
        size = 0
        for line in self._response.iter_lines():
            if not line:  # the end of an event
                if kind is not None and data:
                    yield _event(kind, "\n".join(data))
                kind, data, size = None, [], 0
                continue
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if not field:  # a comment: a keepalive, or why the stream ends
                if value.startswith("closed: "):
                    self.closed_because = value.removeprefix("closed: ")
            elif field == "event":
                kind = value
            elif field == "data":
                size += len(value)
                if size > MAX_EVENT:
                    raise ShoalError(f"the server sent an event of more than {MAX_EVENT} "
                                     "bytes")
                data.append(value)

    def __next__(self) -> JobEvent:
        try:
            return next(self._events)
        except StopIteration:
            self.close()
            raise
        except httpx.TransportError as exc:
            closing = self._closing
            self.close()
            if closing:  # closed on purpose, from another thread
                raise StopIteration from None
            raise self._unanswered(exc) from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop watching; from any thread. A thread blocked reading the stream is woken:
        the connection is shut down under it, and its iteration ends."""
        self._closing = True
        stream = self._response.extensions.get("network_stream")
        raw = None if stream is None else stream.get_extra_info("socket")
        if isinstance(raw, socket.socket):
            with suppress(OSError):  # closed already
                raw.shutdown(socket.SHUT_RDWR)
        self._response.close()

    def __enter__(self) -> JobEvents:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def _event(kind: str, data: str) -> JobEvent:
    try:
        return JobEvent(WatchEventType(kind), JobView.from_json(json.loads(data)))
    except (ValueError, KeyError, TypeError) as exc:
        raise ShoalError(f"the server sent an event this client cannot read ({kind}: "
                         f"{exc})"[:300]) from None
