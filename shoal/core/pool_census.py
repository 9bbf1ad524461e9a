"""How many replicas of one request each node of a pool can take now, and why the others
take none: kept up to date as nodes change, so a reason is worded in what changed.

A task group that does not fit is told so with a count ("3 fit now on the 5000 matching
nodes (4997 lack gpu)"). Counting node by node costs the pool's size for every request
shape turned down, in every cycle after capacity moved. A `Census` counts once, keeps each
node's share, and afterwards recounts only the nodes that `ClusterState.take` / `give`
touched since (the pool's change log, `NodePool.changed`): a cycle after one node frees
recounts that node, and the few its binds took.

A census describes the pool's committed and tentative state alike — it is a count of the
nodes as they are when read, not a bound — so it needs no epoch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shoal.api.resources import PODS, Resources

if TYPE_CHECKING:
    from shoal.core.nodes import NodePool, NodeState

Share = tuple[int, str | None, bool]
"""One node's part of a census: replicas it takes now; when none, the first dimension it is
short of (`pods`: at its task limit, short of nothing else); and whether that is CPU it has
free but keeps for its idle GPUs (gpu-discipline's reserve)."""


def node_share(node: NodeState, request: Resources) -> Share:
    """What one node takes of a non-zero `request` now (`Share`)."""
    here = node.how_many(request)
    if here:
        return here, None, False
    dim = node.first_short(request) or PODS
    return 0, dim, dim == "cpu" and request.cpu <= node.cpu


class Census:
    """`node_share` summed over a pool for one request: `fit`, `short` and `kept` are what a
    node-by-node count would give now, once `refresh` has read the pool's change log."""

    __slots__ = ("cursor", "fit", "kept", "request", "shares", "short")

    def __init__(self, pool: NodePool, request: Resources) -> None:
        self.request = request
        self.shares: dict[int, Share] = {}
        self.fit = 0
        self.kept = 0
        self.short: dict[str, int] = {}
        for node in pool.nodes:
            self._count(node.ordinal, node_share(node, request), 1)
        self.cursor = len(pool.changed)

    def refresh(self, pool: NodePool) -> None:
        """Recount the nodes changed since the last read (each once)."""
        changed = pool.changed
        if self.cursor == len(changed):
            return
        lookup = pool.lookup
        request = self.request
        for ordinal in set(changed[self.cursor:]):
            share = node_share(lookup[ordinal], request)
            old = self.shares[ordinal]
            if share != old:
                self._count(ordinal, old, -1)
                self._count(ordinal, share, 1)
        self.cursor = len(changed)

    def _count(self, ordinal: int, share: Share, sign: int) -> None:
        here, dim, kept = share
        if sign > 0:
            self.shares[ordinal] = share
        self.fit += sign * here
        if dim is not None:
            left = self.short.get(dim, 0) + sign
            if left:
                self.short[dim] = left
            else:
                del self.short[dim]
        if kept:
            self.kept += sign
