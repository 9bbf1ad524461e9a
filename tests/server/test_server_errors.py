"""Every error is an API error: an exception no route expected answers a JSON 500 naming an
id, logs that id with the traceback, shows the client nothing of the exception, and leaves
a keep-alive connection open; and an error answer's size is bounded whatever it reports."""

from __future__ import annotations

import http.client
import json
import logging
import re

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from live_server import live_server
from server_helpers import Api

from shoal.server.errors import (
    MAX_ERRORS,
    MAX_MESSAGE,
    ApiError,
    ErrorItem,
    install_error_handlers,
)

INTERNAL = re.compile(r"internal error, id ([0-9a-f]{12})")
SECRET = "secret-value-of-another-user"


def boom(*_args: object, **_kwargs: object) -> None:
    raise RuntimeError(SECRET)


def assert_internal(response: object, caplog: pytest.LogCaptureFixture) -> None:
    assert getattr(response, "status_code", None) == 500
    text: str = getattr(response, "text")  # noqa: B009
    assert SECRET not in text and "Traceback" not in text
    body = json.loads(text)
    assert list(body) == ["errors"] and len(body["errors"]) == 1
    assert body["errors"][0]["path"] == ""
    match = INTERNAL.fullmatch(body["errors"][0]["message"])
    assert match is not None, body
    logged = [r for r in caplog.records if match.group(1) in r.getMessage()]
    assert len(logged) == 1, [r.getMessage() for r in caplog.records]
    assert logged[0].levelno == logging.ERROR and logged[0].exc_info is not None
    assert SECRET in str(logged[0].exc_info[1])


def test_an_unexpected_exception_in_a_sync_route_is_a_json_500(
        api: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(api.repository, "list_job_summaries", boom)
    with caplog.at_level(logging.ERROR, logger="shoal.server"):
        assert_internal(api.request("GET", "/api/v1/jobs", "alice"), caplog)
    assert api.request("GET", "/healthz", None).status_code == 200


def test_an_unexpected_exception_in_an_async_dependency_is_a_json_500(
        api: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(api.repository, "authenticate", boom)
    with caplog.at_level(logging.ERROR, logger="shoal.server"):
        assert_internal(api.request("GET", "/api/v1/users/me", "alice"), caplog)


def test_each_internal_error_has_its_own_id(
        api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api.repository, "list_job_summaries", boom)
    messages = {api.request("GET", "/api/v1/jobs", "alice").json()["errors"][0]["message"]
                for _ in range(3)}
    assert len(messages) == 3


def test_the_connection_stays_open_after_an_internal_error(
        api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """Starlette's own 500 handling re-raises after answering, and uvicorn then closes the
    connection; here the client reuses it."""
    monkeypatch.setattr(api.repository, "list_job_summaries", boom)
    with live_server(api.client.app) as url:  # type: ignore[arg-type]
        connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=60)
        try:
            headers = api.headers("alice")
            connection.request("GET", "/api/v1/jobs", headers=headers)
            first = connection.getresponse()
            body = json.loads(first.read())
            assert first.status == 500 and INTERNAL.fullmatch(body["errors"][0]["message"])
            assert first.getheader("connection", "").lower() != "close"
            sock = connection.sock
            assert sock is not None
            connection.request("GET", "/api/v1/users/me", headers=headers)
            second = connection.getresponse()
            assert (second.status, json.loads(second.read())["name"]) == (200, "alice")
            assert connection.sock is sock  # the same connection, not a reconnect
        finally:
            connection.close()


def test_error_answers_are_bounded() -> None:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/many")
    async def many() -> None:
        raise ApiError(422, "", errors=[ErrorItem(path=f"spec.x[{i}]", message="v" * 100_000)
                                        for i in range(10_000)])

    response = TestClient(app).get("/many")
    errors = response.json()["errors"]
    assert response.status_code == 422
    assert len(errors) == MAX_ERRORS + 1 and "9950 more" in errors[-1]["message"]
    assert all(len(e["message"]) <= MAX_MESSAGE + 1 for e in errors)
    assert len(response.content) < 100_000


def test_the_document_gives_every_error_answer_the_error_shape(api: Api) -> None:
    document = api.client.get("/openapi.json").json()
    assert "HTTPValidationError" not in json.dumps(document)
    errors = [(path, method, status, answer)
              for path, operations in document["paths"].items()
              for method, operation in operations.items()
              for status, answer in operation["responses"].items() if status[0] in "45"]
    assert errors
    for path, method, status, answer in errors:
        assert answer["content"] == {
            "application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}
        }, (path, method, status)
    logs = document["paths"]["/api/v1/jobs/{name}/logs"]["get"]["responses"]
    assert set(logs["200"]["content"]) == {"text/plain"}
    assert {"400", "413"} <= set(document["paths"]["/api/v1/jobs"]["post"]["responses"])
