"""Reading a request body of `shoal/v1` documents (YAML or JSON) into `shoal.api` objects.

YAML goes through `shoal.spec.load_text`, JSON through `shoal.spec.load_json` (the json
module: faster, and JSON read as JSON), both with the same validation; every issue found
becomes one `{"path", "message"}` entry of a 422 answer. The content type must say
YAML or JSON (415 otherwise).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from shoal.server.errors import ApiError, ErrorItem
from shoal.spec import SpecBundle, SpecError, load_json, load_text

YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")
JSON_TYPES = ("application/json",)
Model = TypeVar("Model", bound=BaseModel)

#: The request body of the routes that take documents, for the OpenAPI document.
SPEC_BODY = {
    "requestBody": {
        "required": True,
        "description": "`shoal/v1` documents, as YAML or JSON.",
        "content": {
            "application/yaml": {"schema": {"type": "string"}},
            "text/yaml": {"schema": {"type": "string"}},
            "application/json": {"schema": {"type": "object"}},
        },
    },
}


def parse_json_body(body: tuple[str, bytes], model: type[Model]) -> Model:
    """A JSON body validated into `model`: 415 for another content type, 422 with one
    `body.<field>` entry per problem."""
    content_type, data = body
    if content_type not in JSON_TYPES:
        raise ApiError(415, f"expected application/json, got {content_type or 'none'}",
                       "header.Content-Type")
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        raise ApiError(422, "invalid request body", errors=[
            ErrorItem(path=".".join(["body", *(str(p) for p in e["loc"])]), message=e["msg"])
            for e in exc.errors()]) from None


async def raw_body(request: Request) -> tuple[str, bytes]:
    """The content type (without parameters) and the body bytes; a dependency, so that the
    routes themselves can stay synchronous."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return content_type, await request.body()


def load_body(body: tuple[str, bytes], *, kind: str, known_queues: Collection[str] = (),
              known_nodes: Collection[str] = (),
              known_priority_classes: Collection[str] = ()) -> SpecBundle:
    content_type, data = body
    if content_type not in YAML_TYPES + JSON_TYPES:
        raise ApiError(415, f"unsupported content type {content_type or '(none)'!r}; send "
                            "application/yaml, text/yaml or application/json",
                       "header.Content-Type")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, f"the body is not UTF-8: {exc}") from None
    if not text.strip():
        raise ApiError(422, f"the body is empty; expected a {kind} document")
    try:
        load = load_json if content_type in JSON_TYPES else load_text
        bundle = load(text, "request", known_queues=known_queues, known_nodes=known_nodes,
                      known_priority_classes=known_priority_classes)
    except SpecError as exc:
        errors = [ErrorItem(path=issue.path or None,
                            message=issue.message if issue.document <= 1
                            else f"document {issue.document}: {issue.message}")
                  for issue in exc.issues]
        raise ApiError(422, "invalid spec", errors=errors) from None
    others = {"Job": len(bundle.jobs), "Node": len(bundle.nodes),
              "VirtualCluster": len(bundle.virtual_clusters),
              "PriorityClass": len(bundle.priority_classes),
              "SchedulerProfile": int(bundle.profile is not None)}
    wrong = sorted(k for k, n in others.items() if n and k != kind)
    if wrong:
        raise ApiError(422, f"expected only {kind} documents here, got {', '.join(wrong)}",
                       "kind")
    if not others[kind]:
        raise ApiError(422, f"expected a {kind} document", "kind")
    return bundle
