"""The OpenAPI document describes every endpoint, and the health check needs no token."""

from __future__ import annotations

from server_helpers import Api


def test_openapi_lists_the_endpoints(api: Api) -> None:
    answer = api.client.get("/openapi.json")
    assert answer.status_code == 200
    document = answer.json()
    paths = {path: set(ops) for path, ops in document["paths"].items()}
    assert paths == {
        "/healthz": {"get"},
        "/api/v1/jobs": {"get", "post"},
        "/api/v1/jobs/{name}": {"get", "delete"},
        "/api/v1/jobs/{name}/events": {"get"},
        "/api/v1/jobs/{name}/original": {"get"},
        "/api/v1/jobs/{name}/tasks": {"get"},
        "/api/v1/jobs/{name}/cancel": {"post"},
        "/api/v1/jobs/{name}/hold": {"post"},
        "/api/v1/jobs/{name}/release": {"post"},
        "/api/v1/jobs/{name}/requeue": {"post"},
        "/api/v1/jobs/{name}/logs": {"get"},
        "/api/v1/jobs/{name}/virtual-clusters": {"get", "post"},
        "/api/v1/nodes": {"get", "put"},
        "/api/v1/placements": {"get"},
        "/api/v1/virtual-clusters": {"get", "post"},
        "/api/v1/virtual-clusters/{name}": {"get", "put", "delete"},
        "/api/v1/cluster": {"get"},
        "/api/v1/usage": {"get"},
        "/api/v1/priority-classes": {"get", "post"},
        "/api/v1/resource-flavors": {"get", "post"},
        "/api/v1/users": {"get", "post"},
        "/api/v1/users/me": {"get"},
        # Issue 21's admin changes.
        "/api/v1/priority-classes/{name}": {"put", "delete"},
        "/api/v1/users/{name}": {"patch", "delete"},
        "/api/v1/users/{name}/tokens": {"post", "delete"},
        "/api/v1/nodes/{name}/cordon": {"post"},
        "/api/v1/nodes/{name}/uncordon": {"post"},
        "/api/v1/nodes/{name}/drain": {"post"},
        "/api/v1/jobs/{name}/priority": {"post"},
        "/api/v1/audit": {"get"},
    }
    submit = document["paths"]["/api/v1/jobs"]["post"]
    assert {"application/yaml", "application/json"} <= set(submit["requestBody"]["content"])
    assert {"201", "200", "409", "422"} <= set(submit["responses"])
    assert "HTTPBearer" in document["components"]["securitySchemes"]
    assert "JobOut" in document["components"]["schemas"]
