"""`ToyArray`: a tiny foreign format for the tests of what every importer relies on (the
loader's hook, several jobs from one document, originals stored and shown), independent of
any real format.

    apiVersion: toy/v1
    kind: Array
    name: sweep
    count: 3          # → jobs sweep-0, sweep-1, sweep-2
    gpu: 1            # each job's one task asks for this many GPUs (default 0)
    label: {k: v}     # carried into metadata.labels

A `count` that is not a positive integer is refused at `count`; each lowered job's
`spec.taskGroups[0]` is mapped back to `task` (so an issue a native check finds there, such
as an unknown resource, is reported at the original's `task...`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from shoal.spec.errors import IssueLog, quote
from shoal.spec.imports import Foreign, ImportFormat, Lowered, Original, registry


class ToyArray:
    format = ImportFormat.RAY_JOB  # any: the toy borrows a format's name

    def claims(self, data: Any) -> bool:
        return isinstance(data, dict) and data.get("apiVersion") == "toy/v1"

    def lower(self, log: IssueLog, docs: Sequence[Foreign]) -> list[Lowered]:
        out = []
        for foreign in docs:
            data = foreign.data
            count = data.get("count")
            if not isinstance(count, int) or count < 1:
                log.add(foreign.doc, "count", f"must be a positive integer, got {quote(count)}")
                continue
            resources = {"cpu": "1", "memory": "1Gi", "gpu": data.get("gpu", 0),
                         **data.get("extra", {})}
            documents = tuple({
                "apiVersion": "shoal/v1", "kind": "Job",
                "metadata": {"name": f"{data['name']}-{i}", "labels": data.get("label", {}),
                             "annotations": {"toy/index": str(i)}},
                "spec": {"taskGroups": [{"name": "main", "replicas": 1,
                                         "command": ["true"], "resources": resources}]}}
                for i in range(count))
            out.append(Lowered(foreign.doc, Original(self.format, data), documents,
                               {"spec.taskGroups[0]": "task"}))
        return out


@contextmanager
def toy_importer() -> Iterator[None]:
    """The registry with `ToyArray` in it (the process's; restored after)."""
    before = registry.IMPORTERS
    registry.IMPORTERS = (*before, ToyArray())
    try:
        yield
    finally:
        registry.IMPORTERS = before


def toy_yaml(name: str, count: int, gpu: int = 0) -> str:
    return (f"apiVersion: toy/v1\nkind: Array\nname: {name}\ncount: {count}\ngpu: {gpu}\n"
            "label: {team: vision}\n")
