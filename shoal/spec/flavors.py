"""Resource flavors in documents (issue 16): the ResourceFlavor document, a VirtualCluster's
`flavors` and `flavorFungibility` → `shoal.api.flavors` values, with their checks — those of
one document (quantities, a flavor named twice, min above max) and the cross-document one (a
virtual cluster naming a flavor nobody declared, reported at `spec.flavors[i].name`). A
flavor whose labels match no node is fine: its quota simply has nothing to run on yet.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from shoal.api import ResourceLimit, Resources
from shoal.api.flavors import FlavorFungibility, FlavorQuota, ResourceFlavor
from shoal.api.objects import VirtualCluster
from shoal.spec.cluster_documents import ResourceFlavorDocument, VirtualClusterSpec
from shoal.spec.errors import DocRef, IssueLog

ResourcesReader = Callable[[str, Mapping[str, int | float | str]], Resources | None]
LimitReader = Callable[[str, Mapping[str, int | float | str] | None], ResourceLimit | None]


def resource_flavor(model: ResourceFlavorDocument) -> ResourceFlavor:
    return ResourceFlavor(model.metadata.name, dict(model.spec.node_labels))


def flavor_quotas(log: IssueLog, doc: DocRef, spec: VirtualClusterSpec,
                  resources_of: ResourcesReader, limit_of: LimitReader
                  ) -> tuple[tuple[FlavorQuota, ...], FlavorFungibility]:
    """`spec.flavors` and `spec.flavorFungibility`, problems logged with their paths."""
    out: list[FlavorQuota] = []
    seen: set[str] = set()
    for i, entry in enumerate(spec.flavors):
        at = f"spec.flavors[{i}]"
        if entry.name in seen:
            log.add(doc, f"{at}.name", f"flavor {entry.name!r} is listed twice")
        seen.add(entry.name)
        minimum = Resources() if entry.min is None else resources_of(f"{at}.min", entry.min)
        maximum = limit_of(f"{at}.max", entry.max)
        if minimum is None or maximum is None:
            out.append(FlavorQuota(entry.name))  # keeps later entries at their index
            continue
        over = maximum.exceeded(minimum)
        if over:
            log.add(doc, f"{at}.min", "must be at most max; over in " + ", ".join(
                f"{dim} {minimum.get(dim)} > {maximum.get(dim)}" for dim in over))
        out.append(FlavorQuota(entry.name, minimum, maximum))
    fungibility = FlavorFungibility(spec.flavor_fungibility.when_can_borrow,
                                    spec.flavor_fungibility.when_can_preempt)
    return tuple(out), fungibility


def unknown_flavors(log: IssueLog, vcs: Iterable[tuple[DocRef, VirtualCluster]],
                    declared: Collection[str]) -> None:
    """A virtual cluster's flavor that no ResourceFlavor declares is an error at its name."""
    expected = ", ".join(repr(n) for n in sorted(declared)) or "none is declared"
    for doc, vc in vcs:
        for i, quota in enumerate(vc.flavors):
            if quota.name not in declared:
                log.add(doc, f"spec.flavors[{i}].name",
                        f"unknown resource flavor {quota.name!r}; expected a declared "
                        f"ResourceFlavor ({expected})")
