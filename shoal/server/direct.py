"""Routes whose handler reads the request itself, outside FastAPI's dependency resolution
(issue 18): the API's hottest route, `POST /api/v1/jobs`, is one.

Resolving a route's dependencies (the bearer token, the user, the body, each header, a
`Response` and `BackgroundTasks` to fill in) and then validating and serialising what the
route returns against its `response_model` cost a submission more CPU than the auth and
body reading they wrap. A direct route keeps its endpoint's signature — FastAPI still
builds the OpenAPI document from it, parameters, security and response model included —
but the request is served by `handler(request) -> Response`, which resolves the same
things in the same order (auth, then the body, then the headers) with the same functions
and errors, and answers with the JSON it serialised once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

Handler = Callable[[Request], Awaitable[Response]]


def direct_route(handler: Handler) -> type[APIRoute]:
    """A route class (`APIRouter.add_api_route(route_class_override=...)`) whose requests go
    to `handler`; the endpoint it is given documents the route."""

    class DirectRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            async def handle(request: Request) -> Response:
                return await handler(request)
            return handle

    return DirectRoute


def header_at_most(request: Request, name: str, most: int) -> str | None:
    """The header `name` (its first value) as `Header(max_length=most)` reads it: None when
    absent, the same 422 as FastAPI's when longer than `most` characters."""
    value = request.headers.get(name)
    if value is not None and len(value) > most:
        raise RequestValidationError([{
            "type": "string_too_long", "loc": ("header", name.lower()),
            "msg": f"String should have at most {most} characters", "input": value,
            "ctx": {"max_length": most}}])
    return value
