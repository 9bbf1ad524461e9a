"""Fixed-size virtual nodes (seed 003) against the physical nodes they are carved from.

This module owns the question "could these groups of fixed-size virtual nodes be carved out
of these nodes at all?", asked on an idle cluster: the spec loader asks it when a load
declares nodes, the API when a virtual cluster is created. It is pure: sizes and node
capacities in, the first reason it cannot be done out.

Per group, by policy:
- STRICT_SPREAD: every virtual node on a physical node of its own — a bipartite matching of
  virtual nodes to the nodes that can hold them (augmenting paths; exact, not greedy: a
  greedy choice can take the one node a later, larger virtual node needed);
- PACK and SPREAD: each virtual node must fit on some node; they may share nodes, so
  sharing decides only whether all of them fit together — that, and what every group
  together needs, is the reservation's question (it depends on what is in use), not this
  one's.
"""

from __future__ import annotations

from collections.abc import Sequence

from shoal.api.objects import FixedSizeNodes, Node, PlacementPolicy
from shoal.api.resources import Resources


def unplaceable(groups: Sequence[FixedSizeNodes], nodes: Sequence[Node]
                ) -> tuple[str, str] | None:
    """(path below `spec`, reason) for the first group that no idle cluster of `nodes` could
    hold; None when each could. Unschedulable nodes do not count."""
    capacities = [n.allocatable_resources for n in nodes if n.schedulable]
    where = f"{len(capacities)} schedulable node{'s' if len(capacities) != 1 else ''}"
    for g, group in enumerate(groups):
        for n, node in enumerate(group.nodes):
            if not any(node.resources.fits(c) for c in capacities):
                return (f"fixedSizeNodes[{g}].nodes[{n}].resources",
                        f"a virtual node of {node.resources} fits on none of the {where}")
        if group.policy is PlacementPolicy.STRICT_SPREAD:
            sizes = [node.resources for node in group.nodes]
            if not spread_matching(sizes, capacities):
                return (f"fixedSizeNodes[{g}]",
                        f"STRICT_SPREAD needs {len(sizes)} distinct nodes, each able to hold "
                        f"its virtual node; the {where} cannot be matched to them")
    return None


def spread_matching(sizes: Sequence[Resources], capacities: Sequence[Resources]
                    ) -> list[int] | None:
    """For each size, the index of a distinct capacity that holds it; None when no such
    assignment exists (Kuhn's augmenting paths)."""
    if len(sizes) > len(capacities):
        return None
    fits = [[c for c, capacity in enumerate(capacities) if size.fits(capacity)]
            for size in sizes]
    holder: dict[int, int] = {}
    """Capacity index → the size index it holds."""

    def place(s: int, seen: set[int]) -> bool:
        for c in fits[s]:
            if c in seen:
                continue
            seen.add(c)
            if c not in holder or place(holder[c], seen):
                holder[c] = s
                return True
        return False

    # Most constrained first: fewer augmenting steps, same answer.
    for s in sorted(range(len(sizes)), key=lambda i: len(fits[i])):
        if not place(s, set()):
            return None
    assignment = [0] * len(sizes)
    for c, s in holder.items():
        assignment[s] = c
    return assignment
