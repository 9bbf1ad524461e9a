"""Who may call what: every endpoint × {no token, bad token, owner, other user, admin}."""

from __future__ import annotations

from typing import Any

import pytest
from server_helpers import Api, job_yaml

YAML = {"Content-Type": "application/yaml"}
NODE = "apiVersion: shoal/v1\nkind: Node\nmetadata: {name: cpu-0}\nspec: {capacity: {cpu: 8}}\n"
VC = "apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: team-b}\n"
PC = "apiVersion: shoal/v1\nkind: PriorityClass\nmetadata: {name: vip}\nvalue: 50000\n"

# (method, url, request kwargs) → expected status for (no token, bad token, alice, bob, root).
# alice owns the job `owned`; bob is another user; root is an admin.
ENDPOINTS: list[tuple[str, str, dict[str, Any], tuple[int, int, int, int, int]]] = [
    ("GET", "/healthz", {}, (200, 200, 200, 200, 200)),
    ("POST", "/api/v1/jobs", {"content": job_yaml("new"), "headers": YAML},
     (401, 401, 201, 201, 201)),
    ("GET", "/api/v1/jobs", {}, (401, 401, 200, 200, 200)),
    ("GET", "/api/v1/jobs/owned", {}, (401, 401, 200, 200, 200)),
    ("GET", "/api/v1/jobs/owned/events", {}, (401, 401, 200, 200, 200)),
    ("POST", "/api/v1/jobs/owned/cancel", {}, (401, 401, 200, 403, 200)),
    ("GET", "/api/v1/nodes", {}, (401, 401, 200, 200, 200)),
    ("PUT", "/api/v1/nodes", {"content": NODE, "headers": YAML}, (401, 401, 403, 403, 200)),
    ("GET", "/api/v1/virtual-clusters", {}, (401, 401, 200, 200, 200)),
    ("POST", "/api/v1/virtual-clusters", {"content": VC, "headers": YAML},
     (401, 401, 403, 403, 201)),
    ("GET", "/api/v1/priority-classes", {}, (401, 401, 200, 200, 200)),
    ("POST", "/api/v1/priority-classes", {"content": PC, "headers": YAML},
     (401, 401, 403, 403, 201)),
    ("POST", "/api/v1/users", {"json": {"name": "carol", "queues": ["default"]}},
     (401, 401, 403, 403, 201)),
    ("GET", "/api/v1/users/me", {}, (401, 401, 200, 200, 200)),
]
CALLERS = (None, "bad", "alice", "bob", "root")

CASES = [pytest.param(method, url, kwargs, who, expected[i], id=f"{method} {url} as {who}")
         for method, url, kwargs, expected in ENDPOINTS for i, who in enumerate(CALLERS)]


@pytest.mark.parametrize(("method", "url", "kwargs", "who", "expected"), CASES)
def test_auth_matrix(api: Api, method: str, url: str, kwargs: dict[str, Any],
                     who: str | None, expected: int) -> None:
    assert api.submit(job_yaml("owned")).status_code == 201
    api.tokens["bad"] = "not-a-token"
    answer = api.request(method, url, who, **kwargs)
    assert answer.status_code == expected, answer.text
    if expected == 401:
        assert answer.headers["WWW-Authenticate"] == "Bearer"
        assert answer.json()["errors"][0]["path"] == "header.Authorization"
    if expected == 403:
        assert answer.json()["errors"][0]["message"]


def test_admin_changes_are_visible(api: Api) -> None:
    assert api.request("PUT", "/api/v1/nodes", "root", content=NODE, headers=YAML
                       ).status_code == 200
    nodes = {n["name"]: n for n in api.request("GET", "/api/v1/nodes", "bob").json()}
    assert nodes["cpu-0"]["capacity"] == {"cpu": "8"}
    assert nodes["gpu-0"]["labels"] == {"gpu-type": "a100", "kubernetes.io/hostname": "gpu-0"}
    assert api.request("POST", "/api/v1/virtual-clusters", "root", content=VC, headers=YAML
                       ).status_code == 201
    vcs = [v["name"] for v in api.request("GET", "/api/v1/virtual-clusters", "bob").json()]
    assert vcs == ["team-a", "team-b"]
    assert api.request("POST", "/api/v1/priority-classes", "root", content=PC, headers=YAML
                       ).status_code == 201
    classes = api.request("GET", "/api/v1/priority-classes", "bob").json()
    assert classes[-1] == {"name": "vip", "value": 50000, "description": "",
                           "globalDefault": False, "preemptionPolicy": "PreemptLowerPriority"}
    assert "normal" in [c["name"] for c in classes]
    # The control plane was told of both catalog changes (and of nothing for the nodes).
    assert api.scheduler.catalog_reloads == 2


def test_new_user_token_works_once_issued(api: Api) -> None:
    created = api.request("POST", "/api/v1/users", "root",
                          json={"name": "carol", "queues": ["team-a"]})
    assert created.status_code == 201
    body = created.json()
    assert body["name"] == "carol" and body["queues"] == ["team-a"] and not body["admin"]
    api.tokens["carol"] = body["token"]
    me = api.request("GET", "/api/v1/users/me", "carol").json()
    assert me == {"name": "carol", "admin": False, "queues": ["team-a"]}
    assert api.submit(job_yaml("c1", queue="team-a"), who="carol").status_code == 201
    assert api.submit(job_yaml("c2"), who="carol").status_code == 403
