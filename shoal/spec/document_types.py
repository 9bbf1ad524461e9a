"""The field types every `shoal/v1` document shares: name patterns (and what they mean, for
error messages), quantities, bounded numbers, and `DocumentModel`, the strict frozen base of
every document model (`shoal.spec.cluster_documents`, `shoal.spec.documents`).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StrictInt,
    StrictStr,
    WithJsonSchema,
)
from pydantic.fields import ComputedFieldInfo, FieldInfo

from shoal.spec.errors import quote

API_VERSION = "shoal/v1"

#: Job names end up in task ids (`job/group/index`) and in OpenPAI, which allows only these.
JOB_NAME_PATTERN = r"^[a-zA-Z0-9_-]+$"
#: Task group names become parts of host names and environment variables: a DNS label.
GROUP_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
#: Nodes, virtual clusters and priority classes: Kubernetes-like object names.
OBJECT_NAME_PATTERN = r"^[a-zA-Z0-9]([a-zA-Z0-9._-]*[a-zA-Z0-9])?$"

#: What each pattern means, for error messages that people can act on.
PATTERN_DESCRIPTIONS = {
    JOB_NAME_PATTERN: "letters, digits, '_' and '-' only",
    GROUP_NAME_PATTERN: "lower-case letters, digits and '-', starting and ending with a letter "
                        "or digit",
    OBJECT_NAME_PATTERN: "letters, digits, '.', '_' and '-', starting and ending with a letter "
                         "or digit",
}


#: Every integer a document holds fits in 64 bits, as the store's columns and the scheduling
#: core assume: larger ones are refused here, under their field, whatever the limits say.
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
#: The longest quantity string (`'500m'`, `'4Gi'`): a quantity is a number and a unit.
MAX_QUANTITY_LENGTH = 64


def _quantity(value: Any) -> int | float | str:
    # bool is an int to Python but `true` is never a quantity someone meant to write.
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(
            f"must be a number or a quantity string like '500m' or '4Gi', got {quote(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {quote(value)}")
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"must be below 2**63, got {quote(value)}")
    if isinstance(value, str) and len(value) > MAX_QUANTITY_LENGTH:
        raise ValueError(f"must be at most {MAX_QUANTITY_LENGTH} characters long, got "
                         f"{len(value)} ({quote(value)})")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number, got {quote(value)}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        finite = False
    if not finite:
        raise ValueError(f"must be a finite number, got {quote(value)}")
    return float(value)


Quantity = Annotated[
    int | float | str,
    PlainValidator(_quantity),
    WithJsonSchema({
        "anyOf": [{"type": "number"}, {"type": "string"}],
        "description": "A Kubernetes-style quantity: cpu '2', '500m'; memory '4Gi', '512Mi' "
                       "(a bare number is bytes); gpu and extras whole counts.",
    }),
]
Number = Annotated[float, PlainValidator(_number), WithJsonSchema({"type": "number"})]
# Only the upper bound here: a field's own Field(ge=...) would replace a lower one.
Int64 = Annotated[StrictInt, Field(le=INT64_MAX)]
Quantities = dict[StrictStr, Quantity]
StringMap = dict[StrictStr, StrictStr]
ObjectName = Annotated[StrictStr, Field(pattern=OBJECT_NAME_PATTERN, max_length=253)]


def _field_title(name: str, info: FieldInfo | ComputedFieldInfo) -> str:
    # The default title is the Python name in title case ("Apiversion"); YAML authors see
    # the field as they write it.
    return (info.alias if isinstance(info, FieldInfo) else None) or name


class DocumentModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, field_title_generator=_field_title)
