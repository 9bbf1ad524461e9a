"""Hostile inputs against the in-process app: what one request could do to the server today
(issue 14) is answered with a small 4xx that names a path, and nothing is stored.

The huge `replicas` cases, an alias bomb, nesting 50,000 deep in YAML and JSON, a 100 MB
body, non-finite numbers in every quantity, integers of 2**63 and 2**70 in every integer
field, and `count: 10**7` on `PUT /nodes`. The same crash cases are sent to a real `shoal up`
in `tests/e2e/test_hostile_shoal_up.py`."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from server_helpers import Api
from starlette.requests import Request

from shoal.server.body import raw_body
from shoal.server.errors import ApiError
from shoal.server.models import MAX_QUEUE_NAME, MAX_USER_QUEUES
from shoal.spec.limits import Limits

#: The largest answer a refusal may be: bounded, whatever the request.
SMALL = 16 * 1024
MiB = 1024 * 1024

JOB: dict[str, Any] = {
    "apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": "hostile"},
    "spec": {"schedulerName": "shoal", "taskGroups": [
        {"name": "worker", "replicas": 2, "command": ["true"],
         "resources": {"cpu": "1", "memory": "1Gi", "gpu": 1}}]}}
NODE: dict[str, Any] = {
    "apiVersion": "shoal/v1", "kind": "Node", "metadata": {"name": "extra"},
    "spec": {"capacity": {"cpu": 8, "memory": "64Gi", "gpu": 2}}}
VC: dict[str, Any] = {
    "apiVersion": "shoal/v1", "kind": "VirtualCluster", "metadata": {"name": "vc"},
    "spec": {"weight": 1}}
PC: dict[str, Any] = {
    "apiVersion": "shoal/v1", "kind": "PriorityClass", "metadata": {"name": "pc"}, "value": 1}

ROUTES = {"Job": ("POST", "/api/v1/jobs", "alice"), "Node": ("PUT", "/api/v1/nodes", "root"),
          "VirtualCluster": ("POST", "/api/v1/virtual-clusters", "root"),
          "PriorityClass": ("POST", "/api/v1/priority-classes", "root")}
BASES = {"Job": JOB, "Node": NODE, "VirtualCluster": VC, "PriorityClass": PC}


def patched(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`base` with `value` at the dotted `path` (`spec.taskGroups.0.replicas`), creating
    mappings on the way."""
    out = copy.deepcopy(base)
    *parents, last = path.split(".")
    here: Any = out
    for part in parents:
        here = here[int(part)] if part.isdigit() else here.setdefault(part, {})
    here[int(last) if last.isdigit() else last] = value
    return out


def send(api: Api, kind: str, body: str | bytes, content_type: str,
         **headers: str) -> Any:
    method, url, who = ROUTES[kind]
    return api.request(method, url, who, content=body,
                       headers={"Content-Type": content_type, **headers})


def refused(answer: Any, *paths: str) -> list[dict[str, Any]]:
    """The errors of a bounded 4xx, each naming a path; `paths` among them if given."""
    assert 400 <= answer.status_code < 500, answer.text[:2000]
    assert len(answer.content) < SMALL, f"{len(answer.content)} bytes"
    errors: list[dict[str, Any]] = answer.json()["errors"]
    assert errors and all(e["path"] for e in errors), errors
    named = {e["path"] for e in errors}
    assert set(paths) <= named, (paths, errors)
    return errors


def nothing_stored(api: Api) -> None:
    assert api.repository.get_job("hostile") is None
    assert {n.name for n in api.repository.list_nodes()} == {"gpu-0", "gpu-1"}
    assert "vc" not in {vc.name for vc in api.repository.list_virtual_clusters()}
    assert "pc" not in {pc.name for pc in api.repository.list_priority_classes()}


def as_json(data: dict[str, Any]) -> str:
    return json.dumps(data)


def as_yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data)


ENCODINGS = {"json": (as_json, "application/json"), "yaml": (as_yaml, "application/yaml")}


# ---- one request that would have taken the server down ------------------------------------

@pytest.mark.parametrize("replicas", [1_000_000_000, 1_000_000, 2**70])
@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_huge_replicas_are_refused_by_their_field(api: Api, replicas: int,
                                                  encoding: str) -> None:
    encode, content_type = ENCODINGS[encoding]
    body = encode(patched(JOB, "spec.taskGroups.0.replicas", replicas))
    refused(send(api, "Job", body, content_type), "spec.taskGroups[0].replicas")
    nothing_stored(api)


def test_an_alias_bomb_is_refused_without_expanding(api: Api) -> None:
    levels = ["a: &a [" + ", ".join(["lol"] * 10) + "]"]
    levels += [f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]"
               for i in range(8)]
    bomb = "\n".join(levels) + "\n"
    assert len(bomb) < 1000
    errors = refused(send(api, "Job", bomb, "application/yaml"), "body")
    assert "anchors (&name) are not allowed" in errors[0]["message"]


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("kind", sorted(ROUTES))
def test_nesting_50000_deep_is_refused_before_it_is_built(api: Api, kind: str,
                                                          encoding: str) -> None:
    body = "[" * 50_000 + "]" * 50_000
    errors = refused(send(api, kind, body, ENCODINGS[encoding][1]), "body")
    assert "nested more than 32 deep" in errors[0]["message"]
    deep_value = patched(BASES[kind], "metadata.labels", {})
    text = as_json(deep_value).replace("{}", '{"a": ' * 50_000 + "1" + "}" * 50_000)
    refused(send(api, kind, text, "application/json"), "body")
    assert api.request("GET", "/healthz", None).status_code == 200
    nothing_stored(api)


def test_deep_json_to_the_users_route_is_refused(api: Api) -> None:
    body = '{"name": ' + "[" * 50_000 + "]" * 50_000 + "}"
    answer = api.request("POST", "/api/v1/users", "root", content=body,
                         headers={"Content-Type": "application/json"})
    refused(answer)


@pytest.mark.parametrize(("queues", "path"), [
    (["q"] * (MAX_USER_QUEUES + 1), "body.queues"),
    (["q" * (MAX_QUEUE_NAME + 1)], "body.queues[0]"),
    ([""], "body.queues[0]"),
    (["ok", "team\x00a"], "body.queues[1]"),  # PostgreSQL refuses NUL: it was a 500 there
    (["tab\there"], "body.queues[0]"),
])
def test_a_users_queues_are_bounded(api: Api, queues: list[str], path: str) -> None:
    answer = api.request("POST", "/api/v1/users", "root",
                         content=json.dumps({"name": "eve", "queues": queues}),
                         headers={"Content-Type": "application/json"})
    assert answer.status_code == 422
    assert len(answer.content) < 16 * 1024
    assert path in {e["path"] for e in answer.json()["errors"]}
    assert api.repository.get_user("eve") is None


def test_a_100_mb_body_is_refused_from_its_length(api: Api) -> None:
    # The app answers from Content-Length alone; the test client sends less than it says.
    answer = send(api, "Job", b"{}", "application/json", **{"Content-Length": str(100 * MiB)})
    assert answer.status_code == 413
    assert refused(answer, "body")[0]["message"].startswith(
        "the body is larger than this server's limit of 4194304 bytes")


def test_a_content_length_of_5000_digits_is_refused_without_reading_it_as_a_number(
        api: Api) -> None:
    answer = send(api, "Job", b"{}", "application/json", **{"Content-Length": "9" * 5000})
    assert answer.status_code == 413
    assert len(answer.content) < 16 * 1024
    refused(answer, "body")
    nothing_stored(api)


def _request(headers: dict[str, str], chunks: Iterator[bytes]) -> tuple[Request, list[int]]:
    """A request whose body arrives in `chunks`; the list counts the chunks read."""
    read = [0]

    async def receive() -> dict[str, Any]:
        chunk = next(chunks, None)
        if chunk is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        read[0] += 1
        return {"type": "http.request", "body": chunk, "more_body": True}

    class App:
        class state:  # noqa: N801 - as FastAPI's app.state
            limits = Limits()

    scope = {"type": "http", "method": "POST", "path": "/api/v1/jobs", "app": App,
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    return Request(scope, receive), read


@pytest.mark.parametrize("declared", [True, False])
def test_a_100_mb_body_is_not_read_past_the_limit(declared: bool) -> None:
    chunks = (b"x" * MiB for _ in range(100))
    headers = {"content-type": "application/yaml"}
    if declared:
        headers["content-length"] = str(100 * MiB)
    request, read = _request(headers, chunks)
    with pytest.raises(ApiError) as info:
        asyncio.run(raw_body(request))
    assert info.value.status == 413 and info.value.errors[0].path == "body"
    # Declared: nothing is read. Chunked: reading stops once past 4 MiB.
    assert read[0] == (0 if declared else 5)


# ---- numbers where they are read ----------------------------------------------------------

QUANTITIES = {
    "Job": ["spec.taskGroups.0.resources.cpu", "spec.taskGroups.0.resources.memory",
            "spec.taskGroups.0.resources.gpu", "spec.minResources.cpu",
            "spec.virtualCluster.flexibleResourceMin.gpu",
            "spec.virtualCluster.flexibleResourceMax.gpu"],
    "Node": ["spec.capacity.cpu", "spec.capacity.memory", "spec.allocatable.gpu"],
    "VirtualCluster": ["spec.min.gpu", "spec.max.cpu", "spec.flexibleResourceMin.memory",
                       "spec.flexibleResourceMax.gpu"],
}
NUMBERS = {"Job": ["metadata.creationTimestamp", "spec.virtualCluster.flexibleIdleTimeout"],
           "VirtualCluster": ["spec.flexibleIdleTimeout"]}


def field_path(dotted: str) -> str:
    """`spec.taskGroups.0.cpu` → `spec.taskGroups[0].cpu`, as the API names fields."""
    out = ""
    for part in dotted.split("."):
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), "1e999",
                                   "Infinity", "NaN", ".inf", "9" * 5000])
def test_non_finite_and_absurd_numbers_are_refused_in_every_quantity(
        api: Api, value: float | str) -> None:
    for kind, paths in [*QUANTITIES.items(), *NUMBERS.items()]:
        for path in paths:
            data = patched(BASES[kind], path, value)
            # YAML names the field; JSON has no literal for infinity or NaN, so json.dumps
            # writes `Infinity` and the body is refused as not JSON.
            refused(send(api, kind, as_yaml(data), "application/yaml"), field_path(path))
            json_path = "body" if isinstance(value, float) else field_path(path)
            refused(send(api, kind, as_json(data), "application/json"), json_path)
            key = path.split(".")[-1]
            literal = as_json(patched(BASES[kind], path, 0)).replace(
                f'"{key}": 0', f'"{key}": 1e999')
            refused(send(api, kind, literal, "application/json"), field_path(path))
    nothing_stored(api)


INTEGERS = {
    "Job": ["spec.taskGroups.0.replicas", "spec.taskGroups.0.taskRetryCount",
            "spec.jobRetryCount", "spec.minAvailable", "spec.completion.minSucceeded",
            "spec.completion.minFailed", "spec.taskGroups.0.completion.minSucceeded",
            "spec.elastic.minReplicas", "spec.elastic.maxReplicas",
            "spec.elastic.step.factor"],
    "Node": ["spec.count"],
    "VirtualCluster": ["spec.weight"],
    "PriorityClass": ["value"],
}


ELASTIC_JOB = patched(JOB, "spec.elastic", {"minReplicas": 1})


@pytest.mark.parametrize("value", [2**63, 2**70, -(2**63) - 1])
@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_integers_outside_64_bits_are_refused_in_every_integer_field(
        api: Api, encoding: str, value: int) -> None:
    encode, content_type = ENCODINGS[encoding]
    for kind, paths in INTEGERS.items():
        for path in paths:
            base = ELASTIC_JOB if path.startswith("spec.elastic.") else BASES[kind]
            refused(send(api, kind, encode(patched(base, path, value)), content_type),
                    field_path(path))
    nothing_stored(api)


def test_ten_million_nodes_are_refused(api: Api) -> None:
    for encode, content_type in ENCODINGS.values():
        answer = send(api, "Node", encode(patched(NODE, "spec.count", 10**7)), content_type)
        errors = refused(answer, "spec.count")
        assert "at most 10000" in errors[0]["message"]
    nothing_stored(api)


def test_a_job_that_could_never_launch_is_refused_with_its_path(api: Api) -> None:
    no_command = patched(JOB, "spec.taskGroups.0.command", [])
    refused(send(api, "Job", as_json(no_command), "application/json"),
            "spec.taskGroups[0].command")
    bad_env = patched(JOB, "spec.taskGroups.0.env", {"A=B": "1", "": "2"})
    refused(send(api, "Job", as_json(bad_env), "application/json"),
            "spec.taskGroups[0].env['A=B']", "spec.taskGroups[0].env")
    nothing_stored(api)


@pytest.mark.parametrize(("kind", "path"), [
    ("Job", "spec.taskGroups.0.command.0"), ("Job", "spec.taskGroups.0.env.OK"),
    ("Job", "spec.taskGroups.0.nodeSelector.a"), ("Node", "metadata.labels.a"),
    ("PriorityClass", "description"), ("VirtualCluster", "spec.parent"),
])
def test_a_nul_byte_is_refused_in_any_string(api: Api, kind: str, path: str) -> None:
    # PostgreSQL cannot store one, and no process can be given one.
    for encoding in ("json", "yaml"):
        encode, content_type = ENCODINGS[encoding]
        body = encode(patched(BASES[kind], path, "x\0y"))
        refused(send(api, kind, body, content_type), field_path(path))
    nothing_stored(api)


def test_a_parse_error_names_the_body_and_a_duplicate_key_its_path(api: Api) -> None:
    errors = refused(send(api, "Job", "kind: [", "application/yaml"), "body")
    assert errors[0]["message"].startswith("invalid YAML at line ")
    refused(send(api, "Job", '{"kind": "\\uZZZZ"}', "application/json"), "body")
    duplicate = as_json(JOB).replace('"replicas": 2', '"replicas": 2, "replicas": 3')
    refused(send(api, "Job", duplicate, "application/json"), "spec.taskGroups[0].replicas")


def test_a_document_with_many_faults_gets_a_bounded_answer(api: Api) -> None:
    groups = [{"name": f"g{i}", "replicas": -1, "resources": {"cpu": "x" * 100}}
              for i in range(2000)]
    data = patched(JOB, "spec.taskGroups", groups)
    errors = refused(send(api, "Job", as_json(data), "application/json"))
    assert len(errors) == 17 and errors[-1]["message"].endswith("more issues")


@pytest.mark.parametrize(("url", "path"), [
    ("/api/v1/jobs?state=Succeeded&queue=team%00a", "query.queue"),
    ("/api/v1/jobs?user=%00", "query.user"),
    ("/api/v1/audit?actor=ro%00ot", "query.actor"),
    ("/api/v1/jobs/tr%00ain", "path"),
    ("/api/v1/jobs/train/events", None)])
def test_a_nul_in_a_path_or_query_is_refused_by_name(api: Api, url: str,
                                                      path: str | None) -> None:
    # PostgreSQL refuses NUL in text: such a lookup was a 500 there (found by the fuzz test).
    answer = api.request("GET", url, "root")
    if path is None:  # the same route without a NUL: answered as usual
        assert answer.status_code == 404, answer.text
        return
    assert answer.status_code == 422, answer.text
    assert refused(answer, path)[0]["message"] == "must not contain a NUL character"


@pytest.mark.parametrize(("method", "url", "body", "path"), [
    ("GET", "/api/v1/audit?after=5614595018", None, "query.after"),  # past PostgreSQL's int4
    ("POST", "/api/v1/jobs/any/priority", {"priorityClass": "v\u0000ip"}, "body.priorityClass"),
])
def test_admin_inputs_past_what_the_store_holds_are_refused(
        api: Api, method: str, url: str, body: dict[str, str] | None, path: str) -> None:
    answer = api.request(method, url, "root", json=body)
    assert answer.status_code == 422, answer.text
    refused(answer, path)
