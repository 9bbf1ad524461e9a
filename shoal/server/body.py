"""Reading a request body of `shoal/v1` documents (YAML or JSON), or of a job file another
system reads (`shoal.spec.imports`: a Slurm batch script as text/x-shellscript), into
`shoal.api` objects.

YAML goes through `shoal.spec.load_text`, JSON through `shoal.spec.load_json` (the json
module: faster, and JSON read as JSON), both with the same validation and the app's
`Limits` (`app.state.limits`); every issue found becomes one `{"path", "message"}` entry of
a 422 answer, the first `Limits.max_issues` of them. The content type must say YAML or JSON
(415 otherwise). A submitted job must be one that could be launched (`shoal.spec.launch`).

The body is read by `raw_body`, at most `Limits.max_body_bytes` of it: a larger one is
refused with 413 from its `Content-Length` before a byte is read, or, sent without one
(chunked), as soon as the bytes read pass the limit.

Every error names a path: a field's, `kind`, `header.Content-Type`, or `body` for the body
as a whole (its size, its encoding, a YAML or JSON syntax error: the line and column are in
the message; a document beyond the limits on depth or entries).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import PurePath
from typing import TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from shoal.server.errors import ApiError, ErrorItem, location
from shoal.spec import SpecBundle, SpecError, load_json, load_text
from shoal.spec.limits import DEFAULT_LIMITS, Limits

YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")
JSON_TYPES = ("application/json",)
#: A batch script (a Slurm `#SBATCH` script), read as a text like YAML is: the loader tells
#: a script (its first line `#!`) from YAML by its text.
SCRIPT_TYPES = ("text/x-shellscript", "application/x-sh", "text/x-sh")
#: The longest file name a `Content-Disposition` header may give (a script's job is named
#: after it when the script says no -J).
MAX_FILE_NAME = 255
_FILE_NAME = re.compile(r'filename="([^"]*)"|filename=([^;\s]+)')
Model = TypeVar("Model", bound=BaseModel)

#: The request body of the routes that take documents, for the OpenAPI document, and the
#: 413 that `raw_body` answers for a body past the limit.
SPEC_BODY = {
    "requestBody": {
        "required": True,
        "description": "`shoal/v1` documents, as YAML or JSON.",
        "content": {
            "application/yaml": {"schema": {"type": "string"}},
            "text/yaml": {"schema": {"type": "string"}},
            "application/json": {"schema": {"type": "object"}},
            "text/x-shellscript": {"schema": {"type": "string"}},
        },
    },
    "responses": {"413": {
        "description": "The body is larger than the server's limit (`--max-body-bytes`).",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }},
}


#: The path of an error about the body as a whole.
BODY = "body"
#: The longest path and message of one error item: an answer never grows with the input.
MAX_PATH = 200
MAX_MESSAGE = 500


@dataclass(frozen=True, slots=True)
class RawBody:
    """A request's body as `raw_body` read it, with the limits it is to be loaded under."""

    content_type: str
    """Without parameters, lower case; empty when the request had none."""
    data: bytes
    limits: Limits
    file_name: str | None = None
    """The file the body was read from, as `Content-Disposition: inline; filename="..."`
    gives it (its last component only); None when the request gave none."""


def app_limits(request: Request) -> Limits:
    """The limits `create_app` was given (the defaults for an app built without)."""
    limits = getattr(request.app.state, "limits", None)
    return limits if isinstance(limits, Limits) else DEFAULT_LIMITS


def parse_json_body(body: RawBody, model: type[Model]) -> Model:
    """A JSON body validated into `model`: 415 for another content type, 422 with one
    `body.<field>` entry per problem."""
    if body.content_type not in JSON_TYPES:
        raise ApiError(415, f"expected application/json, got {body.content_type or 'none'}",
                       "header.Content-Type")
    try:
        return model.model_validate_json(body.data)
    except ValidationError as exc:
        raise ApiError(422, "invalid request body", errors=[
            _item(location((BODY, *e["loc"])) or BODY, e["msg"])
            for e in exc.errors()[:body.limits.max_issues]]) from None


async def raw_body(request: Request) -> RawBody:
    """The content type (without parameters) and the body bytes, at most
    `Limits.max_body_bytes` of them (413 past that); a dependency, so that the routes
    themselves can stay synchronous."""
    limits = app_limits(request)
    most = limits.max_body_bytes
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    declared = request.headers.get("content-length")
    if declared is not None:
        digits = declared.strip()
        if not (digits.isascii() and digits.isdigit()):
            raise ApiError(400, f"Content-Length must be a number of bytes, got "
                                f"{declared[:40]!r}", "header.Content-Length")
        if len(digits) > len(str(most)) or int(digits) > most:  # no int() of 5,000 digits
            raise _too_large(most, f"{digits[:40]} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > most:
            raise _too_large(most, "more")
        chunks.append(chunk)
    return RawBody(content_type, b"".join(chunks), limits,
                   _file_name(request.headers.get("content-disposition", "")))


def _file_name(disposition: str) -> str | None:
    match = _FILE_NAME.search(disposition[:1024])
    if match is None:
        return None
    name = PurePath(match.group(1) or match.group(2) or "").name
    return name if 0 < len(name) <= MAX_FILE_NAME and name.isprintable() else None


def _too_large(most: int, given: str) -> ApiError:
    return ApiError(413, f"the body is larger than this server's limit of {most} bytes "
                         f"(got {given})", BODY)


def _item(path: str, message: str) -> ErrorItem:
    return ErrorItem(path=path if len(path) <= MAX_PATH else path[:MAX_PATH - 3] + "...",
                     message=message if len(message) <= MAX_MESSAGE
                     else message[:MAX_MESSAGE - 3] + "...")


def load_body(body: RawBody, *, kind: str, known_queues: Collection[str] = (),
              known_nodes: Collection[str] = (),
              known_priority_classes: Collection[str] = (),
              known_resource_flavors: Collection[str] = ()) -> SpecBundle:
    """The documents of `body`, all of `kind` (422 otherwise). Jobs must be launchable."""
    content_type, data, limits = body.content_type, body.data, body.limits
    if content_type not in YAML_TYPES + JSON_TYPES + SCRIPT_TYPES:
        raise ApiError(415, f"unsupported content type {content_type or '(none)'!r}; send "
                            "application/yaml, text/yaml, application/json or (a batch "
                            "script) text/x-shellscript",
                       "header.Content-Type")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, f"the body is not UTF-8: {exc}", BODY) from None
    if not text.strip():
        raise ApiError(422, f"the body is empty; expected a {kind} document", BODY)
    try:
        load = load_json if content_type in JSON_TYPES else load_text
        bundle = load(text, body.file_name or "request", known_queues=known_queues,
                      known_nodes=known_nodes,
                      known_priority_classes=known_priority_classes,
                      known_resource_flavors=known_resource_flavors, limits=limits,
                      launchable=kind == "Job")
    except SpecError as exc:
        shown = exc.issues[:limits.max_issues]
        errors = [_item(issue.path or BODY,
                        issue.message if issue.document <= 1
                        else f"document {issue.document}: {issue.message}")
                  for issue in shown]
        if len(exc.issues) > len(shown):
            errors.append(_item(BODY, f"and {len(exc.issues) - len(shown)} more issues"))
        raise ApiError(422, "invalid spec", errors=errors) from None
    others = {"Job": len(bundle.jobs), "Node": len(bundle.nodes),
              "VirtualCluster": len(bundle.virtual_clusters),
              "PriorityClass": len(bundle.priority_classes),
              "ResourceFlavor": len(bundle.resource_flavors),
              "SchedulerProfile": int(bundle.profile is not None)}
    wrong = sorted(k for k, n in others.items() if n and k != kind)
    if wrong:
        raise ApiError(422, f"expected only {kind} documents here, got {', '.join(wrong)}",
                       "kind")
    if not others[kind]:
        raise ApiError(422, f"expected a {kind} document", "kind")
    return bundle
