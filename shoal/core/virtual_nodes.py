"""Fixed-size virtual nodes (seed 003) against the physical nodes they are carved from.

This module owns two questions, both pure (sizes and free capacities in, an answer out):
- `unplaceable`: could these groups of fixed-size virtual nodes be carved out of these nodes
  at all, on an idle cluster? The spec loader asks it when a load declares nodes, the API
  when a virtual cluster is created.
- `carve`: where to carve them now, out of what each node has free, all groups at once or
  none (the atomic reservation of a virtual cluster's fixed part).

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from shoal.api.objects import FixedSizeNodes, Node, PlacementPolicy, VirtualCluster
from shoal.api.resources import Resources, total


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


def uncarvable(vcs: Sequence[VirtualCluster], nodes: Sequence[Node]
               ) -> tuple[str, str] | None:
    """(virtual cluster, reason) when the fixed-size nodes of these virtual clusters could
    not all be carved by `carve` out of the idle `nodes` — the reservation would never
    succeed, so the last virtual cluster to join is refused. Those already carved
    (`reservation`) stay where they are, and the others must fit beside them. None when
    they could (or none has any)."""
    waiting = [vc for vc in vcs if vc.fixed_size_nodes and vc.reservation is None]
    groups = [g for vc in waiting for g in vc.fixed_size_nodes]
    if not groups:
        return None
    free = {n.name: n.allocatable_resources for n in nodes if n.schedulable}
    for vc in vcs:
        for place, spec in zip(vc.reservation or (), vc.virtual_node_specs, strict=False):
            if place.node in free:
                free[place.node] = free[place.node].saturating_sub(spec.resources)
    carved = carve(groups, free)
    if not isinstance(carved, str):
        return None
    why = carved.split(": ", 1)[-1]
    return waiting[-1].name, (f"the fixed-size nodes of every virtual cluster cannot all be "
                              f"carved out of the nodes, even idle ({why})")


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
        # A free capacity first (so that, among equals, sizes keep the given order), then
        # an augmenting path through the held ones.
        for c in fits[s]:
            if c not in holder:
                holder[c] = s
                return True
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


# ---- carving --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Carving:
    """Where each virtual node goes: `nodes[g][n]` is the physical node of virtual node n of
    group g."""

    nodes: tuple[tuple[str, ...], ...]


SEARCH_BUDGET = 20_000
"""Most placements the exhaustive fallback of `carve` tries before it gives up."""


def carve(groups: Sequence[FixedSizeNodes], free: Mapping[str, Resources]
          ) -> Carving | str:
    """Carve every group out of the nodes' `free` resources, or none: a `Carving`, or why
    not. The greedy carving (`_carve_greedily`) first; when it finds none, a bounded
    exhaustive search (`_search`), so that "no" is exact on clusters of tens of nodes: a
    greedy "no" where a carving exists would leave a virtual cluster queued for ever (the
    property test found such cases). What the search finds honours STRICT_SPREAD; PACK and
    SPREAD are then preferences it does not weigh."""
    carved = _carve_greedily(groups, free)
    if not isinstance(carved, str):
        return carved
    found = _search(groups, free)
    return carved if found is None else found


def _carve_greedily(groups: Sequence[FixedSizeNodes], free: Mapping[str, Resources]
                    ) -> Carving | str:
    """The greedy carving. Deterministic (ties go to the node name).

    Groups go most constrained first (STRICT_SPREAD, then larger groups), each taking what
    the ones before it left:
    - STRICT_SPREAD: an exact matching onto distinct nodes (`spread_matching`), trying the
      nodes with the least room first (best fit: the roomy nodes stay whole for others);
    - PACK: largest virtual node first, each onto a node the group already uses if one has
      room (the tightest), else onto the node with the most free — as few nodes as it can;
    - SPREAD: largest first, each onto a node the group does not use yet (the one with the
      most free), else onto the one it uses least.
    Packing across groups is greedy (bin packing is NP-hard): an answer of "no" is exact for
    one STRICT_SPREAD group, a best effort otherwise."""
    left = dict(free)
    placed: dict[int, tuple[str, ...]] = {}
    order = sorted(range(len(groups)), key=lambda g: (
        groups[g].policy is not PlacementPolicy.STRICT_SPREAD, -len(groups[g].nodes), g))
    for g in order:
        group = groups[g]
        sizes = [n.resources for n in group.nodes]
        if group.policy is PlacementPolicy.STRICT_SPREAD:
            needed = total(sizes)
            names = sorted(left, key=lambda name: (_roominess(left[name], needed), name))
            found = spread_matching(sizes, [left[name] for name in names])
            if found is None:
                return (f"fixedSizeNodes[{g}]: STRICT_SPREAD needs {len(sizes)} distinct nodes "
                        f"with room for its virtual nodes; not that many have it now")
            chosen = [names[i] for i in found]
        else:
            chosen_or_reason = _greedy(g, sizes, left, group.policy)
            if isinstance(chosen_or_reason, str):
                return chosen_or_reason
            chosen = chosen_or_reason
        for name, size in zip(chosen, sizes, strict=True):
            left[name] = left[name] - size
        placed[g] = tuple(chosen)
    return Carving(tuple(placed[g] for g in range(len(groups))))


def _search(groups: Sequence[FixedSizeNodes], free: Mapping[str, Resources]
            ) -> Carving | None:
    """A carving by depth-first search, largest virtual node first; None if there is none
    or the budget runs out. Nodes with the same free resources (and the same use by the
    group) are interchangeable: only the first of them is tried."""
    items = sorted(((g, n, node.resources) for g, group in enumerate(groups)
                    for n, node in enumerate(group.nodes)),
                   key=lambda item: (_size_key(item[2]), -item[0]), reverse=True)
    names = sorted(free)
    left = dict(free)
    strict = [group.policy is PlacementPolicy.STRICT_SPREAD for group in groups]
    used: dict[int, set[str]] = {g: set() for g in range(len(groups))}
    where: dict[tuple[int, int], str] = {}
    budget = [SEARCH_BUDGET]

    def place(i: int) -> bool:
        if i == len(items):
            return True
        g, n, size = items[i]
        tried: set[tuple[Resources, bool]] = set()
        for name in names:
            taken = name in used[g]
            if (strict[g] and taken) or not size.fits(left[name]):
                continue
            shape = (left[name], taken)
            if shape in tried:
                continue
            tried.add(shape)
            budget[0] -= 1
            if budget[0] < 0:
                return False
            left[name] = left[name] - size
            if not taken:
                used[g].add(name)
            where[(g, n)] = name
            if place(i + 1):
                return True
            left[name] = left[name] + size
            if not taken:
                used[g].discard(name)
        return False

    if not place(0):
        return None
    return Carving(tuple(tuple(where[(g, n)] for n in range(len(group.nodes)))
                         for g, group in enumerate(groups)))


def _greedy(g: int, sizes: Sequence[Resources], left: dict[str, Resources],
            policy: PlacementPolicy) -> list[str] | str:
    chosen: list[str | None] = [None] * len(sizes)
    uses: dict[str, int] = {}
    local = dict(left)
    needed = total(sizes)
    # Largest first; among equals, in the order given.
    for n in sorted(range(len(sizes)), key=lambda i: (_size_key(sizes[i]), -i), reverse=True):
        size = sizes[n]
        fitting = [name for name in local if size.fits(local[name])]
        if not fitting:
            return (f"fixedSizeNodes[{g}].nodes[{n}]: no node has {size} free for this "
                    f"virtual node now")
        if policy is PlacementPolicy.PACK:
            used = [name for name in fitting if name in uses]
            pick = (min(used, key=lambda name: (_roominess(local[name], needed), name)) if used
                    else max(fitting, key=lambda name: (_roominess(local[name], needed),
                                                        _desc(name))))
        else:  # SPREAD
            pick = min(fitting, key=lambda name: (uses.get(name, 0),
                                                  -_roominess(local[name], needed), name))
        chosen[n] = pick
        uses[pick] = uses.get(pick, 0) + 1
        local[pick] = local[pick] - size
    return [name for name in chosen if name is not None]


def _size_key(size: Resources) -> tuple[int, int, int]:
    return size.gpu, size.cpu, size.memory


def _roominess(free: Resources, needed: Resources) -> float:
    """How much room a node has for a group that needs `needed` in all: its free share of
    the dimension the group needs most (so GPU groups look at GPUs, CPU groups at CPUs)."""
    if needed.is_zero():
        return 0.0
    return min(free.get(d) / v for d, v in needed.items() if v > 0)


def _desc(name: str) -> tuple[int, ...]:
    """Sorts names in reverse, so that `max` breaks ties towards the first name."""
    return tuple(-ord(c) for c in name)
