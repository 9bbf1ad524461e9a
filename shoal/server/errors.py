"""Errors as the API returns them: `{"errors": [{"path": ..., "message": ...}]}`.

`ApiError` is raised by the routes; the handlers installed by `install_error_handlers` turn
it, FastAPI's request validation errors and bare HTTP errors into that one JSON shape, so a
client always finds the field path (when there is one) in the same place.

Anything else a route raises is a bug, and is answered in the same shape too: a 500 whose
message is `internal error, id <id>`, and one server log line carrying that id and the
traceback (`RequestGuard`). The body never holds the exception's text, which may quote
what another user stored. Every answer is bounded: at most `MAX_ERRORS` items, each message
and path cut to `MAX_MESSAGE` / `MAX_PATH` characters.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shoal.server.direct import Lanes, lane_for

log = logging.getLogger("shoal.server")

MAX_ERRORS = 50
MAX_MESSAGE = 1000
MAX_PATH = 300


class ErrorItem(BaseModel):
    path: str | None = None
    """Where the problem is: a spec field path (`spec.taskGroups[0].replicas`), a query
    parameter (`query.limit`) or a header (`header.Idempotency-Key`); None for the request."""
    message: str


class ErrorBody(BaseModel):
    errors: list[ErrorItem]
    reason: dict[str, Any] | None = None
    """For a job refused as impossible: the scheduler's pending reason."""


class ApiError(Exception):
    def __init__(self, status: int, message: str, path: str | None = None, *,
                 errors: Sequence[ErrorItem] | None = None,
                 reason: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.errors = list(errors) if errors else [ErrorItem(path=path, message=message)]
        self.reason = reason
        self.headers = headers


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _bounded(errors: list[ErrorItem]) -> list[ErrorItem]:
    """The first `MAX_ERRORS` items, each cut short: an answer's size never grows with the
    request's (a document with a million faults, a message quoting a huge value)."""
    out = [ErrorItem(path=None if e.path is None else _cut(e.path, MAX_PATH),
                     message=_cut(e.message, MAX_MESSAGE)) for e in errors[:MAX_ERRORS]]
    if len(errors) > MAX_ERRORS:
        out.append(ErrorItem(path=None,
                             message=f"… and {len(errors) - MAX_ERRORS} more errors"))
    return out


def _response(status: int, errors: list[ErrorItem], reason: dict[str, Any] | None = None,
              headers: dict[str, str] | None = None) -> JSONResponse:
    errors = _bounded(errors)
    body = ErrorBody(errors=errors, reason=reason).model_dump(exclude_none=True)
    body["errors"] = [e.model_dump() for e in errors]
    return JSONResponse(body, status_code=status, headers=headers)


def location(loc: Sequence[int | str]) -> str | None:
    """A validation error's location as the API writes paths: `body.queues[0]`."""
    if not loc:
        return None
    head, *rest = loc
    path = str(head)
    for part in rest:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


async def _api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return _response(exc.status, exc.errors, exc.reason, exc.headers)


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [ErrorItem(path=location(e.get("loc", ())), message=str(e.get("msg", "")))
              for e in exc.errors()]
    return _response(422, errors)


async def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return _response(exc.status_code, [ErrorItem(message=str(exc.detail))],
                     headers=dict(exc.headers) if exc.headers else None)


def internal_error_message(error_id: str) -> str:
    return f"internal error, id {error_id}"


class RequestGuard:
    """ASGI middleware, Shoal's one around every route: a request whose path or query holds
    a NUL character is refused with a 422 naming it, and an exception no handler took
    becomes a JSON 500 and one log line.

    NUL: no name Shoal stores may hold one, and PostgreSQL refuses NUL in text outright,
    so such a lookup would otherwise end as a 500; refused before any route runs.

    Exceptions: not an exception handler for `Exception`, since Starlette runs those in its
    outermost `ServerErrorMiddleware`, which re-raises after answering, and the ASGI server
    then logs a second traceback and closes the connection. Here the exception stops: the
    client gets the JSON body and keeps its keep-alive connection. Only when the answer had
    already started (a streamed log) is it re-raised, since the server must then cut the
    stream.

    One middleware for both (they were two, the NUL check inside): each is an ASGI hop on
    every request, and the burst's submissions pay for each (issue 18). For the same reason
    a request that a direct route's lane serves (`lanes`, filled by `create_app`:
    `shoal.server.direct.direct_lanes`) goes there from here, not through the router."""

    def __init__(self, app: ASGIApp, lanes: Lanes | None = None) -> None:
        self.app = app
        self.lanes: Lanes = {} if lanes is None else lanes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            where = _nul_in(scope)
            if where is not None:
                refused = _response(422, [ErrorItem(
                    path=where, message="must not contain a NUL character")])
                await refused(scope, receive, tracked)
                return
            await (lane_for(self.lanes, scope) or self.app)(scope, receive, tracked)
        except Exception as exc:
            error_id = secrets.token_hex(6)
            log.error("internal error, id %s, in %s %s", error_id, scope.get("method", ""),
                      scope.get("path", ""), exc_info=exc)
            if started:
                raise
            response = _response(500, [ErrorItem(path="",
                                                 message=internal_error_message(error_id))])
            await response(scope, receive, send)


def _nul_in(scope: Scope) -> str | None:
    if "\x00" in scope.get("path", ""):
        return "path"
    query = scope.get("query_string", b"")
    if b"%00" not in query and b"\x00" not in query:
        return None
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if "\x00" in name or "\x00" in value:
            return f"query.{name.replace(chr(0), '')[:MAX_PATH - 6]}"
    return None


def install_error_handlers(app: FastAPI, lanes: Lanes | None = None) -> None:
    """The handlers, the guard and the documented errors; `lanes`: the direct routes' lanes
    the guard serves (`shoal.server.direct`), filled once every route is added."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_middleware(RequestGuard, lanes=lanes)
    _document_errors(app)


ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorBody"}
BODY_ERRORS = {"400": "The body cannot be read (not UTF-8, not JSON)",
               "413": "The body is larger than this server accepts"}


def _document_errors(app: FastAPI) -> None:
    """Make the OpenAPI document say what the handlers above do: every 4xx and 5xx answer of
    every operation is an `ErrorBody` in JSON, and an operation that takes a body may answer
    400 (unreadable) and 413 (too large). FastAPI would otherwise document its own
    422 shape (`HTTPValidationError`) on routes that declare no 422, and a text/plain route's
    errors as text/plain; clients generated from the document, and the schema fuzz test,
    would then expect what the server never sends."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = generate()
            for operations in document.get("paths", {}).values():
                for operation in operations.values():
                    if "requestBody" in operation:  # any body may be unreadable or too big
                        for status, why in BODY_ERRORS.items():
                            operation.setdefault("responses", {}).setdefault(
                                status, {"description": why})
                    for status, answer in operation.get("responses", {}).items():
                        if str(status)[:1] in ("4", "5"):
                            answer["content"] = {"application/json": {"schema": ERROR_SCHEMA}}
            schemas = document.setdefault("components", {}).setdefault("schemas", {})
            for unused in ("HTTPValidationError", "ValidationError"):
                schemas.pop(unused, None)
            if "ErrorBody" not in schemas:
                body = ErrorBody.model_json_schema(
                    ref_template="#/components/schemas/{model}", mode="serialization")
                schemas.update(body.pop("$defs", {}))
                schemas["ErrorBody"] = body
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


#: For route declarations: the error responses, documented in the OpenAPI document.
def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": ErrorBody} for status in statuses}
