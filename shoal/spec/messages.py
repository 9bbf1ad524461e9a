"""Pydantic's validation errors rewritten as spec issues: a field path people read
(`spec.taskGroups[0].replicas`) and a message that says what was expected and what was given.

Unknown fields are the most common mistake in a hand-written spec (a typo, or a field from
another format), so their message lists the fields that are allowed at that place.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from shoal.spec.document_types import PATTERN_DESCRIPTIONS
from shoal.spec.errors import DocRef, IssueLog, join_path, quote

M = TypeVar("M", bound=BaseModel)

#: Messages whose pydantic wording does not read well after a field path.
_REWORDED = {
    "missing": "required field is missing",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "dict_type": "must be a mapping",
    "list_type": "must be a list",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
}


def format_path(loc: Sequence[str | int]) -> str:
    path = ""
    for part in loc:
        path = join_path(path, part)
    return path


def describe(model: type[BaseModel], error: ValidationError) -> list[tuple[str, str]]:
    """Every error of `error` as `(path, message)`, in the order pydantic found them."""
    out: list[tuple[str, str]] = []
    for e in error.errors():
        loc, message = _without_union_tags(model, e["loc"]), _message(model, e)
        if loc and loc[-1] == "[key]":
            # pydantic marks a bad mapping key with a pseudo-field; say it in words instead.
            loc, message = loc[:-1], f"key {message}"
        out.append((format_path(loc), message))
    if any(path == "metadata.generateName" for path, _ in out):
        # The name was to be generated from it: its own issue says what is wrong.
        out = [(path, m) for path, m in out if path != "metadata.name"]
    return out


def _message(model: type[BaseModel], error: ErrorDetails) -> str:
    kind = error["type"]
    given = error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        field = error["loc"][-1] if error["loc"] else "?"
        allowed = allowed_fields(model, error["loc"][:-1])
        hint = f"; allowed here: {', '.join(allowed)}" if allowed else ""
        return f"unknown field {quote(field)}{hint}"
    if kind == "value_error" and "error" in ctx:
        # Our own validators phrase the whole message; drop pydantic's "Value error, ".
        return str(ctx["error"])
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        meaning = PATTERN_DESCRIPTIONS.get(pattern)
        wanted = f"{pattern} ({meaning})" if meaning else pattern
        return f"must match {wanted}, got {quote(given)}"
    if kind == "missing":
        if tuple(error["loc"]) == ("metadata", "name") and _generates_names(model):
            return "required field is missing; give metadata.name, or metadata.generateName " \
                   "for a generated one"
        return _REWORDED[kind]
    bound = _bound(kind, ctx)
    if bound:
        return f"{bound}, got {quote(given)}"
    text = _REWORDED.get(kind)
    if text is None:
        msg = error["msg"]
        text = msg[:1].lower() + msg[1:]
    return f"{text}, got {quote(given)}"


def _generates_names(model: type[BaseModel]) -> bool:
    """Whether the document's metadata may say `generateName` instead of a name."""
    field = model.model_fields.get("metadata")
    metadata = None if field is None else field.annotation
    return isinstance(metadata, type) and issubclass(metadata, BaseModel) \
        and "generate_name" in metadata.model_fields


def _bound(kind: str, ctx: dict[str, Any]) -> str | None:
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']}"
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']}"
    if kind == "too_short":
        return f"must have at least {ctx['min_length']} item(s)"
    if kind == "string_too_long":
        return f"must be at most {ctx['max_length']} characters long"
    return None


def _without_union_tags(model: type[BaseModel], loc: Sequence[str | int]) -> list[str | int]:
    """`loc` without the member names pydantic puts after a union field
    (`step.ScaleFactorSpec.factor` → `step.factor`): they are no part of the document."""
    out: list[str | int] = []
    current: Any = model
    for part in loc:
        union = _unwrap_optional(current)
        if get_origin(union) in (Union, types.UnionType) and isinstance(part, str):
            current = next((m for m in get_args(union)
                            if isinstance(m, type) and m.__name__ == part), None)
            continue
        out.append(part)
        current = _step(current, part) if current is not None else None
    return out


def allowed_fields(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """The field names (as written in YAML) of the model found at `loc` under `model`."""
    target = _model_at(model, loc)
    if target is None:
        return []
    return sorted(info.alias or name for name, info in target.model_fields.items())


def _model_at(model: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    current: Any = model
    for part in loc:
        current = _step(current, part)
        if current is None:
            return None
    current = _unwrap_optional(current)
    return current if _is_model(current) else None


def _step(current: Any, part: str | int) -> Any:
    current = _unwrap_optional(current)
    if _is_model(current):
        for name, info in current.model_fields.items():
            if part in (name, info.alias):
                return info.annotation
        return None
    origin, args = get_origin(current), get_args(current)
    if origin is list and isinstance(part, int) and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def _unwrap_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return members[0]
    return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def validated(log: IssueLog, doc: DocRef, model: type[M], data: Any) -> M | None:
    """`data` as `model`; None when it is not one, each problem logged at its path."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for path, message in describe(model, exc):
            log.add(doc, path, message)
        return None
