"""Job documents written for other systems, lowered to native `shoal/v1` Job documents.

A team moving to Shoal keeps its job files: a Volcano Job, a Kubernetes Job with Kueue's
labels, an OpenPAI protocol-v2 job, a Slurm batch script, a Ray job, or one of seed 004's
Sedna kinds. Each format has one *importer* (`Importer`), which claims the documents of its
format by `apiVersion`/`kind` (or, for a batch script, by its text) and lowers them to
native Job documents, as plain data, which the loader then validates and converts exactly as
if the user had written them. So every check a native job gets, an imported one gets too,
and `shoal submit`, `POST /jobs`, `shoal schedule` and `shoal sim` accept them alike.

Rules every importer keeps:
- A field Shoal cannot honour is refused with its path (in the original document) and why:
  never silently dropped. Fields that mean nothing to scheduling but must survive (user
  annotations and labels, container images) are carried over.
- The lowered documents' paths are mapped back to the original's (`Lowered.paths`), so an
  error a native check finds names the field the user wrote.
- The original document is kept (`Original`) and stored with every job lowered from it;
  `shoal get -o yaml --original` shows it.

Importers are registered in `shoal.spec.imports.registry`; this module holds the vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from shoal.spec.errors import DocRef, IssueLog


class ImportFormat(StrEnum):
    """The formats Shoal lowers to its own Job (stored with each imported job)."""

    VOLCANO_JOB = "volcano-job"
    """`batch.volcano.sh/v1alpha1` Job."""
    VOLCANO_POD_GROUP = "volcano-pod-group"
    """`scheduling.volcano.sh/v1beta1` PodGroup and the Pods that name it."""
    KUBERNETES_JOB = "kubernetes-job"
    """`batch/v1` Job, with Kueue's `kueue.x-k8s.io/queue-name` label."""
    OPENPAI = "openpai-v2"
    """OpenPAI protocol v2 (`protocolVersion: 2`)."""
    SLURM_BATCH = "slurm-batch"
    """A Slurm batch script's `#SBATCH` header."""
    RAY_JOB = "ray-job"
    """A Ray job submission (`entrypoint`, `runtime_env`, ...)."""
    SHOAL_ARRAY = "shoal-array"
    """A native Job with `spec.array`, one job per index."""
    SEDNA = "sedna"
    """Seed 004's FederatedLearningJob, IncrementalLearningJob, LifeLongLearningJob and
    JointInferenceService."""


@dataclass(frozen=True, slots=True)
class Original:
    """The document a job was lowered from: a mapping as parsed, or a batch script's text.
    JSON-serialisable, as the store keeps it."""

    format: ImportFormat
    document: Any


@dataclass(frozen=True, slots=True)
class Foreign:
    """One document of a load that an importer claimed."""

    doc: DocRef
    data: Any


@dataclass(frozen=True, slots=True)
class Lowered:
    """What one original document (or, for a PodGroup, a group of them) became: native
    `shoal/v1` Job documents as plain data, in submission order."""

    doc: DocRef
    """Where the original is (the first of them, for a group): issues are reported there."""
    original: Original
    documents: tuple[Mapping[str, Any], ...]
    paths: Mapping[str, str] = field(default_factory=dict)
    """Native path prefix → the original's path (`spec.taskGroups[0]` →
    `spec.tasks[0]`): an issue found in a lowered document is reported at the original
    path; the longest matching prefix wins, and an unmapped path is kept as it is."""


class Importer(Protocol):
    """One foreign format."""

    format: ImportFormat

    def claims(self, data: Any) -> bool:
        """Whether this document is of this importer's format (by apiVersion/kind, or a
        batch script's text). Must be cheap and must not raise."""
        ...

    def lower(self, log: IssueLog, docs: Sequence[Foreign]) -> list[Lowered]:
        """Lower every document of the load this importer claimed, in load order. What
        cannot be lowered is logged (at the original's paths) and left out."""
        ...


def lower_each(log: IssueLog, docs: Sequence[Foreign],
               lower_one: Callable[[IssueLog, DocRef, Any], Lowered | None]) -> list[Lowered]:
    """`Importer.lower` for a format whose documents are lowered one by one: what
    `lower_one` gave for each, those it logged and gave None for left out."""
    return [lowered for foreign in docs
            if (lowered := lower_one(log, foreign.doc, foreign.data)) is not None]


def original_path(lowered: Lowered, path: str) -> str:
    """`path` of a lowered document, as the original names it."""
    best = ""
    for prefix in lowered.paths:
        if len(prefix) > len(best) and (path == prefix or path.startswith((
                prefix + ".", prefix + "["))):
            best = prefix
    if not best:
        return path
    return lowered.paths[best] + path[len(best):]
