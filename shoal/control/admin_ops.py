"""Admin changes the control loop carries out (issue 21): nodes cordoned, drained and
uncordoned, a job's priority class changed, virtual clusters deleted once drained — a base
class of `ControlPlane`, on the loop's thread (asked from the API's through `_ask`, as holds
are: `shoal.control.gating`).

Each change is stored first, with its audit entry (`shoal.store.admin`), then the model is
rebuilt from the store (`_reload_model`), so the next cycle schedules with it: a cordoned
node takes nothing new and its tasks count at the root while they run; a job's new priority
class orders it, and lets it preempt or be preempted, per the profile.

A drain is a cordon whose node's tasks are evicted as a cycle evicts (`shoal.control.
evicting`): stored RELEASING with their jobs' notice and its deadline, then signalled, and
put back to pending once stopped, to be placed elsewhere. A task still protected
(`protectFor`) is left running until its protection ends; a gang that would fall below its
minimum is evicted whole. The drain is stored (`nodes.draining`) and goes on after a
restart; it ends when nothing is left on the node, which stays cordoned.

A virtual cluster deleted with `drain=true` is closed and marked in the store; the loop
deletes it once its last job has ended (`Repository.delete_drained_virtual_clusters`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from shoal.api import JobState, Node, VirtualCluster
from shoal.api.decisions import Evict
from shoal.control.membership import Membership
from shoal.control.node_watch import NodeWatch
from shoal.scheduler.jobs import JobInfo, TaskInfo
from shoal.scheduler.model import SchedulerModel
from shoal.store import Repository
from shoal.store.audit import AuditNote
from shoal.store.nodes import NodeRecord

T = TypeVar("T")
log = logging.getLogger(__name__)

#: How often the loop asks the store whether a drained virtual cluster may go (seconds).
VC_SWEEP_INTERVAL = 2.0
#: How often the loop looks for tasks on draining nodes whose protection has ended (s).
DRAIN_CHECK_INTERVAL = 0.5


class AdminOps:
    """`ControlPlane` supplies the store, the model, the nodes, the clock, `_ask`, how a
    model is rebuilt and how an evicted task is stopped."""

    repository: Repository
    clock: Callable[[], float]
    grace_period: float
    nodes: tuple[Node, ...]
    wake: threading.Event
    _node_watch: NodeWatch
    _membership: Membership
    _ending: dict[str, tuple[JobState, str]]
    _draining: frozenset[str] = frozenset()
    """Nodes being drained (the store's `nodes.draining`), read on the loop's thread."""
    _vc_deleting: frozenset[str] = frozenset()
    """Virtual clusters to delete once empty (the store's `virtual_clusters.deleting`)."""
    _vc_swept: float = 0.0
    _drain_checked: float = 0.0

    @property
    def model(self) -> SchedulerModel:
        raise NotImplementedError

    def _ask(self, question: Callable[[], T]) -> T:
        raise NotImplementedError

    def _command(self, command: Callable[[], None]) -> None:
        raise NotImplementedError

    def _reload_model(self) -> None:
        raise NotImplementedError

    def _settle_launches(self, *, wait: bool = True) -> bool:
        raise NotImplementedError

    def _evict(self, evict: Evict) -> None:
        raise NotImplementedError

    def reload_catalog(self) -> None:
        raise NotImplementedError

    # ---- the API's side (any thread) ----------------------------------------------------

    def set_node_service(self, name: str, note: AuditNote, *, cordoned: bool,
                         drain: bool = False) -> NodeRecord:
        """Cordon node `name` (`drain`: and evict its tasks), or uncordon it; the node as
        stored then. Raises NotFoundError, TimeoutError (the loop did not answer)."""
        return self._ask(lambda: self._set_node_service(name, note, cordoned, drain))

    def set_priority(self, name: str, priority_class: str, note: AuditNote) -> None:
        """Give a job that has not ended another priority class, from the next cycle.
        Raises NotFoundError, AdminConflictError (it has ended), TimeoutError."""
        self._ask(lambda: self._set_priority(name, priority_class, note))

    def drain_virtual_cluster(self, name: str, note: AuditNote) -> VirtualCluster:
        """Close a virtual cluster now and delete it once its last job has ended."""
        vc = self.repository.drain_virtual_cluster(name, note)
        self.reload_catalog()  # closed: it admits nothing new from now on
        self._command(lambda: self._note_deleting(name))
        return vc

    # ---- the loop's side -----------------------------------------------------------------

    def _resume_admin(self) -> None:
        """At start: drains and deletions a previous run left under way go on (an engine's
        listing of its nodes at start may have declared a draining node schedulable)."""
        self._vc_deleting = frozenset(self.repository.deleting_virtual_clusters())
        self._draining = frozenset(self.repository.draining_nodes())
        for name in self._draining:
            self.repository.set_node_service(name, None, cordoned=True, draining=True)
            self._serve(name, schedulable=False)

    def _set_node_service(self, name: str, note: AuditNote, cordoned: bool, drain: bool
                          ) -> NodeRecord:
        record = self.repository.set_node_service(name, note, cordoned=cordoned,
                                                  draining=drain)
        if self._serve(name, schedulable=not cordoned):
            self._reload_model()
        self._draining = (self._draining | {name} if record.draining
                          else self._draining - {name})
        log.info("node %s: %s", name, note.detail or note.action)
        self._drain_checked = 0.0  # what may go now goes now
        self._admin_tick()
        self.wake.set()
        return record

    def _serve(self, name: str, *, schedulable: bool) -> bool:
        """Make the loop's view of node `name` (un)schedulable; whether that changed it."""
        known = self._node_watch.known.get(name)
        if known is None or known.node.schedulable == schedulable:
            return False
        self._node_watch.known[name] = replace(known, node=replace(known.node,
                                                                   schedulable=schedulable))
        self.nodes = self._node_watch.schedulable()
        return True

    def _set_priority(self, name: str, priority_class: str, note: AuditNote) -> None:
        self.repository.set_job_priority(name, priority_class, note)
        if name in self.model.jobs:
            self._reload_model()
        self.wake.set()

    def _note_deleting(self, name: str) -> None:
        self._vc_deleting |= {name}
        self._vc_swept = 0.0

    def _admin_tick(self) -> None:
        """On the loop's poll tick: evict what may be evicted from draining nodes, delete
        the drained virtual clusters that are empty now."""
        now = time.monotonic()
        if self._draining and now >= self._drain_checked + DRAIN_CHECK_INTERVAL:
            self._drain_checked = now
            self._evict_draining()
        if self._vc_deleting and now >= self._vc_swept + VC_SWEEP_INTERVAL:
            self._vc_swept = now
            deleted = self.repository.delete_drained_virtual_clusters()
            self._vc_deleting = frozenset(self.repository.deleting_virtual_clusters())
            if deleted:
                log.info("virtual clusters deleted once drained: %s", ", ".join(deleted))
                self.reload_catalog()

    def _evict_draining(self) -> None:
        model = self.model
        physical = {name: state.physical.name for name, state in model.cluster.by_name.items()}
        on: dict[str, set[str]] = {n: set() for n in self._draining}
        now = self.clock()
        chosen: list[tuple[TaskInfo, str]] = []
        for info in list(model.jobs.values()):
            if info.job.name in self._ending or info.stopping:
                continue
            mine = [t for t in info.running if physical.get(t.node) in on]
            if not mine:
                continue
            for task in mine:
                on[physical[task.node]].add(info.job.name)
            victims = _victims(info, mine)
            if all(_unprotected(info, t, now) for t in victims):
                chosen.extend((t, physical[t.node]) for t in victims)
        if chosen:
            self._evict_tasks([Evict(t.ref, t.node, f"its node {node} is being drained")
                               for t, node in chosen])
        for node, jobs in on.items():
            if not jobs:  # nothing of it left to evict: the drain is over
                self.repository.node_drained(node)
                self._draining -= {node}
                log.info("node %s: drained", node)

    def _evict_tasks(self, evictions: Sequence[Evict]) -> None:
        """Evict tasks as a cycle does: stored, the notice written, then signalled."""
        self._settle_launches()
        model = self.model
        placed = {t.ref for info in model.jobs.values() for t in info.running}
        evictions = [e for e in evictions if e.task in placed]
        if not evictions:
            return
        self.repository.record_binds([], "evicted: " + evictions[0].reason, evictions)
        for evict in evictions:
            model.release_task(evict.task)
        self._membership.notify(model, evictions, self.clock() + self.grace_period)
        for evict in evictions:
            self._evict(evict)
        log.info("drain: evicted %s", ", ".join(str(e.task) for e in evictions))


def _victims(info: JobInfo, on_node: list[TaskInfo]) -> list[TaskInfo]:
    """The tasks of a job to evict for a drain: those on the node, or all that hold
    resources when the rest would fall below its gang minimum."""
    if info.ready - len(on_node) < info.job.gang_minimum:
        return list(info.running)
    return on_node


def _unprotected(info: JobInfo, task: TaskInfo, now: float) -> bool:
    protect = info.job.protect_for
    return task.started is None or protect <= 0 or now >= task.started + protect

