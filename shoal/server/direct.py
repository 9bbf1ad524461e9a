"""Routes whose handler reads the request itself, outside FastAPI's dependency resolution,
and the lanes that reach them without the router (issue 18): the API's hottest route,
`POST /api/v1/jobs`, is one.

Resolving a route's dependencies (the bearer token, the user, the body, each header, a
`Response` and `BackgroundTasks` to fill in) and then validating and serialising what the
route returns against its `response_model` cost a submission more CPU than the auth and
body reading they wrap. A direct route keeps its endpoint's signature — FastAPI still
builds the OpenAPI document from it, parameters, security and response model included —
but the request is served by `handler(request) -> Response`, which resolves the same
things in the same order (auth, then the body, then the headers) with the same functions
and errors, and answers with the JSON it serialised once.

A direct route whose path has no parameters also gets a *lane* (`direct_lanes`): the
request guard (`shoal.server.errors.RequestGuard`, Shoal's one middleware) hands a request
for exactly that method and path to the route's handler itself. FastAPI's router matched
each request twice (its `matches`, then its `handle`, each walking the included routers and
recounting their routes' versions), and its route wrapper added two exception stacks and a
`Request` of its own: measured, ~8 % of a submission's CPU in process. A lane is exact: it
is made only where no route before the direct one could take the request (the router tries
routes in order and the first full match wins), only for a request without a root path,
and it answers through Starlette's own `ExceptionMiddleware` built with the app's exception
handlers, so every error is the JSON answer the routed request got.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import Host
from starlette.types import ASGIApp, Receive, Scope, Send

Handler = Callable[[Request], Awaitable[Response]]
Lanes = Mapping[tuple[str, str], ASGIApp]
"""(method, path) → the ASGI app that serves exactly that request."""


class DirectRoute(APIRoute):
    """An `APIRoute` served by `handler` (set by `direct_route`'s subclass)."""

    handler: Handler

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = self.handler

        async def handle(request: Request) -> Response:
            return await handler(request)
        return handle


def direct_route(handler: Handler) -> type[APIRoute]:
    """A route class (`APIRouter.add_api_route(route_class_override=...)`) whose requests go
    to `handler`; the endpoint it is given documents the route."""
    return type("DirectRoute", (DirectRoute,), {"handler": staticmethod(handler)})


class _Lane:
    """One direct route's requests, as the router's route wrapper serves them: a `Request`,
    the handler's answer, sent (its background task run after it)."""

    __slots__ = ("_child", "_handler")

    def __init__(self, route: DirectRoute, router: Any) -> None:
        self._handler = route.handler
        # What the router's match writes into the scope; the handler reads none of it, a
        # `Request` made from the scope may.
        self._child = {"router": router, "endpoint": route.endpoint, "path_params": {},
                       "route": route}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope.update(self._child)
        response = await self._handler(Request(scope, receive, send))
        await response(scope, receive, send)


def direct_lanes(app: FastAPI) -> dict[tuple[str, str], ASGIApp]:
    """A lane for each method of each parameterless direct route of `app` that no route
    before it could take; call once the routes and exception handlers are all added.

    The router's rule, followed here: routes are tried in order and a request goes to the
    first that matches it in full — a route whose path matches and whose methods hold the
    request's (or that names none), or a mount whose prefix does. A route whose path matches
    under another method matches in part only, and does not stop the search. Where a route's
    match cannot be told from its path (a `Host`, a route with no path pattern) no later
    route gets a lane."""
    lanes: dict[tuple[str, str], ASGIApp] = {}
    before: list[tuple[Any, set[str] | None]] = []
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        pattern = getattr(context, "path_regex", None)
        if isinstance(route, Host) or pattern is None:
            break
        methods = context.methods
        path = context.path
        if (isinstance(route, DirectRoute) and path is not None and "{" not in path
                and methods):
            for method in sorted(methods):
                if not any(earlier.match(path) and (taken is None or method in taken)
                           for earlier, taken in before):
                    lanes.setdefault((method, path), _guarded(app, _Lane(route, app.router)))
        before.append((pattern, None if methods is None else set(methods)))
    return lanes


def _guarded(app: FastAPI, lane: _Lane) -> ASGIApp:
    """The lane inside the layer the app's exception handlers run in: `ApiError`, a request
    validation error or an HTTP error becomes the JSON answer the routed request got."""
    return ExceptionMiddleware(lane, handlers=app.exception_handlers, debug=app.debug)


def lane_for(lanes: Lanes, scope: Scope) -> ASGIApp | None:
    """The lane that serves this HTTP request, if it has one."""
    if not lanes or scope.get("root_path"):
        return None
    return lanes.get((scope["method"], scope["path"]))


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
