"""Whether new virtual clusters fit the cluster as it stands: the check the API runs before
it stores a virtual cluster, so that an impossible one is refused at once with its reason
instead of being kept and never honoured.

Two rules, on the tree that the stored virtual clusters and the new ones form together:
- every parent can honour its children: the children's guaranteed minimums (flexible
  minimum plus fixed-size nodes) add up to at most the parent's own guarantee, and under
  the root to at most the schedulable nodes' allocatable resources (the implicit `default`
  virtual cluster guarantees nothing);
- every group of fixed-size virtual nodes could be carved out of the nodes at all
  (`virtual_nodes.unplaceable`), and all of them together beside those already carved
  (`virtual_nodes.uncarvable`), as the reservation will carve them.

Pure: values in, the first problem out. The spec loader checks the same rules on a file
(`shoal.spec.checks`), where it also reports every problem at its document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shoal.api.flavors import ResourceFlavor, node_flavor_resources
from shoal.api.objects import ROOT_QUEUE, Node, VirtualCluster
from shoal.api.resources import Resources, total
from shoal.core.virtual_nodes import uncarvable, unplaceable


@dataclass(frozen=True)
class VirtualClusterProblem:
    name: str
    """The virtual cluster the problem is reported at."""
    path: str
    """Below its document, e.g. `spec.fixedSizeNodes[0]`."""
    message: str


def vc_problem(new: Sequence[VirtualCluster], stored: Sequence[VirtualCluster],
               nodes: Sequence[Node], flavors: Sequence[ResourceFlavor] = ()
               ) -> VirtualClusterProblem | None:
    """The first reason the `new` virtual clusters cannot join `stored` on `nodes`; quotas
    on resource `flavors` are guaranteed out of those flavors' nodes."""
    for vc in new:
        placement = unplaceable(vc.fixed_size_nodes, nodes)
        if placement is not None:
            return VirtualClusterProblem(vc.name, f"spec.{placement[0]}", placement[1])
    tree = {vc.name: vc for vc in (*stored, *new)}
    together = uncarvable(list(tree.values()), nodes)
    if together is not None:
        return VirtualClusterProblem(together[0], "spec.fixedSizeNodes", together[1])
    capacity = total(n.allocatable_resources
                     + node_flavor_resources(n.allocatable_resources, n.labels, flavors)
                     for n in nodes if n.schedulable)
    for parent in dict.fromkeys(vc.parent for vc in new):
        children = [vc for vc in tree.values() if vc.parent == parent]
        wanted = total(vc.guaranteed for vc in children)
        have = _guarantee(parent, tree, capacity)
        if not wanted.fits(have):
            names = ", ".join(repr(vc.name) for vc in children)
            first_new = next(vc for vc in new if vc.parent == parent)
            return VirtualClusterProblem(
                first_new.name, "spec.flexibleResourceMin",
                f"the guaranteed minimums under {parent!r} ({names}) would add up to "
                f"{wanted}, more than {parent!r} can guarantee ({have}); over in "
                f"{', '.join(wanted.shortfall(have))}")
    return None


def _guarantee(name: str, tree: dict[str, VirtualCluster], capacity: Resources) -> Resources:
    if name == ROOT_QUEUE:
        return capacity
    vc = tree.get(name)
    # Not declared: the implicit `default` virtual cluster, which guarantees nothing.
    return Resources() if vc is None else vc.guaranteed
