"""A native Job document with `spec.array`: lowered to one native Job per index
(`shoal.spec.imports.arrays`), exactly as a batch script's `#SBATCH --array` is.

Only the expression is read here; everything else of the document is checked by the loader
on each element, as if the user had written the elements out. A document whose form is too
broken to be copied per index (no name, task groups that are not mappings) is passed on once,
without its `array`, for the loader to say what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shoal.spec.document_types import API_VERSION
from shoal.spec.errors import IssueLog, quote
from shoal.spec.imports import Foreign, ImportFormat, Lowered, Original
from shoal.spec.imports.arrays import (
    SYNTAX,
    ArrayError,
    array_size_problem,
    expand_array,
    parse_array,
)

ARRAY_PATH = "spec.array"


class NativeArrayImporter:
    """`apiVersion: shoal/v1`, `kind: Job` with `spec.array`."""

    format = ImportFormat.SHOAL_ARRAY

    def claims(self, data: Any) -> bool:
        if not isinstance(data, Mapping) or data.get("apiVersion") != API_VERSION \
                or data.get("kind") != "Job":
            return False
        spec = data.get("spec")
        return isinstance(spec, Mapping) and spec.get("array") is not None

    def lower(self, log: IssueLog, docs: Sequence[Foreign]) -> list[Lowered]:
        out: list[Lowered] = []
        for foreign in docs:
            data: Mapping[str, Any] = foreign.data
            expression = data["spec"]["array"]
            original = Original(self.format, data)
            if not _copyable(data):
                broken = {**data, "spec": {k: v for k, v in data["spec"].items()
                                           if k != "array"}}
                out.append(Lowered(foreign.doc, original, (broken,)))
                continue
            if not isinstance(expression, str):
                log.add(foreign.doc, ARRAY_PATH, f"must be {SYNTAX} (a string), got "
                                                 f"{quote(expression)}")
                continue
            try:
                indices = parse_array(expression)
            except ArrayError as exc:
                log.add(foreign.doc, ARRAY_PATH, str(exc))
                continue
            too_large = array_size_problem(data, indices)
            if too_large is not None:
                log.add(foreign.doc, ARRAY_PATH, too_large)
                continue
            out.append(Lowered(foreign.doc, original, tuple(expand_array(data, indices))))
        return out


def _copyable(data: Mapping[str, Any]) -> bool:
    metadata, spec = data.get("metadata"), data["spec"]
    groups = spec.get("taskGroups")
    return (isinstance(metadata, Mapping) and isinstance(metadata.get("name"), str)
            and isinstance(metadata.get("annotations", {}), Mapping)
            and isinstance(groups, list) and bool(groups)
            and all(isinstance(g, Mapping) and isinstance(g.get("env", {}), Mapping)
                    for g in groups))


NATIVE_ARRAY = NativeArrayImporter()
