"""The stack around every route (issue 18): FastAPI's OpenTelemetry hooks are off, so no
request asks OpenTelemetry for its providers, and Shoal's own checks (NUL refusal, JSON 500)
are one middleware that still answers both as before."""

from __future__ import annotations

import json

import pytest
from opentelemetry import _logs, metrics, trace
from server_helpers import Api

from shoal.server.errors import RequestGuard


def test_no_request_consults_opentelemetry(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    for module, getter in ((trace, "get_tracer_provider"), (metrics, "get_meter_provider"),
                           (_logs, "get_logger_provider")):
        real = getattr(module, getter)

        def counted(*args: object, _real: object = real, _name: str = getter) -> object:
            asked.append(_name)
            return _real(*args)  # type: ignore[operator]

        monkeypatch.setattr(module, getter, counted)
    assert api.request("GET", "/healthz", None).status_code == 200
    assert api.request("GET", "/api/v1/jobs", "alice").status_code == 200
    assert asked == []


def test_one_guard_refuses_nul_and_answers_internal_errors(api: Api) -> None:
    stack = api.client.app.middleware_stack  # type: ignore[attr-defined]
    guards = []
    while stack is not None:
        guards += [stack] if isinstance(stack, RequestGuard) else []
        stack = getattr(stack, "app", None)
    assert len(guards) == 1
    answer = api.request("GET", "/api/v1/jobs/a%00b", "alice")
    assert answer.status_code == 422
    assert json.loads(answer.text) == {"errors": [{"path": "path",
                                                   "message": "must not contain a NUL "
                                                              "character"}]}
    answer = api.request("GET", "/api/v1/jobs?queue=x%00", "alice")
    assert answer.status_code == 422 and json.loads(answer.text)["errors"][0]["path"] == \
        "query.queue"
