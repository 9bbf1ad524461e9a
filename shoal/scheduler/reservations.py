"""The atomic reservation of virtual clusters' fixed-size nodes (seed 003), kept by the
scheduler model between cycles.

A virtual cluster (VC) with `fixedSizeNodes` is *reserved* once every one of its virtual
nodes is carved out of a physical node (`shoal.core.virtual_nodes.carve`, all or none);
until then it is *queued*, and its jobs wait with the reason. From the moment it is
reserved:
- each virtual node is a node of its own in the `ClusterState` (its size taken from its
  physical node's free capacity), labelled `shoal.io/virtual-cluster: <vc>` on top of its
  physical node's labels and its own; only the VC's jobs are placed on it;
- its size leaves the quota tree (`QuotaTree.carve`): tasks on virtual nodes are not charged
  there, so the fixed part is not reserved twice (once as nodes, once as guarantee).

While a VC is queued, the quota tree still counts its fixed part in its guarantee, so no
other VC may borrow it: capacity that frees up stays idle for the carving instead of being
taken again at once. Queued VCs are carved in line — declared ones in the order they were
created, then job-scoped ones in their queue's order (priority, or submission) — strictly:
one that cannot be carved keeps those behind it waiting (so a large VC is not starved by
smaller ones), as a strict-FIFO queue does for jobs; and one is carved only where it leaves
the others room (see `_carving_for`).

A carving is recorded in the VC (`VirtualCluster.reservation`): a driver that rebuilds its
model — the control plane after a restart — restores virtual nodes exactly where they were,
before the tasks that run on them are counted. A recorded carving that no longer fits (its
node is gone) is dropped and the VC queued again. A VC whose physical node is cordoned
gives all its virtual nodes back (the reservation is atomic both ways) and queues again.
"""

from __future__ import annotations

from collections.abc import Iterable

from shoal.api.decisions import PendingKind, PendingReason, Reserve
from shoal.api.objects import VIRTUAL_CLUSTER_LABEL, VirtualCluster, VirtualNodePlacement
from shoal.api.resources import Resources
from shoal.core.nodes import ClusterState, NodeState
from shoal.core.quota import QuotaTree
from shoal.core.virtual_nodes import carve

NOT_YET = "not carved yet"


def virtual_node_name(vc: str, index: int) -> str:
    """`<vc>/<index>`: `/` is in no node's or VC's name, so no physical node shares it."""
    return f"{vc}/{index}"


class FixedNodeReservations:
    """Which VCs hold their fixed-size nodes, where, and which wait for them."""

    def __init__(self, cluster: ClusterState, quota: QuotaTree,
                 virtual_clusters: Iterable[VirtualCluster]) -> None:
        self.cluster = cluster
        self.quota = quota
        self.specs = {vc.name: vc for vc in virtual_clusters if vc.fixed_size_nodes}
        self.nodes: dict[str, list[NodeState]] = {}
        """Reserved VC → its virtual nodes, in group then node order."""
        self.placements: dict[str, tuple[VirtualNodePlacement, ...]] = {}
        """Reserved VC → where its virtual nodes are carved (what a driver records)."""
        self.queued: dict[str, str] = {}
        """Queued VC → why it is not carved yet, in the order it will be tried."""
        self.changes: list[Reserve] = []
        """Reservations made or given back since the last `drain_changes`."""
        self._plan: dict[str, list[str]] = {}
        """Queued VC → the physical nodes it is planned on (see `_carving_for`)."""
        self._stale = True
        """The plan must be made again (a VC was added, or nodes changed)."""
        self._ranks: dict[str, tuple[float, ...]] = {}
        """Job-scoped VC → its place among the job-scoped ones in the queue."""
        for vc in self.specs.values():
            self._take_up(vc)

    def add(self, vc: VirtualCluster, rank: tuple[float, ...] = ()) -> None:
        """A virtual cluster created while the model runs (a job-scoped one): restored where
        recorded, else queued after the declared ones and before every job-scoped one of a
        greater `rank` (its job's: priority first in a priority queue, then submission)."""
        if not vc.fixed_size_nodes:
            return
        self.specs[vc.name] = vc
        self._ranks[vc.name] = rank
        self._take_up(vc)
        if vc.name in self.queued:
            self.queued = dict(sorted(self.queued.items(), key=lambda item: (
                item[0] in self._ranks, self._ranks.get(item[0], ()))))

    def _take_up(self, vc: VirtualCluster) -> None:
        """Restore the VC's recorded carving, or queue it; a recorded carving that no
        longer fits is reported given back, so that the driver's record follows."""
        if vc.reservation is not None and self._restore(vc, vc.reservation):
            return
        if vc.reservation is not None:
            self.changes.append(Reserve(vc.name, None, "its recorded carving no longer fits"))
        self.queued[vc.name] = NOT_YET
        self._stale = True

    def remove(self, vc: str) -> None:
        """A virtual cluster goes (its job ended): its virtual nodes, which must hold
        nothing, go back to their physical nodes."""
        self.queued.pop(vc, None)
        self._plan.pop(vc, None)
        self._ranks.pop(vc, None)
        spec = self.specs.pop(vc, None)
        states = self.nodes.pop(vc, None)
        if spec is None or states is None:
            return
        for state in states:
            self.cluster.uncarve(state)
        del self.placements[vc]
        self.quota.carve(vc, spec.fixed_resources, -1)

    def blocker(self, vc: str) -> PendingReason | None:
        """Why the VC's jobs cannot be placed now, when it is queued."""
        why = self.queued.get(vc)
        if why is None:
            return None
        ahead = next(iter(self.queued))
        wait = why if ahead == vc else f"queued behind virtual cluster {ahead!r}"
        return PendingReason(
            PendingKind.RESERVATION,
            f"virtual cluster {vc!r} waits for its fixed-size nodes to be reserved: {wait}",
            queue=vc)

    def on(self, vc: str) -> list[NodeState]:
        """The VC's virtual nodes (empty unless it is reserved with fixed-size nodes)."""
        return self.nodes.get(vc, [])

    # ---- reserving ----------------------------------------------------------------------

    def reserve_queued(self) -> tuple[list[str], bool]:
        """Carve the queued VCs, in order, while they can be: the VCs reserved, and whether
        any queued VC's reason changed."""
        before = dict(self.queued)
        done: list[str] = []
        for name in list(self.queued):
            vc = self.specs[name]
            hosts = self._carving_for(vc)
            if isinstance(hosts, str):
                self.queued[name] = hosts
                break
            placements = self._materialise(vc, [(h, None) for h in hosts])
            del self.queued[name]
            self._plan.pop(name, None)
            self.changes.append(Reserve(name, placements))
            done.append(name)
        return done, self.queued != before

    def _carving_for(self, vc: VirtualCluster) -> list[str] | str:
        """Where to carve the VC's virtual nodes now (their physical nodes, in order), or
        why not.

        Carving each VC where it first fits could take the only nodes a VC queued behind it
        needs, and leave that one queued forever though the set was checked carvable (the
        property test found two such cases). So the queued VCs always have a *plan*: a
        carving of all of them together out of the nodes once idle (less what is carved).
        The spec check makes sure one exists; each step keeps one: a VC is carved either
        where the plan puts it, when that has room now, or elsewhere only if the VCs behind
        it can then be planned anew. When the nodes are idle, the plan's place has room, so
        the queue always drains."""
        rest = [self.specs[n] for n in self.queued if n != vc.name]
        planned = self._planned().get(vc.name)
        if planned is not None and self._fits_now(vc, planned):
            return planned
        free = self._free(idle=False)
        later = [g for other in rest for g in other.fixed_size_nodes]
        tries: list[tuple[tuple[str, ...], ...]] = []
        joint = carve((*vc.fixed_size_nodes, *later), free) if later else None
        if joint is not None and not isinstance(joint, str):
            tries.append(joint.nodes[:len(vc.fixed_size_nodes)])
        alone = carve(vc.fixed_size_nodes, free)
        if isinstance(alone, str) and not tries:
            return alone
        if not isinstance(alone, str):
            tries.append(alone.nodes)
        for carving in tries:
            hosts = [host for group in carving for host in group]
            left = self._free(idle=True)
            for host, spec in zip(hosts, vc.virtual_node_specs, strict=True):
                left[host] = left[host].saturating_sub(spec.resources)
            plan = self._plan_for(rest, left)
            if plan is not None:
                self._plan = plan
                return hosts
        return ("carving it now where there is room would leave none for the fixed-size nodes "
                "of " + ", ".join(repr(other.name) for other in rest) + ", queued behind it; "
                "it waits for the nodes it is planned on")

    def _planned(self) -> dict[str, list[str]]:
        if self._stale:
            self._plan = self._plan_for([self.specs[n] for n in self.queued],
                                        self._free(idle=True)) or {}
            self._stale = False
        return self._plan

    @staticmethod
    def _plan_for(vcs: list[VirtualCluster], free: dict[str, Resources]
                  ) -> dict[str, list[str]] | None:
        """Where each of `vcs` would go, carved together out of `free`; None if they
        cannot all be."""
        groups = [g for vc in vcs for g in vc.fixed_size_nodes]
        carving = carve(groups, free)
        if isinstance(carving, str):
            return None
        plan: dict[str, list[str]] = {}
        start = 0
        for vc in vcs:
            count = len(vc.fixed_size_nodes)
            plan[vc.name] = [h for group in carving.nodes[start:start + count] for h in group]
            start += count
        return plan

    def _fits_now(self, vc: VirtualCluster, hosts: list[str]) -> bool:
        left = self._free(idle=False)
        for host, spec in zip(hosts, vc.virtual_node_specs, strict=True):
            if host not in left or not spec.resources.fits(left[host]):
                return False
            left[host] = left[host] - spec.resources
        return True

    def _free(self, idle: bool) -> dict[str, Resources]:
        """Per schedulable physical node, what is free now, or (`idle`) what would be with
        no task running: its allocatable less the virtual nodes carved from it."""
        states = [s for s in self.cluster.states
                  if s.node.schedulable and s.name not in self.cluster.cordoned]
        if not idle:
            return {s.name: s.free() for s in states}
        out = {s.name: s.allocatable for s in states}
        for virtual in self.cluster.virtual.values():
            host = virtual.physical.name
            if host in out:
                out[host] = out[host].saturating_sub(virtual.allocatable)
        return out

    def release_on(self, host: str) -> list[str]:
        """Give back every reservation with a virtual node on `host` (being cordoned); the
        VCs queue again, ahead of those that never had one. Their virtual nodes must hold
        no task."""
        hit = [vc for vc, states in self.nodes.items()
               if any(s.physical.name == host for s in states)]
        for vc in hit:
            for state in self.nodes.pop(vc):
                self.cluster.uncarve(state)
            del self.placements[vc]
            self.quota.carve(vc, self.specs[vc].fixed_resources, -1)
            why = f"its node {host} was taken out of service"
            self.changes.append(Reserve(vc, None, why))
            self.queued = {vc: why, **self.queued}
        self._stale = True
        return hit

    def nodes_changed(self) -> None:
        """A node left or came back: the plan is made again."""
        self._stale = True

    def drain_changes(self) -> list[Reserve]:
        out, self.changes = self.changes, []
        return out

    def _restore(self, vc: VirtualCluster, placements: tuple[VirtualNodePlacement, ...]
                 ) -> bool:
        specs = vc.virtual_node_specs
        if len(placements) != len(specs):
            return False
        for placement, spec in zip(placements, specs, strict=True):
            state = self.cluster.by_name.get(placement.node)
            if state is None or state.host is not None or not state.node.schedulable or \
                    placement.node in self.cluster.cordoned or \
                    len(placement.gpus) != spec.resources.gpu:
                return False
        trial = {p.node: self.cluster.by_name[p.node].free() for p in placements}
        masks = {p.node: self.cluster.by_name[p.node].gpu_free_mask for p in placements}
        for placement, spec in zip(placements, specs, strict=True):
            if not spec.resources.fits(trial[placement.node]):
                return False
            trial[placement.node] = trial[placement.node] - spec.resources
            for index in placement.gpus:
                if not masks[placement.node] >> index & 1:
                    return False
                masks[placement.node] &= ~(1 << index)
        self._materialise(vc, [(p.node, p.gpus) for p in placements])
        return True

    def _materialise(self, vc: VirtualCluster,
                     where: list[tuple[str, tuple[int, ...] | None]]
                     ) -> tuple[VirtualNodePlacement, ...]:
        states: list[NodeState] = []
        for index, ((host, gpus), spec) in enumerate(zip(where, vc.virtual_node_specs,
                                                         strict=True)):
            labels = {**spec.labels, VIRTUAL_CLUSTER_LABEL: vc.name}
            states.append(self.cluster.carve(virtual_node_name(vc.name, index),
                                             self.cluster.by_name[host], spec.resources,
                                             labels, vc.name, gpus))
        self.nodes[vc.name] = states
        self.quota.carve(vc.name, vc.fixed_resources)
        placements = tuple(VirtualNodePlacement(s.physical.name,
                                                self.cluster.free_gpu_indices(s))
                           for s in states)
        self.placements[vc.name] = placements
        return placements

