"""The live node inventory: what the control loop learns of its nodes from its engine
(`Executor.nodes`), and what that changes — the store's nodes (what `shoal nodes` shows),
the admission check and the scheduler model.

Every NODE_CHECK_INTERVAL seconds, on its poll tick, the loop asks the engine for its nodes
(one cheap call) and compares them with what it knows (`node_changes`, pure):

- a node the engine reports ready with what it offers (`NodeHealth.node`: a live inventory,
  such as Ray's) that the loop does not know has *joined*: it is stored and schedulable at
  the next cycle, so a job that waited for it starts without a restart;
- a known node reported not ready (dead, drained), or missing from a live inventory's
  report, is *not ready*: nothing more is placed on it, the tasks still charged to it stay
  charged until their engine reports them LOST (their retry policy then applies, as for any
  lost task), and the store records why, so `shoal nodes` shows it NotReady;
- a node reported ready again is schedulable again; one whose capacity or labels changed is
  updated (its declared `schedulable` is kept: a cordon is the admin's, not the engine's).

The local executor's nodes are declared (`NodeHealth.node` is None) and always ready: for it
a check is one tuple compared, and nothing ever changes. A change is logged, written to the
store in one transaction, and the model is rebuilt from the store with the nodes as they are
now (`ControlPlane._reload_model`): simpler and more robust than patching the model, and a
node change is rare. A node not ready stays in the model as unschedulable, so the tasks it
still holds are charged where they are. The admission check keeps not-ready nodes as
declared: a job submitted while its only fitting node reboots waits for it instead of being
refused as infeasible.

Load used outside Shoal (`Node.reserved`, a node's `status.reserved`) is the admin's, not
the engine's: `PUT /nodes` stores it, and each tick reads the stored nodes and takes up a
known node whose reserved load changed (`reserved_changes`) as a change of what it offers,
so a running `shoal up` schedules around it from the next cycle. What an engine reports of
a node keeps the reserved load known for it.

Nothing here is engine-specific: an engine says what its nodes are and whether they are
ready; how it knows is its own business.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from shoal.api import Node, PriorityClass, VirtualCluster
from shoal.executors.contract import Executor, NodeHealth
from shoal.scheduler.actions.enqueue import AdmissionCheck
from shoal.scheduler.profile import Profile
from shoal.store.nodes import NodeCondition, NodeRecord
from shoal.store.repository import Repository

log = logging.getLogger(__name__)

#: How often the control loop asks its engine for its nodes (seconds).
NODE_CHECK_INTERVAL = 2.0
#: The reason of a known node a live inventory no longer lists.
GONE = "gone: no longer listed by its engine"


class ChangeKind(StrEnum):
    JOINED = "joined"
    CHANGED = "changed"
    """Its capacity or labels are not what they were."""
    NOT_READY = "not ready"
    READY = "ready again"
    REASON = "still not ready"
    """Not ready before and now, for another reason: only the store's record changes."""


@dataclass(frozen=True, slots=True)
class NodeChange:
    kind: ChangeKind
    now: NodeRecord
    """The node as it is after the change."""

    @property
    def name(self) -> str:
        return self.now.node.name

    @property
    def moves_the_model(self) -> bool:
        return self.kind is not ChangeKind.REASON

    def describe(self) -> str:
        why = f" ({self.now.condition.reason})" if self.now.condition.reason else ""
        return f"node {self.name}: {self.kind.value}{why}"


def node_changes(known: Mapping[str, NodeRecord], reported: Sequence[NodeHealth]
                 ) -> list[NodeChange]:
    """What the engine's report changes of the nodes the loop knows (pure). A node the
    loop does not know is taken only when the engine says what it offers and that it is
    ready, and what a known node offers changes only while it is ready; a known node
    absent from the report is not ready only when the report is a live inventory's (it
    lists every node with what it offers): a declared node needs no report."""
    changes: list[NodeChange] = []
    listed: set[str] = set()
    live = False
    for health in reported:
        listed.add(health.name)
        live = live or health.node is not None
        was = known.get(health.name)
        condition = NodeCondition(True) if health.ready else NodeCondition(
            False, health.reason or "not ready")
        if was is None:
            if health.ready and health.node is not None:
                changes.append(NodeChange(ChangeKind.JOINED, NodeRecord(health.node)))
            continue
        node = was.node
        # A node that is not ready keeps the offer it had: the tasks it still holds until
        # they are lost keep their GPUs (Ray reports a dead node with no resources left).
        if health.ready and health.node is not None and _offer(health.node) != _offer(node):
            node = replace(health.node, name=node.name, schedulable=node.schedulable,
                           reserved=node.reserved)
        now = NodeRecord(node, condition)
        if now == was:
            continue
        if condition.ready != was.condition.ready:
            kind = ChangeKind.READY if condition.ready else ChangeKind.NOT_READY
        else:
            kind = ChangeKind.CHANGED if node != was.node else ChangeKind.REASON
        changes.append(NodeChange(kind, now))
    if live:
        for name, was in known.items():
            if name not in listed and was.condition.ready:
                changes.append(NodeChange(ChangeKind.NOT_READY,
                                          NodeRecord(was.node, NodeCondition(False, GONE))))
    return changes


def _offer(node: Node) -> tuple[object, ...]:
    """What an engine says of a node: not its declared schedulability, nor the load used
    outside Shoal (an admin's declaration)."""
    return (node.capacity, node.allocatable or node.capacity, dict(node.labels))


def reserved_changes(known: Mapping[str, NodeRecord], stored: Mapping[str, NodeRecord],
                     changes: Sequence[NodeChange]) -> list[NodeChange]:
    """Known nodes whose reserved load in the store (`PUT /nodes`, `status.reserved`) is not
    the one the loop knows (pure); `changes`, what the engine reported, take it up too."""
    out: list[NodeChange] = []
    changed = {c.name for c in changes}
    for name, was in known.items():
        record = stored.get(name)
        if record is None or name in changed or record.node.reserved == was.node.reserved:
            continue
        out.append(NodeChange(ChangeKind.CHANGED, NodeRecord(
            replace(was.node, reserved=record.node.reserved), was.condition)))
    return out


class NodeWatch:
    """The control loop's view of its nodes, kept up to date from its engine (on the loop's
    thread). Starts from the nodes the control plane was given, all ready."""

    def __init__(self, nodes: Sequence[Node], interval: float = NODE_CHECK_INTERVAL) -> None:
        self.known: dict[str, NodeRecord] = {n.name: NodeRecord(n) for n in nodes}
        """Read on the loop's thread only."""
        self._declared = tuple(nodes)
        self.interval = interval
        self._next = 0.0
        self._synced = False
        """The store's conditions were compared with the first report (a restart may find
        conditions a previous run recorded that are no longer true)."""

    def schedulable(self) -> tuple[Node, ...]:
        """The nodes for the scheduler model: not-ready ones unschedulable."""
        return tuple(k.schedulable for k in self.known.values())

    def declared(self) -> tuple[Node, ...]:
        """The nodes for the admission check: as declared, ready or not (any thread: the
        tuple is replaced whole)."""
        return self._declared

    def tick(self, now: float, executor: Executor, repository: Repository, *,
             at_once: bool = False) -> bool:
        """At most every `interval` seconds (monotonic `now`), or `at_once`: ask the
        engine, record what changed in the store and return whether the scheduler model
        must be rebuilt. An engine that cannot answer now is asked again at the next tick;
        nothing changes."""
        if now < self._next and not at_once:
            return False
        self._next = now + self.interval
        try:
            reported = executor.nodes()
        except Exception:  # a hiccup of the engine must not stop the loop, nor cordon all
            log.exception("cannot list the engine's nodes; asking again in %.0f s",
                          self.interval)
            return False
        changes = node_changes(self.known, reported)
        stored = {r.node.name: r for r in repository.node_records()}
        changes = [_with_stored(c, stored[c.name].node) if c.name in stored else c
                   for c in changes]
        changes += reserved_changes(self.known, stored, changes)
        if not changes and self._synced:
            return False
        written = {c.name: c.now.condition for c in changes}
        if not self._synced:  # what a previous run recorded may be true no longer
            for name, known in self.known.items():
                condition = written.get(name, known.condition)
                if name in stored and stored[name].condition != condition:
                    written[name] = condition
        if written:
            repository.record_nodes(
                [c.now.node for c in changes
                 if c.name not in self.known or self.known[c.name].node != c.now.node],
                written)
        self._synced = True
        for change in changes:
            self.known[change.name] = change.now
            log.info("%s", change.describe())
        self._declared = tuple(k.node for k in self.known.values())
        return any(c.moves_the_model for c in changes)


def _with_stored(change: NodeChange, stored: Node) -> NodeChange:
    """A node that joins again keeps the cordon an admin declared of it; any node keeps the
    reserved load stored for it."""
    node = change.now.node
    if change.kind is ChangeKind.JOINED and not stored.schedulable:
        node = replace(node, schedulable=False)
    if node.reserved != stored.reserved:
        node = replace(node, reserved=stored.reserved)
    return change if node is change.now.node else replace(change, now=replace(change.now,
                                                                               node=node))


class NodeWatching:
    """The control loop's half that takes up node changes: a base class of `ControlPlane`,
    which supplies the store, the engine, the catalog, the admission check and the model's
    rebuild. On the loop's thread."""

    repository: Repository
    executor: Executor
    nodes: tuple[Node, ...]
    virtual_clusters: tuple[VirtualCluster, ...]
    priority_classes: tuple[PriorityClass, ...]
    profile: Profile
    wake: threading.Event
    _node_watch: NodeWatch
    _admission: AdmissionCheck
    _admission_lock: threading.Lock

    def _reload_model(self) -> None:
        raise NotImplementedError

    def _watch_nodes(self, *, now: bool = False) -> None:
        """Take up, every few seconds (or `now`: a task was lost, perhaps with its node),
        what the engine says of its nodes: nodes that joined, died, came back or changed
        reach the admission check and, by a rebuild from the store, the model; the loop
        wakes to place what now fits."""
        watch = self._node_watch
        if not watch.tick(time.monotonic(), self.executor, self.repository, at_once=now):
            return
        self.nodes = watch.schedulable()
        admission = AdmissionCheck(watch.declared(), self.virtual_clusters,
                                   self.priority_classes, self.profile)
        with self._admission_lock:
            self._admission = admission
        self._reload_model()
        self.wake.set()
