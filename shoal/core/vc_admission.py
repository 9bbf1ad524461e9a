"""Whether new virtual clusters fit the cluster as it stands: the check the API runs before
it stores a virtual cluster, so that an impossible one is refused at once with its reason
instead of being kept and never honoured.

Two rules, on the tree that the stored virtual clusters and the new ones form together:
- every parent can honour its children: the children's guaranteed minimums (flexible
  minimum plus fixed-size nodes) add up to at most the parent's own guarantee, and under
  the root to at most the schedulable nodes' allocatable resources (the implicit `default`
  virtual cluster guarantees nothing) — the rule `shoal.spec.checks` applies to a file.
  A new one that replaces a stored one (a PUT) is judged as a parent too, against its
  stored children; its ceiling is then first held against each child's guarantee, only so
  that the answer names `spec.flexibleResourceMax` when it is the maximum that was lowered
  (a minimum within its maximum and the sum rule already imply it);
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
               nodes: Sequence[Node] | None, flavors: Sequence[ResourceFlavor] = ()
               ) -> VirtualClusterProblem | None:
    """The first reason the `new` virtual clusters cannot join `stored` on `nodes`; quotas
    on resource `flavors` are guaranteed out of those flavors' nodes. A `new` one may
    replace a stored one of its name (a changed quota): its stored children are then judged
    under it. `nodes` None: the cluster is not known yet, so what only nodes can tell
    (fixed-size nodes, the root's capacity) is not judged, as a file without nodes."""
    tree = {vc.name: vc for vc in (*stored, *new)}
    if nodes is not None:
        for vc in new:
            placement = unplaceable(vc.fixed_size_nodes, nodes)
            if placement is not None:
                return VirtualClusterProblem(vc.name, f"spec.{placement[0]}", placement[1])
        together = uncarvable(list(tree.values()), nodes)
        if together is not None:
            return VirtualClusterProblem(together[0], "spec.fixedSizeNodes", together[1])
    capacity = None if nodes is None else total(
        n.allocatable_resources + node_flavor_resources(n.allocatable_resources, n.labels,
                                                        flavors)
        for n in nodes if n.schedulable)
    # Every parent whose children or guarantee the new ones change: theirs, and themselves.
    replaced = {vc.name for vc in new}
    judged = dict.fromkeys([*(vc.parent for vc in new), *replaced])
    for parent in judged:
        children = [vc for vc in tree.values() if vc.parent == parent]
        if not children:
            continue
        have = _guarantee(parent, tree, capacity)
        if have is None:
            continue
        # A replaced parent is reported at its own fields; a new child at its minimum.
        owner = tree[parent] if parent in replaced else None
        at = owner.name if owner is not None else next(
            vc.name for vc in new if vc.parent == parent)
        if owner is not None:
            capped = _capped_child(owner, children)
            if capped is not None:
                return VirtualClusterProblem(at, "spec.flexibleResourceMax", capped)
        wanted = total(vc.guaranteed for vc in children)
        if not wanted.fits(have):
            names = ", ".join(repr(vc.name) for vc in children)
            return VirtualClusterProblem(
                at, "spec.flexibleResourceMin",
                f"the guaranteed minimums under {parent!r} ({names}) would add up to "
                f"{wanted}, more than {parent!r} can guarantee ({have}); over in "
                f"{', '.join(wanted.shortfall(have))}")
    return None


def _capped_child(parent: VirtualCluster, children: Sequence[VirtualCluster]) -> str | None:
    """Why `parent`'s ceiling cannot hold a child's guarantee, if it cannot: a child is
    guaranteed its minimum inside its parent, so the parent may not be capped below it."""
    ceiling = parent.ceiling
    for child in children:
        over = ceiling.exceeded(child.guaranteed)
        if over:
            return (f"{parent.name!r}'s maximum would cap it below what its child "
                    f"{child.name!r} is guaranteed ({child.guaranteed}); over in "
                    + ", ".join(f"{dim} {child.guaranteed.get(dim)} > {ceiling.get(dim)}"
                                for dim in over))
    return None


def _guarantee(name: str, tree: dict[str, VirtualCluster], capacity: Resources | None
               ) -> Resources | None:
    """What `name` guarantees its children; None for the root of a cluster not known yet."""
    if name == ROOT_QUEUE:
        return capacity
    vc = tree.get(name)
    # Not declared: the implicit `default` virtual cluster, which guarantees nothing.
    return Resources() if vc is None else vc.guaranteed
