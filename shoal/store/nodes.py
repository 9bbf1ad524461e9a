"""Nodes as the store keeps them: what was declared of each (`Node`: capacity, labels,
`schedulable`) and how its engine last reported it (`NodeCondition`: ready, or why not) —
the half of `Repository` (a base class of it) that the live node inventory
(`shoal.control.node_watch`) writes and `GET /api/v1/nodes` reads.

The two are kept apart on purpose: a node declared unschedulable is *cordoned* by an admin
and stays so whatever its engine says; a node its engine reports dead is *not ready* until
the engine reports it again, whatever was declared. `PUT /nodes` changes the declaration and
never the condition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import select

from shoal.api import Node, NodePhase
from shoal.store import convert
from shoal.store.cache import ReadThroughCache
from shoal.store.engine import Store
from shoal.store.models import NodeRow

#: The longest reason stored for a node that is not ready (an engine's message may be long).
REASON_CHARS = 500


@dataclass(frozen=True, slots=True)
class NodeCondition:
    """How a node's engine reported it last."""

    ready: bool = True
    reason: str = ""
    """Why it is not ready (dead, drained, gone); empty when it is."""


READY = NodeCondition()


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One stored node: what was declared of it and how its engine reported it."""

    node: Node
    condition: NodeCondition = READY
    draining: bool = False
    """Being drained (`shoal node drain`): its tasks are evicted as their protection ends."""

    @property
    def schedulable(self) -> Node:
        """The node as the scheduler model takes it: unschedulable while not ready."""
        if self.condition.ready or not self.node.schedulable:
            return self.node
        return replace(self.node, schedulable=False)

    @property
    def phase(self) -> NodePhase:
        """Not ready wins over cordoned: it says why nothing runs there now."""
        if not self.condition.ready:
            return NodePhase.NOT_READY
        return NodePhase.READY if self.node.schedulable else NodePhase.CORDONED


class NodeInventory:
    """The node-condition half of `Repository` (which supplies `store` and the catalog
    cache)."""

    store: Store
    _catalog: ReadThroughCache[tuple[Any, ...]]

    def node_records(self) -> list[NodeRecord]:
        """Every stored node with its condition, by name."""
        def load() -> tuple[NodeRecord, ...]:
            with self.store.reads.begin() as s:
                return tuple(NodeRecord(convert.node_from_row(r),
                                        NodeCondition(r.ready, r.reason), r.draining)
                             for r in s.scalars(select(NodeRow).order_by(NodeRow.name)))
        return list(self._catalog.get("node_records", load))

    def record_nodes(self, nodes: Sequence[Node],
                     conditions: Mapping[str, NodeCondition]) -> None:
        """In one transaction: create or replace `nodes` (a live inventory's nodes that
        joined or changed), then set the condition of each node named in `conditions`
        (a name with no stored node is skipped: there is nothing to show it on)."""
        with self.store.sessions.begin() as s:
            for node in nodes:
                s.add(convert.node_to_row(node, s.get(NodeRow, node.name)))
            s.flush()
            for name, condition in conditions.items():
                row = s.get(NodeRow, name)
                if row is not None:
                    row.ready = condition.ready
                    row.reason = "" if condition.ready else condition.reason[:REASON_CHARS]
        self._catalog.invalidate()
