"""`POST /api/v1/jobs` is a direct route (`shoal.server.direct`): it reads its user, body and
`Idempotency-Key` itself. These pin what FastAPI's dependencies did, in their order (auth,
then the body, then the header), and that the OpenAPI document still describes the route."""

from __future__ import annotations

from server_helpers import Api, job_yaml

from shoal.server.jobs import MAX_IDEMPOTENCY_KEY

YAML = {"Content-Type": "application/yaml"}


def test_a_key_past_the_bound_is_refused_after_auth_and_body(api: Api) -> None:
    long_key = "k" * (MAX_IDEMPOTENCY_KEY + 1)
    answer = api.submit(job_yaml("long-key"), key=long_key)
    assert answer.status_code == 422
    assert answer.json() == {"errors": [{
        "path": "header.idempotency-key",
        "message": f"String should have at most {MAX_IDEMPOTENCY_KEY} characters"}]}
    assert api.repository.job_summary("long-key") is None
    anonymous = api.request("POST", "/api/v1/jobs", None, content=job_yaml("anon"),
                            headers={**YAML, "Idempotency-Key": long_key})
    assert anonymous.status_code == 401
    assert anonymous.headers["WWW-Authenticate"] == "Bearer"
    unreadable = api.request("POST", "/api/v1/jobs", "alice", content=job_yaml("bad-length"),
                             headers={**YAML, "Idempotency-Key": long_key,
                                      "Content-Length": "many"})
    assert unreadable.status_code == 400
    assert unreadable.json()["errors"][0]["path"] == "header.Content-Length"
    at_bound = api.submit(job_yaml("at-bound"), key="k" * MAX_IDEMPOTENCY_KEY)
    assert at_bound.status_code == 201
    assert at_bound.headers["Location"] == "/api/v1/jobs/at-bound"
    replay = api.submit(job_yaml("at-bound"), key="k" * MAX_IDEMPOTENCY_KEY)
    assert replay.status_code == 200
    assert replay.json()["metadata"]["name"] == "at-bound"


def test_the_openapi_document_still_describes_the_route(api: Api) -> None:
    operation = api.client.get("/openapi.json").json()["paths"]["/api/v1/jobs"]["post"]
    assert operation["security"] == [{"HTTPBearer": []}]
    header, = (p for p in operation["parameters"] if p["in"] == "header")
    assert header["name"] == "idempotency-key"
    assert header["schema"]["anyOf"][0]["maxLength"] == MAX_IDEMPOTENCY_KEY
    assert "application/yaml" in operation["requestBody"]["content"]
    for status in ("201", "200"):
        schema = operation["responses"][status]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/JobOut"}
    assert {"401", "403", "409", "413", "415", "422"} <= set(operation["responses"])
