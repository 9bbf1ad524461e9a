"""The client's exceptions: every failure of a `ShoalClient` call is a `ShoalError`.

`ShoalApiError` is the server's answer to a bad request, parsed from its one error shape
(`{"errors": [{"path", "message"}], "reason"?}`, see `shoal.server.errors`);
`ShoalConnectionError` means no answer came at all (`ShoalServerTimeoutError`: none within
the client's timeout); `ShoalTimeoutError` that a job did not reach the states waited for in
time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

#: The first part of an error's `path` when it locates a part of the request rather than a
#: field of the user's document: a URL path parameter (`path.name`), a query parameter
#: (`query.limit`), a header (`header.Authorization`) or the body as a whole (`body`).
REQUEST_PARTS = frozenset({"path", "query", "header", "body"})


class ShoalError(Exception):
    """Base of every error the client raises."""


@dataclass(frozen=True)
class ErrorItem:
    """One problem the server reported; `path` locates it (`spec.queue`, `query.limit`,
    `header.Authorization`), None when it is about the whole request."""

    message: str
    path: str | None = None

    @property
    def field(self) -> str | None:
        """`path` where it names a field of what the user wrote (`spec.queue`, or `queues[0]`
        of a JSON body); None where it names a part of the request (`path.name`,
        `query.after`, `header.Authorization`): the API's names, which mean nothing to
        someone who gave a file or typed a command."""
        if not self.path:
            return None
        head, dot, rest = self.path.partition(".")
        if head.split("[", 1)[0] not in REQUEST_PARTS:
            return self.path
        return rest if head == "body" and dot and rest else None

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class ShoalApiError(ShoalError):
    """The server answered with an error status (4xx or 5xx).

    `message` and `path` are those of the first error reported (`errors` has them all);
    `endpoint` is the request (`POST /api/v1/jobs`); `reason` is the scheduler's pending
    reason when a job was refused as impossible.
    """

    def __init__(self, status: int, message: str, path: str | None = None, *,
                 errors: tuple[ErrorItem, ...] = (), endpoint: str = "",
                 reason: dict[str, Any] | None = None) -> None:
        self.status = status
        self.message = message
        self.path = path
        self.errors = errors or (ErrorItem(message, path),)
        self.endpoint = endpoint
        self.reason = reason
        super().__init__("; ".join(str(e) for e in self.errors))

    @property
    def is_client_error(self) -> bool:
        return 400 <= self.status < 500


class ShoalConnectionError(ShoalError):
    """The server could not be reached, or stopped answering; the message names the URL."""

    def __init__(self, url: str, detail: str, message: str | None = None) -> None:
        self.url = url
        self.detail = detail
        super().__init__(message or f"cannot reach the Shoal server at {url}: {detail}")


class ShoalServerTimeoutError(ShoalConnectionError):
    """The server (or something on the way) took the connection but did not answer within
    `timeout` seconds: reachable, perhaps, but slow or stuck."""

    def __init__(self, url: str, timeout: float, detail: str = "timed out") -> None:
        self.timeout = timeout
        super().__init__(url, detail, f"timed out after {timeout:g} s waiting for the Shoal "
                                      f"server at {url}")


class ShoalTimeoutError(ShoalError, TimeoutError):
    """`ShoalClient.wait` gave up; `state` is the job's state when it did."""

    def __init__(self, name: str, state: str, timeout: float) -> None:
        self.name = name
        self.state = state
        super().__init__(f"job {name!r} is still {state} after {timeout:g} s")


def api_error(response: httpx.Response) -> ShoalApiError:
    """Parse an error response; a body that is not Shoal's JSON (a proxy's HTML page, say)
    still gives a message naming the status."""
    endpoint = f"{response.request.method} {response.request.url.path}"
    body = _json(response)
    raw = body.get("errors") if body else None
    items = tuple(_item(e) for e in raw if isinstance(e, dict)) if isinstance(raw, list) else ()
    if not items:
        text = response.text.strip().splitlines()
        detail = f": {text[0][:200]}" if text else ""
        items = (ErrorItem(f"HTTP {response.status_code} {response.reason_phrase}{detail}"),)
    reason = body.get("reason") if body else None
    return ShoalApiError(response.status_code, items[0].message, items[0].path, errors=items,
                         endpoint=endpoint, reason=reason if isinstance(reason, dict) else None)


def _json(response: httpx.Response) -> dict[str, Any] | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _item(entry: dict[str, Any]) -> ErrorItem:
    path = entry.get("path")
    return ErrorItem(str(entry.get("message", "")), None if path is None else str(path))
