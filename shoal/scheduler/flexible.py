"""Flexible virtual nodes kept for an idle time (seed 003's "returns resources to its parent
when it no longer uses them, after a configurable idle time").

A virtual cluster's flexible part is what its tasks hold outside its fixed-size nodes,
charged to it in the quota tree. By default it goes back to the parent the moment a task
ends. With `flexibleIdleTimeout` T > 0, what a task held on a physical node stays the VC's
own for T seconds more, as its *flexible virtual node* on that node (at most one per node
and VC): still charged to it, so that no one else takes it, and used first by its next
tasks there. T seconds after that node's part last became idle, its idle part goes back.
That is what a Tune-style driver that starts trials one after another wants: its capacity is
not taken by another team between two trials.

Kept parts are `NodeState`s carved from their physical node like fixed-size virtual nodes
(`ClusterState.virtual`), but their size follows the tasks: it grows when a task's share is
kept and shrinks when an idle part expires. They are not recorded: a restarted control plane
starts with none (the capacity goes back, as with T = 0).
"""

from __future__ import annotations

from shoal.api.objects import VIRTUAL_CLUSTER_LABEL
from shoal.api.resources import Resources
from shoal.core.nodes import ClusterState, NodeState
from shoal.core.quota import QuotaTree


class FlexibleHolds:
    """Per (virtual cluster, physical node), the flexible part kept after its tasks ended."""

    def __init__(self, cluster: ClusterState, quota: QuotaTree) -> None:
        self.cluster = cluster
        self.quota = quota
        self.timeouts: dict[str, float] = {}
        """VC → its idle timeout, for those with one."""
        self.kept: dict[tuple[str, str], NodeState] = {}
        self.expiry: dict[tuple[str, str], float] = {}
        """When the idle part of each kept node goes back (model clock)."""

    def set_timeout(self, vc: str, seconds: float) -> None:
        if seconds > 0:
            self.timeouts[vc] = seconds

    def on(self, vc: str) -> list[NodeState]:
        """The VC's kept flexible nodes, by physical node name."""
        if not self.kept:
            return []
        return [state for (owner, _), state in sorted(self.kept.items()) if owner == vc]

    def keep(self, vc: str, host: NodeState, request: Resources, gpus: tuple[int, ...],
             now: float) -> bool:
        """A task of the VC that held `request` on physical node `host` ended: keep it as the
        VC's (still charged to it) if the VC has an idle timeout. False: it does not."""
        timeout = self.timeouts.get(vc)
        if timeout is None:
            return False
        key = (vc, host.name)
        state = self.kept.get(key)
        if state is None:
            name = f"{vc}/flexible/{host.name}"
            state = self.cluster.carve(name, host, Resources(),
                                       {VIRTUAL_CLUSTER_LABEL: vc}, vc)
            self.kept[key] = state
        state.allocatable = state.allocatable + request
        # Nothing new is free, but for the ended task's slot under a task limit (pods).
        self.cluster.give(state, request, gpus, undo=not host.pod_limited)
        self.expiry[key] = now + timeout
        return True

    def touched(self, state: NodeState, now: float) -> None:
        """A task on a virtual node ended: if it is a kept one, its idle time starts again."""
        key = (state.owner or "", state.physical.name)
        if self.kept.get(key) is state:
            self.expiry[key] = now + self.timeouts[key[0]]

    def expire(self, now: float) -> bool:
        """Give back every kept node's idle part whose time is up; whether any was."""
        changed = False
        for key in [k for k, at in self.expiry.items() if at <= now]:
            changed |= self._give_back_idle(key)
        return changed

    def release_on(self, host: str) -> None:
        """The physical node leaves service (its tasks already ended): give back its kept
        parts."""
        for key in [k for k in self.kept if k[1] == host]:
            self._give_back_idle(key)

    def remove(self, vc: str) -> None:
        """The VC goes (its job ended, its tasks with it): give back all it keeps."""
        for key in [k for k in self.kept if k[0] == vc]:
            self._give_back_idle(key)
        self.timeouts.pop(vc, None)

    def _give_back_idle(self, key: tuple[str, str]) -> bool:
        state = self.kept[key]
        idle = state.free()
        if idle.is_zero():
            self.expiry.pop(key, None)  # all in use: its idle time starts when a task ends
            return False
        gpus = self.cluster.free_gpu_indices(state)
        assert state.host is not None
        self.cluster.take(state, idle, gpus, tasks=0)
        state.allocatable = state.allocatable - idle
        self.cluster.give(state.host, idle, gpus, tasks=0)
        self.quota.refund(key[0], idle)
        if state.allocatable.is_zero():
            del self.kept[key], self.expiry[key]
            del self.cluster.virtual[state.name], self.cluster.by_name[state.name]
        else:
            self.expiry.pop(key, None)
        return True

