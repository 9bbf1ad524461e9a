"""The auth matrix: every endpoint of the OpenAPI document × every kind of caller.

The endpoints are taken from the app's own `/openapi.json`, so a new route without a row in
`EXPECTATIONS` fails `test_every_endpoint_has_an_auth_expectation` ("endpoint X has no auth
expectation") instead of going out untested. Each row builds a request that can succeed
(path parameters name `OWNED`, a job alice owns; bodies are valid) and gives the status each
role must get:

- anonymous: no `Authorization` header;
- owner: alice, who owns `OWNED` and may submit to `default` and `team-a`;
- other: bob, another user, who may submit to `default` only;
- admin: root;
- task: the token of `OWNED`'s tasks (a job token: alice without admin rights, and the
  right to manage `OWNED`'s own virtual cluster) — everywhere what alice gets.

A refused request (401/403) must have stored nothing: the store's contents are compared
before and after. An allowed write must have stored what it was asked to (`stored`). Unknown,
revoked and non-Bearer credentials are refused like no credentials at all, with
`WWW-Authenticate: Bearer`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi.routing import APIRoute
from server_helpers import Api, job_yaml

from shoal.api import JobState
from shoal.api.queue_policy import QueueStatus

# Who may do what is decided above the store: the matrix runs on SQLite only. Every route's
# store work on PostgreSQL is exercised by the fuzz test and the server tests.
pytestmark = pytest.mark.parametrize("store", ["sqlite"], indirect=True)

OWNED = "owned"
"""The job alice submitted before each request (queue `default`, two tasks)."""
OWNED_LOG = "rank 0 of alice's job: the secret is 42\n"

YAML = {"Content-Type": "application/yaml"}
NODE = "apiVersion: shoal/v1\nkind: Node\nmetadata: {name: cpu-0}\nspec: {capacity: {cpu: 8}}\n"
VC = "apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: team-b}\n"
CLOSED_TEAM = ("apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: team-a}\n"
               "spec: {state: Closed}\n")
PC = "apiVersion: shoal/v1\nkind: PriorityClass\nmetadata: {name: vip}\nvalue: 50000\n"
FLAVOR = "apiVersion: shoal/v1\nkind: ResourceFlavor\nmetadata: {name: spot}\n"
GOLD = "apiVersion: shoal/v1\nkind: PriorityClass\nmetadata: {name: gold}\nvalue: 500\n"

ROLES: dict[str, str | None] = {"anonymous": None, "owner": "alice", "other": "bob",
                                "admin": "root", "task": "task"}
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}

# Routes served outside the OpenAPI document, open to everyone: FastAPI's documentation and
# the dashboard's page (`shoal.server.web`: static files that ask the API with a token).
DOCS_ROUTES = {("GET", "/openapi.json"), ("GET", "/docs"), ("GET", "/docs/oauth2-redirect"),
               ("GET", "/redoc"), ("GET", "/")}


def expect(anonymous: int, owner: int, other: int, admin: int) -> dict[str, int]:
    return {"anonymous": anonymous, "owner": owner, "other": other, "admin": admin,
            "task": owner}


PUBLIC = expect(200, 200, 200, 200)
ANY_USER = expect(401, 200, 200, 200)
OWNER_OR_ADMIN = expect(401, 200, 403, 200)


def admin_only(status: int) -> dict[str, int]:
    return expect(401, 403, 403, status)


@dataclass(frozen=True)
class Row:
    expected: dict[str, int]
    """Status per role."""
    request: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for `Api.request` (body, headers, query)."""
    stored: Callable[[Api], bool] | None = None
    """For writes: whether the write is in the store (true after a 2xx, false after a
    refusal)."""


def _job_state(api: Api, name: str) -> JobState | None:
    job = api.repository.get_job(name)
    return None if job is None else job.state


def _held(api: Api, name: str) -> bool:
    job = api.repository.get_job(name)
    return job is not None and job.held


# (method, OpenAPI path) → who gets what. Path parameters are filled by `url`.
EXPECTATIONS: dict[tuple[str, str], Row] = {
    ("GET", "/healthz"): Row(PUBLIC),
    # alice and root may submit to team-a; bob may not (his queues: default).
    ("POST", "/api/v1/jobs"): Row(
        expect(401, 201, 403, 201),
        {"content": job_yaml("fresh", queue="team-a"), "headers": YAML},
        stored=lambda api: api.repository.get_job("fresh") is not None),
    ("GET", "/api/v1/jobs"): Row(ANY_USER),
    ("GET", "/api/v1/jobs/{name}"): Row(ANY_USER),
    ("GET", "/api/v1/jobs/{name}/events"): Row(ANY_USER),
    # Any user may read a job's original, as its spec; OWNED was written as shoal/v1, so it
    # has none (tests/server/test_server_imported_jobs.py reads those that exist).
    ("GET", "/api/v1/jobs/{name}/original"): Row(expect(401, 404, 404, 404)),
    ("GET", "/api/v1/jobs/{name}/tasks"): Row(ANY_USER),
    # OWNED runs nothing: deleting it removes it at once.
    ("DELETE", "/api/v1/jobs/{name}"): Row(
        OWNER_OR_ADMIN, stored=lambda api: api.repository.get_job(OWNED) is None),
    ("POST", "/api/v1/jobs/{name}/cancel"): Row(
        OWNER_OR_ADMIN,
        stored=lambda api: _job_state(api, OWNED) is JobState.CANCELLED),
    ("POST", "/api/v1/jobs/{name}/hold"): Row(
        OWNER_OR_ADMIN, stored=lambda api: _held(api, OWNED)),
    # OWNED is not held: a release changes nothing, for whoever may ask.
    ("POST", "/api/v1/jobs/{name}/release"): Row(OWNER_OR_ADMIN),
    # OWNED has not started: whoever may requeue it is told there is nothing to (409).
    ("POST", "/api/v1/jobs/{name}/requeue"): Row(expect(401, 409, 403, 409)),
    ("GET", "/api/v1/jobs/{name}/logs"): Row(OWNER_OR_ADMIN),
    ("GET", "/api/v1/jobs/{name}/virtual-clusters"): Row(ANY_USER),
    # OWNED has no virtual cluster of its own: whoever may manage it is told so (409);
    # tests/server/test_server_sub_clusters.py has the creations that succeed.
    ("POST", "/api/v1/jobs/{name}/virtual-clusters"): Row(
        expect(401, 409, 403, 409), {"content": VC, "headers": YAML}),
    ("GET", "/api/v1/nodes"): Row(ANY_USER),
    ("GET", "/api/v1/placements"): Row(ANY_USER),
    ("PUT", "/api/v1/nodes"): Row(
        admin_only(200), {"content": NODE, "headers": YAML},
        stored=lambda api: "cpu-0" in {n.name for n in api.repository.list_nodes()}),
    ("GET", "/api/v1/cluster"): Row(ANY_USER),
    ("GET", "/api/v1/usage"): Row(ANY_USER),
    ("GET", "/api/v1/virtual-clusters"): Row(ANY_USER),
    ("GET", "/api/v1/virtual-clusters/{name}"): Row(ANY_USER),
    ("POST", "/api/v1/virtual-clusters"): Row(
        admin_only(201), {"content": VC, "headers": YAML},
        stored=lambda api: "team-b" in {v.name for v in
                                        api.repository.list_virtual_clusters()}),
    ("PUT", "/api/v1/virtual-clusters/{name}"): Row(
        admin_only(200), {"content": CLOSED_TEAM, "headers": YAML},
        stored=lambda api: any(v.name == "team-a" and v.state is QueueStatus.CLOSED
                               for v in api.repository.list_virtual_clusters())),
    ("GET", "/api/v1/priority-classes"): Row(ANY_USER),
    ("POST", "/api/v1/priority-classes"): Row(
        admin_only(201), {"content": PC, "headers": YAML},
        stored=lambda api: "vip" in {p.name for p in api.repository.list_priority_classes()}),
    ("GET", "/api/v1/resource-flavors"): Row(ANY_USER),
    ("POST", "/api/v1/resource-flavors"): Row(
        admin_only(201), {"content": FLAVOR, "headers": YAML},
        stored=lambda api: "spot" in {f.name for f in api.repository.list_resource_flavors()}),
    ("POST", "/api/v1/users"): Row(
        admin_only(201), {"json": {"name": "carol", "queues": ["default"]}},
        stored=lambda api: api.repository.get_user("carol") is not None),
    ("GET", "/api/v1/users/me"): Row(ANY_USER),
    # Issue 21's admin changes (`url` names their targets).
    ("DELETE", "/api/v1/virtual-clusters/{name}"): Row(
        admin_only(204),
        stored=lambda api: "team-a" not in {v.name for v in
                                            api.repository.list_virtual_clusters()}),
    ("PUT", "/api/v1/priority-classes/{name}"): Row(
        admin_only(200), {"content": GOLD.replace("500", "700"), "headers": YAML},
        stored=lambda api: any(p.name == "gold" and p.value == 700
                               for p in api.repository.list_priority_classes())),
    ("DELETE", "/api/v1/priority-classes/{name}"): Row(
        admin_only(204),
        stored=lambda api: "gold" not in {p.name for p in
                                          api.repository.list_priority_classes()}),
    ("GET", "/api/v1/users"): Row(admin_only(200)),
    ("PATCH", "/api/v1/users/{name}"): Row(
        admin_only(200), {"json": {"queues": ["default", "team-a"]}},
        stored=lambda api: _user_queues(api, "bob") == ("default", "team-a")),
    ("DELETE", "/api/v1/users/{name}"): Row(
        admin_only(204), stored=lambda api: api.repository.get_user("bob") is None),
    ("POST", "/api/v1/users/{name}/tokens"): Row(admin_only(201)),
    ("DELETE", "/api/v1/users/{name}/tokens"): Row(
        admin_only(200),
        stored=lambda api: api.repository.authenticate(api.tokens["bob"]) is None),
    ("POST", "/api/v1/nodes/{name}/cordon"): Row(
        admin_only(200), stored=lambda api: not _schedulable(api, "gpu-0")),
    ("POST", "/api/v1/nodes/{name}/uncordon"): Row(admin_only(200)),
    ("POST", "/api/v1/nodes/{name}/drain"): Row(
        admin_only(200), stored=lambda api: api.repository.draining_nodes() == ["gpu-0"]),
    ("POST", "/api/v1/jobs/{name}/priority"): Row(
        admin_only(200), {"json": {"priorityClass": "production"}},
        stored=lambda api: _priority(api, OWNED) == "production"),
    ("GET", "/api/v1/audit"): Row(admin_only(200)),
}

# Routes served outside the OpenAPI document that are not FastAPI's documentation: each
# has its row here, and goes through the matrix like the API's.
OUTSIDE_THE_DOCUMENT: dict[tuple[str, str], Row] = {
    ("GET", "/metrics"): Row(ANY_USER),  # Prometheus' exposition, not part of the API
}
ROWS = {**EXPECTATIONS, **OUTSIDE_THE_DOCUMENT}


def _user_queues(api: Api, name: str) -> tuple[str, ...] | None:
    user = api.repository.get_user(name)
    return None if user is None else user.queues


def _schedulable(api: Api, node: str) -> bool:
    return any(n.name == node and n.schedulable for n in api.repository.list_nodes())


def _priority(api: Api, name: str) -> str | None:
    job = api.repository.get_job(name)
    return None if job is None else job.priority_class


#: The target of each kind of path that names one: a stored virtual cluster, priority class,
#: node and user; a job (`OWNED`) otherwise.
TARGETS = {"/api/v1/virtual-clusters/": "team-a", "/api/v1/priority-classes/": "gold",
           "/api/v1/nodes/": "gpu-0", "/api/v1/users/": "bob"}


def url(path: str) -> str:
    name = next((t for prefix, t in TARGETS.items() if path.startswith(prefix)), OWNED)
    return path.format(name=name)


def documented_endpoints(api: Api) -> set[tuple[str, str]]:
    answer = api.client.get("/openapi.json")
    assert answer.status_code == 200
    return {(method.upper(), path) for path, operations in answer.json()["paths"].items()
            for method in operations if method in HTTP_METHODS}


def snapshot(api: Api) -> dict[str, Any]:
    """Everything a request could change in the store, comparable with `==`."""
    repo = api.repository
    jobs = repo.list_jobs(limit=10_000)
    return {
        "jobs": [(j.name, j.user, j.queue, j.state, tuple((t.ref, t.state) for t in j.tasks))
                 for j in jobs],
        "events": {j.name: len(repo.job_events(j.name)) for j in jobs},
        "nodes": repo.list_nodes(),
        "virtual_clusters": repo.list_virtual_clusters(),
        "priority_classes": repo.list_priority_classes(),
        "users": {name: repo.get_user(name) for name in ("alice", "bob", "root", "carol")},
    }


@pytest.fixture
def owned(api: Api) -> Api:
    """The `api` with alice's job `OWNED` stored and its first task's log written."""
    answer = api.submit(job_yaml(OWNED), who="alice")
    assert answer.status_code == 201, answer.text
    assert api.log_dir is not None
    api.log_dir.mkdir(parents=True, exist_ok=True)
    (api.log_dir / f"{OWNED}.worker-0.out").write_text(OWNED_LOG)
    api.tokens["task"] = api.repository.issue_token("alice", job=OWNED)
    assert api.request("POST", "/api/v1/priority-classes", "root", content=GOLD,
                       headers=YAML).status_code == 201
    return api


def test_every_endpoint_has_an_auth_expectation(api: Api) -> None:
    documented = documented_endpoints(api)
    missing = sorted(documented - EXPECTATIONS.keys())
    assert not missing, "\n".join(f"endpoint {method} {path} has no auth expectation"
                                  for method, path in missing)
    stale = sorted(EXPECTATIONS.keys() - documented)
    assert not stale, f"auth expectations for endpoints the app no longer has: {stale}"


def test_no_route_hides_outside_the_openapi_document(api: Api) -> None:
    """A route left out of the schema (`include_in_schema=False`) would escape the matrix:
    only the documentation's routes and the dashboard's page may be outside it."""
    documented = documented_endpoints(api)
    served = set()
    for route in api.client.app.routes:  # type: ignore[attr-defined]
        methods = getattr(route, "methods", None) or set()
        served |= {(m, route.path) for m in methods if m not in {"HEAD", "OPTIONS"}}
        outside = DOCS_ROUTES | OUTSIDE_THE_DOCUMENT.keys()
        if isinstance(route, APIRoute) and not {(m, route.path) for m in methods} & outside:
            assert route.include_in_schema, f"{route.path} is left out of the OpenAPI document"
    allowed = DOCS_ROUTES | OUTSIDE_THE_DOCUMENT.keys()
    assert served - documented <= allowed, sorted(served - documented - allowed)
    assert not documented & OUTSIDE_THE_DOCUMENT.keys()


@pytest.mark.parametrize("method_path", [("GET", "/openapi.json"), ("GET", "/docs"),
                                         ("GET", "/redoc"), ("GET", "/")],
                         ids=lambda mp: mp[1])
def test_documentation_needs_no_token(api: Api, method_path: tuple[str, str]) -> None:
    method, path = method_path
    assert api.request(method, path, None).status_code == 200


CASES = [pytest.param(method, path, role, id=f"{method} {path} as {role}")
         for (method, path) in ROWS for role in ROLES]


@pytest.mark.parametrize(("method", "path", "role"), CASES)
def test_auth_matrix(owned: Api, method: str, path: str, role: str) -> None:
    api = owned
    row = ROWS[(method, path)]
    expected = row.expected[role]
    before = snapshot(api)
    answer = api.request(method, url(path), ROLES[role], **row.request)
    assert answer.status_code == expected, f"{method} {path} as {role}: {answer.text}"
    if expected in (401, 403):
        assert answer.json()["errors"][0]["message"], answer.text
        assert OWNED_LOG not in answer.text
        assert snapshot(api) == before, f"a refused {method} {path} changed the store"
        if row.stored is not None:
            assert not row.stored(api), f"a refused {method} {path} stored its write"
    if expected == 401:
        assert answer.headers["WWW-Authenticate"] == "Bearer"
        assert answer.json()["errors"][0]["path"] == "header.Authorization"
    if 200 <= expected < 300:
        if row.stored is not None:
            assert row.stored(api), f"{method} {path} answered {expected} but stored nothing"
        elif method == "GET":
            assert snapshot(api) == before, f"a GET {path} changed the store"
        if path.endswith("/logs"):
            assert answer.text == OWNED_LOG


@pytest.mark.parametrize(("method", "path"), list(ROWS), ids=[f"{m} {p}" for m, p in ROWS])
def test_bad_credentials_are_refused_like_none(owned: Api, method: str, path: str) -> None:
    """An unknown token, a revoked admin token, a token sent with another scheme and an
    empty Bearer are all 401 with `WWW-Authenticate: Bearer`, and change nothing."""
    api = owned
    row = ROWS[(method, path)]
    revoked = api.repository.issue_token("root")
    assert api.client.get("/api/v1/users/me",
                          headers={"Authorization": f"Bearer {revoked}"}).status_code == 200
    assert api.repository.revoke_token(revoked)
    credentials = {
        "unknown token": "Bearer not-a-token",
        "revoked admin token": f"Bearer {revoked}",
        "Basic scheme": f"Basic {api.tokens['root']}",
        "bare token": api.tokens["root"],
        "empty Bearer": "Bearer ",
    }
    expected = row.expected["anonymous"]
    for what, authorization in credentials.items():
        before = snapshot(api)
        headers = {**row.request.get("headers", {}), "Authorization": authorization}
        answer = api.client.request(method, url(path), **{**row.request, "headers": headers})
        assert answer.status_code == expected, f"{method} {path} with {what}: {answer.text}"
        if expected == 401:
            assert answer.headers["WWW-Authenticate"] == "Bearer", what
            assert snapshot(api) == before, f"{method} {path} with {what} changed the store"
            if row.stored is not None:
                assert not row.stored(api), f"{method} {path} with {what} stored its write"


# Requests the matrix's rows do not cover: the same endpoints refused for another reason.
# None of them may change the store.
def refusal(who: str | None, method: str, target: str, request: dict[str, Any], status: int,
            **param: Any) -> Any:
    return pytest.param(who, method, target, request, status,
                        **{"id": f"{method} {target} as {who or 'anonymous'}", **param})


MORE_REFUSALS = [
    # bob submits as alice; alice submits as bob; a user submits to a queue not theirs.
    refusal("bob", "POST", "/api/v1/jobs",
            {"content": job_yaml("forged", user="alice"), "headers": YAML}, 403),
    refusal("alice", "POST", "/api/v1/jobs",
            {"content": job_yaml("forged", user="bob"), "headers": YAML}, 403),
    refusal("bob", "POST", "/api/v1/jobs",
            {"content": job_yaml("forged", queue="team-a"), "headers": YAML}, 403),
    # bob reads another task's, or the other stream's, or the followed log of alice's job.
    refusal("bob", "GET", f"/api/v1/jobs/{OWNED}/logs?task=worker-1&stream=stderr", {}, 403),
    refusal("bob", "GET", f"/api/v1/jobs/{OWNED}/logs?follow=true", {}, 403),
    # A non-admin cannot make themselves (or anyone) an admin.
    refusal("alice", "POST", "/api/v1/users", {"json": {"name": "alice2", "admin": True}}, 403),
    # Authentication comes before the body is looked at: no token → 401, not 422/415.
    refusal(None, "POST", "/api/v1/jobs", {"content": "not: [a job", "headers": YAML}, 401),
    refusal(None, "POST", "/api/v1/jobs",
            {"content": job_yaml("x"), "headers": {"Content-Type": "text/plain"}}, 401),
    refusal(None, "POST", "/api/v1/users", {"json": {"name": "!!", "extra": 1}}, 401),
    refusal("bob", "PUT", "/api/v1/nodes", {"content": "kind: Nonsense", "headers": YAML}, 403),
    refusal("bob", "POST", "/api/v1/users", {"json": {"name": "!!"}}, 403),
    refusal(None, "POST", "/api/v1/users",
            {"content": b"{not json", "headers": {"Content-Type": "application/json"}}, 401,
            id="POST /api/v1/users as anonymous, malformed JSON"),
]


@pytest.mark.parametrize(("who", "method", "target", "request_kwargs", "expected"),
                         MORE_REFUSALS)
def test_more_refusals_store_nothing(owned: Api, who: str | None, method: str, target: str,
                                     request_kwargs: dict[str, Any], expected: int) -> None:
    api = owned
    before = snapshot(api)
    answer = api.request(method, target, who, **request_kwargs)
    assert answer.status_code == expected, answer.text
    assert OWNED_LOG not in answer.text
    assert snapshot(api) == before
    assert api.repository.get_job("forged") is None
    assert api.repository.get_user("alice2") is None
