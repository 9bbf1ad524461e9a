"""API-wide fuzzing: Schemathesis over every operation `/openapi.json` lists, as an ordinary
user and as an admin, against the in-process app on each store. Whatever the requests —
valid by the schema, and invalid (wrong types, missing fields, odd bytes) — no answer is a
5xx, and every answer matches what the document declares: its status code, content type,
headers and body schema. The operations are read from the live document, so a route added
later is fuzzed without touching this file.

Bounded for CI: `EXAMPLES` cases per operation, generation mode and store, each sent as both
users. (Schemathesis' own pytest integration, `schemathesis.pytest.from_fixture`, does not
run under this project's pytest; its strategies are driven by Hypothesis here instead.)"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from server_helpers import Api, job_yaml

EXAMPLES = 10
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance]
USERS = ("alice", "root")  # an ordinary user, who owns the job `train`; an admin


def fuzz(api: Api, operation: schemathesis.APIOperation, mode: GenerationMode) -> bool:
    """Whether there was anything to send: an operation whose every input is valid (none, or
    only free strings) has no invalid request to make (negative mode)."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def each(case: schemathesis.Case) -> None:
        if isinstance(case.query, dict) and "watch" in case.query:
            # A watch streams until the client leaves, and the in-process client reads an
            # answer whole: it is fuzzed as a list (tests/e2e/test_job_watch_live.py has it).
            case.query["watch"] = "false"
        for who in USERS:
            case.call_and_validate(headers=api.headers(who), checks=CHECKS)

    try:
        each()
    except Unsatisfiable:
        if mode is GenerationMode.POSITIVE:
            raise
        return False
    return True


def test_every_operation_answers_by_its_schema_and_never_5xx(api: Api) -> None:
    # Something for the by-name routes to find besides the fuzzer's random names.
    assert api.submit(job_yaml("train", replicas=1)).status_code == 201
    schema = schemathesis.openapi.from_asgi("/openapi.json", api.client.app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15  # the whole document, not a part of it
    invalid = [op.label for op in operations if fuzz(api, op, GenerationMode.NEGATIVE)]
    valid = [op.label for op in operations if fuzz(api, op, GenerationMode.POSITIVE)]
    assert len(valid) == len(operations)
    assert {"POST /api/v1/jobs", "PUT /api/v1/nodes", "GET /api/v1/jobs"} <= set(invalid)
