"""Seed 004's `spec.schedulingPolicy` block, read as the flat Job fields of the same meaning.

`schedulingPolicy: {minAvailable, queue, minResources, priorityClass}` says what
`spec.minAvailable`, `spec.queue`, `spec.minResources` and `spec.priorityClassName` say. A
value given both ways must be the same (a clear error names both paths otherwise), so the
rest of the spec layer reads the flat fields only: `flattened` returns the document with
the block folded into them, and what a later check says of a flat field that came from the
block only is reported at the block's path (`Flattened.relocate`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shoal.api import QuantityError
from shoal.api.resources import canonical_name, parse_quantity
from shoal.spec.documents import JobDocument
from shoal.spec.errors import DocRef, IssueLog, quote

#: Block field → (the flat field's Python name, its alias in the document).
_FIELDS = {
    "min_available": ("min_available", "minAvailable"),
    "queue": ("queue", "queue"),
    "min_resources": ("min_resources", "minResources"),
    "priority_class": ("priority_class_name", "priorityClassName"),
}
_BLOCK_ALIASES = {"min_available": "minAvailable", "queue": "queue",
                  "min_resources": "minResources", "priority_class": "priorityClass"}


@dataclass(frozen=True, slots=True)
class Flattened:
    model: JobDocument
    paths: Mapping[str, str] = field(default_factory=dict)
    """A flat field's path → the block's path it was read from (when only the block gave it)."""

    def relocate(self, log: IssueLog, start: int) -> None:
        """Issues logged since `start` at a flat field the block gave, at the block's path."""
        if not self.paths:
            return
        log.issues[start:] = [
            dataclasses.replace(issue, path=self.paths[issue.path])
            if issue.path in self.paths else issue for issue in log.issues[start:]]


def flattened(log: IssueLog, doc: DocRef, model: JobDocument) -> Flattened:
    """`model` with its `schedulingPolicy` folded into the flat fields; a value that differs
    from its flat field's is logged at the block's path and the flat one is kept."""
    policy = model.spec.scheduling_policy
    if policy is None:
        return Flattened(model)
    given = model.spec.model_fields_set
    update: dict[str, Any] = {}
    paths: dict[str, str] = {}
    for block_name, (flat_name, flat_alias) in _FIELDS.items():
        value = getattr(policy, block_name)
        if value is None:
            continue
        flat = getattr(model.spec, flat_name)
        if flat_name in given and flat is not None and not _same(block_name, flat, value):
            log.add(doc, f"spec.schedulingPolicy.{_BLOCK_ALIASES[block_name]}",
                    f"is {quote(value)} but spec.{flat_alias} is {quote(flat)}: they mean the "
                    f"same, give one of them (or the same value)")
            continue
        if flat_name not in given:
            paths[f"spec.{flat_alias}"] = f"spec.schedulingPolicy.{_BLOCK_ALIASES[block_name]}"
        update[flat_name] = value
    if not update:
        return Flattened(model)
    spec = model.spec.model_copy(update=update)
    return Flattened(model.model_copy(update={"spec": spec}), paths)


def _same(field: str, flat: Any, value: Any) -> bool:
    if field != "min_resources":
        return bool(flat == value)
    return _quantities(flat) == _quantities(value)


def _quantities(mapping: dict[str, Any]) -> dict[str, int] | dict[str, Any]:
    """The amounts in canonical units, so that `{cpu: 1}` and `{cpu: "1000m"}` agree; as
    written when one is unreadable (its own field reports it)."""
    try:
        return {canonical_name(k): parse_quantity(canonical_name(k), v)
                for k, v in mapping.items()}
    except QuantityError:
        return dict(mapping)
