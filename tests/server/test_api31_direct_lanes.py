"""The direct routes' lanes (`shoal.server.direct.direct_lanes`): `POST /api/v1/jobs` is
served from the request guard without FastAPI's router, and answers every request exactly as
the routed request did — a new job, a replay, and each error, its JSON body, status and
headers included. A lane is made only where no earlier route could take the request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_clock import Clock
from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.testclient import TestClient
from server_helpers import StoreScheduler, job_yaml
from starlette.staticfiles import StaticFiles
from store_templates import migrated_sqlite

from shoal.api import Node, Resources, VirtualCluster
from shoal.server import create_app
from shoal.server.direct import _Lane, direct_lanes, direct_route
from shoal.server.errors import RequestGuard
from shoal.server.jobs import MAX_IDEMPOTENCY_KEY
from shoal.store import Repository

YAML = "application/yaml"


def _guard(app: FastAPI) -> RequestGuard:
    stack: Any = app.middleware_stack
    while not isinstance(stack, RequestGuard):
        stack = stack.app
    return stack


def _requests(big: int) -> list[tuple[str, dict[str, str], bytes]]:
    """(who, headers, body) of each request: answered 201, 200 and every error."""
    ok = job_yaml("lane-a").encode()
    return [
        ("alice", {"Content-Type": YAML, "Idempotency-Key": "k1"}, ok),
        ("alice", {"Content-Type": YAML, "Idempotency-Key": "k1"}, ok),  # replay: 200
        ("alice", {"Content-Type": YAML, "Idempotency-Key": "k2"}, ok),  # key conflict
        ("alice", {"Content-Type": YAML}, ok),  # the name is taken: 409
        ("", {"Content-Type": YAML}, job_yaml("anon").encode()),  # 401
        ("nobody", {"Content-Type": YAML}, job_yaml("anon").encode()),  # 401, unknown token
        ("alice", {"Content-Type": "text/plain"}, job_yaml("plain").encode()),  # 415
        ("alice", {"Content-Type": YAML}, b"\xff\xfe"),  # 400, not UTF-8
        ("alice", {"Content-Type": YAML}, b"x" * (big + 1)),  # 413
        ("alice", {"Content-Type": YAML, "Content-Length": "many"}, ok),  # 400
        ("alice", {"Content-Type": YAML}, job_yaml("q", queue="team-a").encode()),  # 403
        ("alice", {"Content-Type": YAML}, job_yaml("q", queue="nowhere").encode()),  # 422
        ("alice", {"Content-Type": YAML}, job_yaml("huge", gpu=100).encode()),  # never runs
        ("alice", {"Content-Type": YAML}, b"apiVersion: shoal/v1\nkind: Job\n"),  # 422 spec
        ("alice", {"Content-Type": YAML, "Idempotency-Key": "k" * (MAX_IDEMPOTENCY_KEY + 1)},
         job_yaml("long-key").encode()),  # 422 on the header
        ("alice", {"Content-Type": "application/json"}, b'{"apiVersion": '),  # 422, syntax
        ("alice", {"Content-Type": YAML}, job_yaml("lane-b").encode()),  # 201
    ]


@pytest.fixture
def two_apps(sqlite_template: Path, tmp_path: Path) -> Iterator[tuple[TestClient, TestClient]]:
    """The same app twice over two copies of one store: with its lanes, and without."""
    clients = []
    for which in ("lanes", "router"):
        store = migrated_sqlite(sqlite_template, tmp_path / f"{which}.db")
        repository = Repository(store, clock=Clock())
        repository.create_user("alice", queues=["default"])
        repository.put_node(Node("n", Resources.of(cpu=32000, memory=262144, gpu=8)))
        repository.put_virtual_cluster(VirtualCluster("team-a"))
        app = create_app(repository, StoreScheduler(repository))
        client = TestClient(app)
        client.__enter__()
        client.headers["X-Token"] = repository.issue_token("alice")
        if which == "router":
            _guard(app).lanes = {}
        clients.append(client)
    yield clients[0], clients[1]
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture()
def served(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the lanes served, in order."""
    paths: list[str] = []
    real = _Lane.__call__

    async def counted(self: _Lane, scope: Any, receive: Any, send: Any) -> None:
        paths.append(scope["path"])
        await real(self, scope, receive, send)

    monkeypatch.setattr(_Lane, "__call__", counted)
    return paths


def test_the_lane_answers_as_the_router_did(two_apps: tuple[TestClient, TestClient],
                                            served: list[str]) -> None:
    lanes, routed = two_apps
    assert set(_guard(lanes.app).lanes) == {("POST", "/api/v1/jobs")}  # type: ignore[arg-type]
    big = lanes.app.state.limits.max_body_bytes  # type: ignore[attr-defined]
    answers: list[list[tuple[int, list[tuple[str, str]], bytes]]] = []
    for client in (lanes, routed):
        token = client.headers["X-Token"]
        got = []
        for who, headers, body in _requests(big):
            auth = {"alice": {"Authorization": f"Bearer {token}"},
                    "nobody": {"Authorization": "Bearer nope"}}.get(who, {})
            answer = client.post("/api/v1/jobs", content=body, headers={**headers, **auth})
            got.append((answer.status_code, sorted(answer.headers.items()), answer.content))
        answers.append(got)
    assert [status for status, _, _ in answers[0]] == [
        201, 200, 409, 409, 401, 401, 415, 400, 413, 400, 403, 422, 422, 422, 422, 422, 201]
    assert answers[0] == answers[1]
    assert len(served) == len(answers[0])  # each through the lane, none through the router
    # Other methods and paths are routed as before.
    assert lanes.get("/api/v1/jobs", headers={"Authorization": f"Bearer "
                                               f"{lanes.headers['X-Token']}"}).status_code == 200
    slash = lanes.post("/api/v1/jobs/", follow_redirects=False)
    assert slash.status_code == 307  # the router's redirect, to the lane
    assert len(served) == len(answers[0])


def _app(*routes: Any) -> FastAPI:
    app = FastAPI()
    for add in routes:
        add(app)
    return app


async def _handler(_request: Request) -> Response:
    return Response(b"direct")


def _direct(path: str) -> Any:
    def add(app: FastAPI) -> None:
        router = APIRouter(prefix="/api")

        async def endpoint() -> None:
            """Documents the route."""

        router.add_api_route(path, endpoint, methods=["POST"],
                             route_class_override=direct_route(_handler))
        app.include_router(router)
    return add


def _plain(path: str, method: str) -> Any:
    def add(app: FastAPI) -> None:
        async def endpoint() -> str:
            return "routed"
        app.add_api_route(path, endpoint, methods=[method])
    return add


def test_a_lane_only_where_no_earlier_route_takes_the_request(tmp_path: Path) -> None:
    assert set(direct_lanes(_app(_direct("/x")))) == {("POST", "/api/x")}
    # The same path under another method matches in part only: the direct route still wins.
    assert set(direct_lanes(_app(_plain("/api/x", "GET"), _direct("/x")))) == {
        ("POST", "/api/x")}
    # A route before it that takes the same request, a parameter, a mount: no lane.
    assert direct_lanes(_app(_plain("/api/x", "POST"), _direct("/x"))) == {}
    assert direct_lanes(_app(_plain("/api/{any}", "POST"), _direct("/x"))) == {}
    mounted = FastAPI()
    mounted.mount("/api", StaticFiles(directory=tmp_path))
    _direct("/x")(mounted)
    assert direct_lanes(mounted) == {}
    # A path with parameters gets none (the router converts them).
    assert direct_lanes(_app(_direct("/{name}"))) == {}
    # Routes after it do not matter.
    assert set(direct_lanes(_app(_direct("/x"), _plain("/api/x", "POST")))) == {
        ("POST", "/api/x")}


def test_a_request_under_a_root_path_is_routed(two_apps: tuple[TestClient, TestClient],
                                               served: list[str]) -> None:
    lanes, _ = two_apps
    prefixed = TestClient(lanes.app, root_path="/shoal")
    answer = prefixed.post("/api/v1/jobs", content=job_yaml("rooted"),
                           headers={"Content-Type": YAML,
                                    "Authorization": f"Bearer {lanes.headers['X-Token']}"})
    assert answer.status_code == 201
    assert served == []
