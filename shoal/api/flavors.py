"""Resource flavors (issue 16, Kueue's ResourceFlavor): a pool of nodes named by their labels
— a GPU type, spot or on-demand — whose capacity a virtual cluster is given quota in, per
flavor, in its order of preference.

How the scheduling core counts a flavor: each (flavor, resource) pair is a resource dimension
of its own, `flavor.<flavor>/<resource>` (`flavor_dimension`). A node that a flavor's labels
match offers that flavor's dimensions in the same amounts as its own resources; a virtual
cluster's per-flavor `min` and `max` are its `min` and `max` in those dimensions; a task
admitted on a flavor asks for the same amounts there too. So headroom, borrowing, lending,
reclaim and guarantees per flavor all come from the quota tree as it is
(`shoal.core.quota`), and a task of one flavor cannot be charged to another's quota.

Plain values; the spec layer builds them, `shoal.scheduler.flavors` acts on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from shoal.api.resources import ResourceLimit, Resources

#: Every flavor dimension starts so; '.' and '/' keep it apart from declared resource names.
FLAVOR_PREFIX = "flavor."


def flavor_dimension(flavor: str, resource: str) -> str:
    """The dimension that counts `resource` on flavor `flavor`: `flavor.a100/gpu`."""
    return f"{FLAVOR_PREFIX}{flavor}/{resource}"


def is_flavor_dimension(name: str) -> bool:
    return name.startswith(FLAVOR_PREFIX)


def in_flavor(resources: Resources, flavor: str, covered: Iterable[str] | None = None
              ) -> Resources:
    """`resources` moved into `flavor`'s dimensions: only its own (not flavor) dimensions,
    and of those only `covered` ones when given."""
    names = None if covered is None else set(covered)
    return Resources.of(extras={
        flavor_dimension(flavor, name): amount for name, amount in resources.items()
        if not is_flavor_dimension(name) and (names is None or name in names)})


def flavor_part(resources: Resources) -> Resources:
    """Only the flavor dimensions of `resources`."""
    return Resources.of(extras={k: v for k, v in resources.extras if is_flavor_dimension(k)})


def over_flavors(resources: Resources) -> dict[str, int]:
    """The flavor dimensions of `resources` summed per resource over every flavor:
    `flavor.a100/gpu: 2, flavor.h100/gpu: 6` → `gpu: 8`."""
    out: dict[str, int] = {}
    for name, amount in resources.extras:
        if is_flavor_dimension(name):
            resource = name[len(FLAVOR_PREFIX):].partition("/")[2]
            out[resource] = out.get(resource, 0) + amount
    return out


def unflavored(resources: Resources) -> Resources:
    """`resources` without any flavor dimension."""
    if not resources.extras:  # most requests: asked per bind
        return resources
    if not any(is_flavor_dimension(name) for name, _ in resources.extras):
        return resources
    return Resources.of(resources.cpu, resources.memory, resources.gpu,
                        {k: v for k, v in resources.extras if not is_flavor_dimension(k)})


@dataclass(frozen=True, slots=True)
class ResourceFlavor:
    """A named pool of nodes: those whose labels include every one of `node_labels` (no
    labels: every node)."""

    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(key) == value for key, value in self.node_labels.items())

    def conflicts(self, selector: Mapping[str, str]) -> bool:
        """Whether a node selector names one of its labels with another value: no node of
        this flavor can satisfy it."""
        return any(key in selector and selector[key] != value
                   for key, value in self.node_labels.items())


@dataclass(frozen=True, slots=True)
class FlavorQuota:
    """A virtual cluster's quota on one flavor (an entry of Kueue's `resourceGroups[].flavors`):
    guaranteed `min` and ceiling `max`, in that flavor's resources. The resources named in
    either are the ones it covers (Kueue's `coveredResources`); others are not counted
    against the flavor."""

    name: str
    min: Resources = field(default_factory=Resources)
    max: ResourceLimit = field(default_factory=ResourceLimit)

    @property
    def covered(self) -> frozenset[str]:
        return frozenset(self.min.dimensions() | {name for name, _ in self.max.limits})

    def guaranteed(self) -> Resources:
        """`min` in the flavor's dimensions."""
        return in_flavor(self.min, self.name)

    def ceiling(self) -> dict[str, int]:
        """`max` in the flavor's dimensions (only the named ones)."""
        return {flavor_dimension(self.name, name): value for name, value in self.max.limits}


class WhenCanBorrow(StrEnum):
    """What a flavor on which a job fits only by borrowing does (Kueue's
    `flavorFungibility.whenCanBorrow`)."""

    BORROW = "Borrow"
    """Take it, borrowing (Kueue's default)."""
    TRY_NEXT_FLAVOR = "TryNextFlavor"
    """Try the later flavors first; borrow here only if none holds it within guarantees."""


class WhenCanPreempt(StrEnum):
    """What a flavor on which a job does not fit now, but could after evictions, does
    (Kueue's `flavorFungibility.whenCanPreempt`)."""

    PREEMPT = "Preempt"
    """Take it: the job waits for it (and preempt or reclaim may make room there)."""
    TRY_NEXT_FLAVOR = "TryNextFlavor"
    """Try the later flavors first (Kueue's default)."""


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    when_can_borrow: WhenCanBorrow = WhenCanBorrow.BORROW
    when_can_preempt: WhenCanPreempt = WhenCanPreempt.TRY_NEXT_FLAVOR


def flavor_quotas_min(quotas: Iterable[FlavorQuota]) -> Resources:
    """Every flavor's `min`, in flavor dimensions."""
    out = Resources()
    for quota in quotas:
        out = out + quota.guaranteed()
    return out


def flavor_quotas_max(base: ResourceLimit, quotas: Iterable[FlavorQuota]) -> ResourceLimit:
    """`base` with every flavor's `max` added as limits of their own dimensions."""
    extra: dict[str, int] = {}
    for quota in quotas:
        extra.update(quota.ceiling())
    if not extra:
        return base
    return ResourceLimit.of({**dict(base.limits), **extra})


def node_flavor_resources(allocatable: Resources, labels: Mapping[str, str],
                          flavors: Iterable[ResourceFlavor]) -> Resources:
    """What a node with `labels` offers in flavor dimensions: its resources once per flavor
    whose labels it carries."""
    out = Resources()
    for flavor in flavors:
        if flavor.matches(labels):
            out = out + in_flavor(allocatable, flavor.name)
    return out


__all__ = [
    "FLAVOR_PREFIX",
    "FlavorFungibility",
    "FlavorQuota",
    "ResourceFlavor",
    "WhenCanBorrow",
    "WhenCanPreempt",
    "flavor_dimension",
    "flavor_part",
    "flavor_quotas_max",
    "flavor_quotas_min",
    "in_flavor",
    "is_flavor_dimension",
    "node_flavor_resources",
    "over_flavors",
    "unflavored",
]
