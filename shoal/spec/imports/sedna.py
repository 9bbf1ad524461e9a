"""Seed 004's four Sedna kinds, read as Sedna's users write them (`apiVersion:
sedna.io/v1alpha1`, or `shoal/v1`), lowered to native Job documents.

- `FederatedLearningJob` → one job: task group `aggregator` (the aggregation worker) and one
  group `trainer-<i>` per training worker, each pinned where its template says.
- `IncrementalLearningJob`, `LifelongLearningJob` (also spelt `LifeLongLearningJob`) → three
  jobs, `<name>-train`, `<name>-eval` (dependsOn train) and `<name>-deploy` (dependsOn eval;
  an online service: the deployed model serves until cancelled).
- `JointInferenceService` → one online service: groups `cloud` (the big model) and `edge`
  (the little model).

Common to all: `spec.schedulerName` (`volcano` or `shoal`: each job is a gang, its
`minAvailable` from `spec.schedulingPolicy`, all its tasks by default; absent or `default`:
tasks placed one by one, as before seed 004) and `spec.schedulingPolicy`, which becomes the
native block of the same name (`shoal.spec.scheduling_policy`). Every worker is a pod
template (`shoal.spec.imports.pod_template`): its `nodeName` pins it through the
`kubernetes.io/hostname` label every node carries; a worker the file does not pin (no
nodeName, no nodeSelector) goes to a node of its role, `node-role: cloud` or `edge`
(`shoal.api.objects.NODE_ROLE_LABEL`). What each kind's workers are told (the aggregator's
address, model and dataset names, triggers) is `shoal.spec.imports.sedna_kinds`'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from shoal.spec.errors import DocRef, IssueLog, quote
from shoal.spec.imports import Foreign, ImportFormat, Lowered
from shoal.spec.imports.sedna_common import (
    FEDERATED,
    INCREMENTAL,
    JOINT_INFERENCE,
    KINDS,
    LIFELONG,
    SEDNA_API_VERSION,
    Header,
    read_header,
)
from shoal.spec.imports.sedna_kinds import federated, joint_inference, phases

Lowering = Callable[[IssueLog, DocRef, Header, Mapping[str, Any]], list[Lowered] | None]
"""A kind's lowering: the document (its spec a mapping) → its jobs, None after an issue."""

_KINDS: dict[str, Lowering] = {
    FEDERATED: federated, INCREMENTAL: phases, LIFELONG: phases,
    "LifeLongLearningJob": phases, JOINT_INFERENCE: joint_inference}


class SednaImporter:
    """Seed 004's FederatedLearningJob, IncrementalLearningJob, LifelongLearningJob and
    JointInferenceService."""

    format = ImportFormat.SEDNA

    def claims(self, data: Any) -> bool:
        kind = data.get("kind") if isinstance(data, Mapping) else None
        return (isinstance(kind, str) and kind in KINDS
                and data.get("apiVersion") in (SEDNA_API_VERSION, "shoal/v1"))

    def lower(self, log: IssueLog, docs: Sequence[Foreign]) -> list[Lowered]:
        out: list[Lowered] = []
        for foreign in docs:
            data = foreign.data
            before = len(log.issues)
            header = read_header(log, foreign.doc, data)
            spec = data.get("spec")
            if not isinstance(spec, Mapping):
                log.add(foreign.doc, "spec", f"must be a mapping, got {quote(spec)}")
                continue
            if header is None or len(log.issues) > before:
                continue
            lowered = _KINDS[data["kind"]](log, foreign.doc, header, data)
            if lowered is not None and len(log.issues) == before:
                out.extend(lowered)
        return out
