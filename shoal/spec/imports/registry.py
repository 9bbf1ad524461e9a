"""Which importers exist, and lowering a whole load's foreign documents in place.

An importer joins by being listed in `IMPORTERS`. `lower_load` runs before the loader looks
at any document: each document an importer claims is replaced, where it stood, by the native
documents it was lowered to; every other document passes through untouched.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from shoal.spec.errors import DocRef, IssueLog
from shoal.spec.imports import Foreign, Importer, Lowered
from shoal.spec.imports.kubernetes_job import KubernetesJobImporter
from shoal.spec.imports.native_array import NATIVE_ARRAY
from shoal.spec.imports.openpai import OPENPAI
from shoal.spec.imports.ray_job import RAY_JOB
from shoal.spec.imports.sedna import SednaImporter
from shoal.spec.imports.slurm_batch import SLURM_BATCH
from shoal.spec.imports.volcano import VolcanoJobImporter
from shoal.spec.imports.volcano_pod_group import VolcanoPodGroupImporter

IMPORTERS: tuple[Importer, ...] = (
    NATIVE_ARRAY,
    SLURM_BATCH,
    OPENPAI,
    RAY_JOB,
    VolcanoJobImporter(),
    VolcanoPodGroupImporter(),
    KubernetesJobImporter(),
    SednaImporter(),
)
"""Every foreign format Shoal reads; the first that claims a document has it."""


@dataclass(frozen=True, slots=True)
class LoadItem:
    """One document for the loader: native data, and what it was lowered from if anything."""

    doc: DocRef
    data: Any
    lowered: Lowered | None = None


def lower_load(log: IssueLog, documents: Iterable[tuple[DocRef, Any]],
               importers: tuple[Importer, ...] | None = None) -> Iterator[LoadItem]:
    """The load's documents with every foreign one replaced by what it was lowered to."""
    chosen = IMPORTERS if importers is None else importers
    items = list(documents)
    if not chosen:
        yield from (LoadItem(doc, data) for doc, data in items)
        return
    claimed: dict[int, list[Foreign]] = {}
    owner: dict[DocRef, int] = {}
    for doc, data in items:
        for i, importer in enumerate(chosen):
            if importer.claims(data):
                claimed.setdefault(i, []).append(Foreign(doc, data))
                owner[doc] = i
                break
    lowered: dict[DocRef, list[Lowered]] = {}
    for i, foreign in claimed.items():
        for result in chosen[i].lower(log, foreign):
            lowered.setdefault(result.doc, []).append(result)
    for doc, data in items:
        if doc not in owner:
            yield LoadItem(doc, data)
            continue
        for result in lowered.get(doc, ()):
            for native in result.documents:
                yield LoadItem(doc, native, result)
