"""What the API's answers share (`shoal.server.models` for the cluster's objects and users,
`shoal.server.job_models` for jobs): the base of every answer model, resources as
Kubernetes-style quantities, and a virtual cluster's fixed-size nodes (a job's own virtual
cluster has them too).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import PydanticUndefined

from shoal.api import (
    Resources,
    VirtualCluster,
)

Quantities = dict[str, str | int]


class OutModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


_PlainField = tuple[str, str, bool, Any, "Callable[[], Any] | None"]
"""A field as `plain` reads it: its name; its JSON key (the alias: answers are serialised
`by_alias`); whether it is declared `float` (validation makes an int a float, which JSON
writes `2.0`, not `2`); its default; its default factory. A tuple: unpacked in one step."""
_MISSING = object()


def _is_float(annotation: Any) -> bool:
    if annotation is float:
        return True
    if get_origin(annotation) in (Union, types.UnionType):
        return float in get_args(annotation)
    return False


@functools.cache
def _plain_fields(model: type[BaseModel]) -> tuple[_PlainField, ...]:
    return tuple((name, field.alias or name, _is_float(field.annotation), field.default,
                  field.default_factory)  # type: ignore[misc]
                 for name, field in model.model_fields.items())


def plain(model: type[BaseModel], /, **values: Any) -> dict[str, Any]:
    """The JSON data of `model(**values)` (its `by_alias` serialisation's keys, in its
    fields' order, defaults filled in), without validating `values` (issue 18: five
    validated models per submission's answer were ~11 % of the route).

    For values the server made itself, already of their fields' types: a nested answer is
    `plain` data too, a list a list, a mapping a dict. The one conversion validation would
    make of such values, an int in a `float` field, is made here. `model.model_validate`
    of the result is the model itself; `pydantic_core.to_json` of it, the model's JSON
    (`tests/server/test_api30_plain_answers.py` compares the bytes). An unknown or a
    missing required field is a TypeError, as the model's own constructor would refuse."""
    out: dict[str, Any] = {}
    for name, key, to_float, default, factory in _plain_fields(model):
        value = values.pop(name, _MISSING)  # `values` is this call's own dict
        if value is _MISSING:
            if factory is not None:
                value = factory()
            elif default is PydanticUndefined:
                raise TypeError(f"{model.__name__}: missing required field {name!r}")
            else:
                value = default
        elif to_float and type(value) is int:
            value = float(value)
        out[key] = value
    if values:
        raise TypeError(f"{model.__name__}: unknown fields {sorted(values)}")
    return out


def quantities(resources: Resources) -> Quantities:
    return resources.to_quantities()


class FixedSizeNodeOut(OutModel):
    resources: Quantities
    labels: dict[str, str]


class FixedSizeNodesOut(OutModel):
    nodes: list[FixedSizeNodeOut]
    scheduling_policy: str = Field(alias="schedulingPolicy")


def fixed_size_nodes_out(vc: VirtualCluster) -> list[FixedSizeNodesOut]:
    return [FixedSizeNodesOut(
        nodes=[FixedSizeNodeOut(resources=quantities(n.resources), labels=dict(n.labels))
               for n in group.nodes], scheduling_policy=group.policy.value)
        for group in vc.fixed_size_nodes]
