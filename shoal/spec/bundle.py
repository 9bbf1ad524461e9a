"""`SpecBundle`: everything one load of native documents declared, as `shoal.api` objects.

The bundle holds what the documents *say*, in load order. The implicit pieces of a cluster
(the `default` virtual cluster, the built-in priority classes) are not in its tuples, so a
consumer can tell declared from implied; `all_virtual_clusters` and `all_priority_classes`
add them for consumers that want the effective set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shoal.api import (
    BUILTIN_PRIORITY_CLASSES,
    DEFAULT_QUEUE,
    Job,
    Node,
    PriorityClass,
    VirtualCluster,
)
from shoal.api.flavors import ResourceFlavor
from shoal.spec.imports import Original


@dataclass(frozen=True)
class SpecBundle:
    nodes: tuple[Node, ...] = ()
    """After `count` expansion."""
    virtual_clusters: tuple[VirtualCluster, ...] = ()
    """As declared; the implicit `default` is only here when a document declares it."""
    priority_classes: tuple[PriorityClass, ...] = ()
    """As declared; the built-in classes are not repeated here."""
    resource_flavors: tuple[ResourceFlavor, ...] = ()
    """As declared (issue 16's node pools)."""
    jobs: tuple[Job, ...] = ()
    profile: Mapping[str, Any] | None = None
    """The `spec` of the load's SchedulerProfile document, unvalidated, or None."""
    originals: Mapping[str, Original] = field(default_factory=dict)
    """Job name → the foreign document it was lowered from (`shoal.spec.imports`); a job
    written as a native document has none."""
    job_documents: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    """Job name → the (source, document number) it came from: jobs that share one came from
    one document (an imported one lowered to several, an array)."""
    generated: Mapping[str, str] = field(default_factory=dict)
    """Job name → the `metadata.generateName` prefix it was generated from
    (`shoal.spec.generated_names`); a job that named itself has none."""

    def all_virtual_clusters(self) -> tuple[VirtualCluster, ...]:
        """The declared virtual clusters plus the implicit `default` when none declares it."""
        if any(vc.name == DEFAULT_QUEUE for vc in self.virtual_clusters):
            return self.virtual_clusters
        return (VirtualCluster(DEFAULT_QUEUE), *self.virtual_clusters)

    def all_priority_classes(self) -> tuple[PriorityClass, ...]:
        """The built-in classes, each replaced by a declared one of the same name, then the
        other declared classes. A declared global default takes that role from `normal`."""
        declared = {pc.name: pc for pc in self.priority_classes}
        new_default = any(pc.global_default for pc in self.priority_classes)
        out: list[PriorityClass] = []
        for builtin in BUILTIN_PRIORITY_CLASSES:
            chosen = declared.pop(builtin.name, builtin)
            if new_default and chosen is builtin and builtin.global_default:
                chosen = PriorityClass(builtin.name, builtin.value, builtin.description, False)
            out.append(chosen)
        out.extend(declared.values())
        return tuple(out)
