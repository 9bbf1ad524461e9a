"""The cycle's working view of the nodes: free capacity, free GPU indices, and the index that
finds a node for a task without scanning every node.

`NodeState` is one node's mutable free capacity during a cycle. `NodePool` is the set of nodes
that pass a task group's static predicates (node selector, GPU type), bucketed by free GPU
count: a GPU task looks only at buckets with enough free GPUs, in the order the placement
policy asks for (fullest first to bin-pack, emptiest first to spread). CPU-only tasks search
the nodes without GPUs first, then from the bucket with the fewest free GPUs, so that GPU
machines stay free for GPU jobs (seed 002: "jobs require GPU resource should have higher
priority to run on GPU machines").

Every change of a node's free capacity goes through `ClusterState.take` / `give`, which keep
all pools containing that node in step. `release_epoch` counts every `give` that is not the
undo of a discarded statement: caches of "what cannot fit" stay valid until it moves. A pool
that keeps a census of a request (`shoal.core.pool_census`) also logs which nodes changed.

A node may declare a task limit, `capacity.pods` (Kubernetes' pod capacity). It is kept as
the extra dimension `pods` of the node's free capacity, but no task requests it: every task
taken onto the node (`take`/`give` with `tasks=1`, the default) counts one against it,
whatever it requests — a best-effort task too. A node that declares no `pods` takes any
number of tasks; `pods` is never charged to a virtual cluster's quota. A task on a virtual
node counts against the physical node it is carved from as well.

CPU kept for idle GPUs (seed 002: a GPU job needs CPU to feed its GPUs; the `gpu-discipline`
plugin, `shoal.scheduler.plugins.gpu_discipline`): with `ClusterState.set_cpu_reserve(r)`, a
CPU-only request (CPU, no GPU) sees a node's free CPU less `r` per idle GPU there, so CPU
work never leaves an idle GPU without the CPU to use it; a request with GPUs sees all of it.
CPU-only nodes sit in a bucket of their own (`CPU_ONLY`), searched first for CPU-only
requests, ahead of GPU nodes with no free GPU. The reserve is a slot on each node, read only
for CPU-only requests and only when it is non-zero: it costs a fit nothing when it is off.
A GPU task that takes less than `r` CPU per GPU *widens* the CPU-only view, so such a `take`
moves the release epoch (the memo's bounds would no longer be upper bounds otherwise).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass

from sortedcontainers import SortedList

from shoal.api.objects import Node
from shoal.api.resources import PODS, Resources
from shoal.core.pool_census import Census

_ONE_TASK = Resources.of(extras={PODS: 1})

CPU_ONLY = -1
"""The bucket of a pool's nodes that have no GPU at all: searched before every other bucket
for CPU-only requests, never for GPU requests."""


class NodeState:
    """One node's free capacity during a cycle."""

    __slots__ = ("allocatable", "cpu", "cpu_reserve", "extras", "gpu", "gpu_free_mask", "host",
                 "memory", "name", "node", "ordinal", "owner", "pod_limited", "pools")

    def __init__(self, ordinal: int, node: Node, host: NodeState | None = None,
                 owner: str | None = None, gpus: tuple[int, ...] = ()) -> None:
        alloc = node.allocatable_resources
        self.ordinal = ordinal
        self.name = node.name
        self.node = node
        self.allocatable = alloc
        self.cpu = alloc.cpu
        self.memory = alloc.memory
        self.gpu = alloc.gpu
        self.extras: dict[str, int] = dict(alloc.extras)
        self.pod_limited = PODS in self.extras
        """Whether the node declares a task limit (`capacity.pods`); without one it takes any
        number of tasks (not zero: an absent dimension here means unlimited)."""
        # Every GPU index the node declares: those of its reserved load (`Node.reserved`)
        # too, which `gpu` does not count. Tasks take the lowest free indices, so the load
        # used outside Shoal is on the highest ones, and a task that held one before the
        # load was declared keeps it.
        self.gpu_free_mask = (1 << (node.allocatable or node.capacity).gpu) - 1
        self.pools: list[NodePool] = []
        self.host = host
        """For a virtual node: the physical node it is carved from."""
        self.owner = owner
        """For a virtual node: the virtual cluster whose it is."""
        if host is not None:
            self.gpu_free_mask = sum(1 << index for index in gpus)
        self.cpu_reserve = 0
        """Millicores kept per idle GPU from CPU-only requests (`set_cpu_reserve`)."""

    @property
    def physical(self) -> NodeState:
        """The physical node: this one, or the one a virtual node is carved from."""
        return self.host or self

    def fits(self, request: Resources) -> bool:
        """Whether one more task of `request` fits here now: its resources, and a free task
        slot where a task limit (`capacity.pods`) is declared."""
        if request.cpu > self.cpu or request.memory > self.memory or request.gpu > self.gpu:
            return False
        if self.cpu_reserve and request.cpu and not request.gpu and \
                request.cpu > self.cpu - self.gpu * self.cpu_reserve:
            return False
        if request.extras:
            extras = self.extras
            if not all(v <= extras.get(k, 0) for k, v in request.extras):
                return False
        if self.pod_limited and self.extras.get(PODS, 0) < 1:
            return False
        host = self.host
        return host is None or not host.pod_limited or host.extras.get(PODS, 0) >= 1

    def task_slots(self) -> int | None:
        """How many more tasks the node's task limit admits now (the fewest of its own and,
        for a virtual node, its physical node's); None: no limit is declared."""
        slots: int | None = None
        for state in (self, self.host):
            if state is not None and state.pod_limited:
                free = max(0, state.extras.get(PODS, 0))
                slots = free if slots is None else min(slots, free)
        return slots

    def footprint(self, request: Resources) -> Resources:
        """What one task of `request` takes of this node's `free()`: its request, and one
        task slot where the node has a task limit."""
        return request + _ONE_TASK if self.pod_limited else request

    def how_many(self, request: Resources) -> int:
        """How many replicas of `request` fit here now, task limit included (a zero request
        only on a node with a task limit: else the answer is unbounded)."""
        counts = []
        if request.cpu:
            counts.append(max(0, self.cpu_for(request)) // request.cpu)
        if request.memory:
            counts.append(self.memory // request.memory)
        if request.gpu:
            counts.append(self.gpu // request.gpu)
        for key, value in request.extras:
            counts.append(self.extras.get(key, 0) // value)
        if self.pod_limited or self.host is not None:
            slots = self.task_slots()
            if slots is not None:
                counts.append(slots)
        return min(counts) if counts else 0

    def cpu_for(self, request: Resources) -> int:
        """The free CPU `request` may use: all of it for a request with GPUs (or none of
        CPU), less the reserve of the idle GPUs for a CPU-only one (may be negative)."""
        if self.cpu_reserve and request.cpu and not request.gpu:
            return self.cpu - self.gpu * self.cpu_reserve
        return self.cpu

    def free_for(self, request: Resources) -> Resources:
        """`free()` as `request` sees it: the CPU kept for idle GPUs left out of a CPU-only
        request's view (for saying which dimension is short)."""
        free = self.free()
        cpu = self.cpu_for(request)
        if cpu == self.cpu:
            return free
        return Resources.of(max(0, cpu), free.memory, free.gpu, dict(free.extras))

    def first_short(self, request: Resources) -> str | None:
        """`request.shortfall(self.free_for(request))[0]`, or None where nothing is short:
        asked of every node a census finds taking none (`shoal.core.pool_census`), without
        building the free vector, for a request of core dimensions on a node whose free
        capacity is a valid vector (else, `free_for` itself: it raises as it did)."""
        cpu, memory, gpu = self.cpu, self.memory, self.gpu
        if request.extras or cpu < 0 or memory < 0 or gpu < 0 \
                or (self.extras and not all(v >= 0 or k == PODS
                                            for k, v in self.extras.items())):
            short = request.shortfall(self.free_for(request))
            return short[0] if short else None
        if self.cpu_reserve and request.cpu and not request.gpu:  # `cpu_for`, inlined
            cpu = max(0, cpu - gpu * self.cpu_reserve)
        if request.cpu > cpu:
            return "cpu"
        if request.memory > memory:
            return "memory"
        if request.gpu > gpu:
            return "gpu"
        return None

    def free(self) -> Resources:
        extras = self.extras
        if self.pod_limited and extras[PODS] < 0:
            # More tasks than its limit were already running (the limit was lowered).
            extras = {**extras, PODS: 0}
        return Resources.of(self.cpu, self.memory, self.gpu, extras)

    def used(self) -> Resources:
        return self.allocatable.saturating_sub(self.free())


class NodePool:
    """Nodes passing one set of static predicates, indexed by free GPU count."""

    __slots__ = ("buckets", "censuses", "changed", "key", "lookup", "nodes", "slots")

    def __init__(self, key: Hashable, nodes: Sequence[NodeState],
                 lookup: Sequence[NodeState]) -> None:
        self.key = key
        self.nodes = list(nodes)
        self.lookup = lookup
        """Every node of the cluster by ordinal; the buckets hold ordinals."""
        self.buckets: dict[int, SortedList[int]] = {}
        self.slots: dict[int, int] = {}
        """`gpu_slots` per GPU count, while no node moves between buckets (`_move`): after a
        release every class of whole-node tasks asks it again, of a few GPU counts."""
        for state in self.nodes:
            self._add(state)
            state.pools.append(self)
        self.censuses: dict[Resources, Census] = {}
        """Per request shape turned down here, its census (`shoal.core.pool_census`)."""
        self.changed: list[int] = []
        """Ordinals of the nodes whose free capacity changed, in order, while a census is
        kept: each census reads on from where it last read."""

    def census(self, request: Resources) -> Census:
        """The census of a non-zero `request` over this pool, up to date."""
        census = self.censuses.get(request)
        if census is None:
            census = self.censuses[request] = Census(self, request)
        else:
            census.refresh(self)
        return census

    def touched(self, ordinal: int) -> None:
        """A node's free capacity changed. A log longer than a recount is dropped with the
        censuses reading it: recounting costs no more than reading it would."""
        changed = self.changed
        changed.append(ordinal)
        if len(changed) > 2 * len(self.nodes) + 64:
            changed.clear()
            self.censuses.clear()

    def forget_censuses(self) -> None:
        self.changed.clear()
        self.censuses.clear()

    def _add(self, state: NodeState) -> None:
        level = state.gpu if state.allocatable.gpu else CPU_ONLY
        bucket = self.buckets.get(level)
        if bucket is None:
            bucket = self.buckets[level] = SortedList()
        bucket.add(state.ordinal)

    def _move(self, state: NodeState, old_gpu: int) -> None:
        self.slots.clear()
        self.buckets[old_gpu if state.allocatable.gpu else CPU_ONLY].remove(state.ordinal)
        self._add(state)

    def gpu_slots(self, gpu: int) -> int:
        """An upper bound on how many tasks of `gpu` GPUs fit, from the buckets alone."""
        slots = self.slots.get(gpu)
        if slots is None:
            slots = self.slots[gpu] = sum(len(b) * (level // gpu)
                                          for level, b in self.buckets.items() if level >= gpu)
        return slots

    def candidates(self, request: Resources, spread: bool) -> Iterator[NodeState]:
        """Nodes with enough free GPUs, fullest first (or emptiest first when `spread` and
        the request has GPUs); for a CPU-only request, nodes without GPUs first (`CPU_ONLY`).
        Other dimensions are for the caller to check."""
        gpu = request.gpu
        levels = [level for level in self.buckets
                  if (level >= gpu or not gpu) and self.buckets[level]]
        levels.sort(reverse=spread and gpu > 0)
        lookup = self.lookup
        for level in levels:
            # No copy: callers stop iterating before they change any node.
            for ordinal in self.buckets[level]:
                yield lookup[ordinal]


class ClusterState:
    """All nodes' working state for one cycle, and the pools built from them on demand.

    `states` are the physical nodes. Virtual nodes (a virtual cluster's fixed-size nodes,
    seed 003) are carved out of them with `carve`: the physical node's free capacity shrinks
    by the virtual node's size, and the virtual node is a `NodeState` of its own, found by
    name and ordinal like any other but in no pool — only its owner's tasks look at it."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.states = [NodeState(i, n) for i, n in enumerate(sorted(nodes, key=lambda n: n.name))]
        self.by_name = {s.name: s for s in self.states}
        self.virtual: dict[str, NodeState] = {}
        self._next_ordinal = len(self.states)
        self.pools: dict[Hashable, NodePool] = {}
        self.release_epoch = 0
        self.cordoned: set[str] = set()
        """Nodes taken out of service (failed, drained): in no pool, whatever their flag."""
        self.idle_replicas: dict[tuple[Hashable, Resources], int] = {}
        """(pool, request) → replicas the pool holds when idle; depends on the nodes only (not
        on the CPU reserve: a CPU-only task kept off idle GPUs can run once they are busy)."""
        self.cpu_reserve = 0
        """Millicores kept per idle GPU from CPU-only requests, on every node."""
        self.layout = 0
        """Moves whenever nodes are cordoned, brought back, carved or given back: what a
        verdict on the idle cluster depends on (`shoal.scheduler.job_classes`)."""
        self._pod_limited: bool | None = None
        """Whether a physical node has a task limit (`limits_tasks`; they are fixed)."""
        self.taken = 0
        """Takes less the undone ones (`give(undo=True)`): between statements it moves
        exactly when capacity was taken for good, as `release_epoch` does when some came
        back — together they say the nodes' free capacity may have changed."""

    def limits_tasks(self) -> bool:
        """Whether some node has a task limit (pods) or is virtual (carved out of a host):
        where none is, freeing a task frees exactly what it holds, on its node alone."""
        limited = self._pod_limited
        if limited is None:
            limited = self._pod_limited = any(s.pod_limited for s in self.states)
        return limited or bool(self.virtual)

    def set_cpu_reserve(self, millicores: int) -> None:
        """Keep `millicores` per idle GPU from CPU-only requests on every node (0: off).
        O(1) when unchanged, as on every cycle but the first; lowering it frees capacity, so
        it moves the release epoch."""
        if millicores == self.cpu_reserve:
            return
        if millicores < 0:
            raise ValueError("the CPU reserve per idle GPU must not be negative")
        if millicores < self.cpu_reserve:
            self.release_epoch += 1
        self.cpu_reserve = millicores
        for state in (*self.states, *self.virtual.values()):
            state.cpu_reserve = millicores
        for pool in self.pools.values():
            pool.forget_censuses()  # what a CPU-only request sees changed on every node
    def pool(self, key: Hashable, admit: Callable[[Node], bool]) -> NodePool:
        """The pool for `key`, built once from the schedulable nodes that `admit` accepts."""
        pool = self.pools.get(key)
        if pool is None:
            members = [s for s in self.states
                       if s.node.schedulable and s.name not in self.cordoned and admit(s.node)]
            pool = self.pools[key] = NodePool(key, members, self.states)
        return pool

    def carve(self, name: str, host: NodeState, size: Resources, labels: dict[str, str],
              owner: str, gpus: tuple[int, ...] | None = None) -> NodeState:
        """Carve a virtual node of `size` out of `host` (which must have it free), holding
        the GPU indices `gpus` there (the lowest free ones when None)."""
        self.layout += 1
        taken = self.take(host, size, gpus, tasks=0)
        node = Node(name, size, {**host.node.labels, **labels})
        state = NodeState(self._next_ordinal, node, host, owner, taken)
        state.cpu_reserve = self.cpu_reserve
        self._next_ordinal += 1
        self.virtual[name] = self.by_name[name] = state
        return state

    def uncarve(self, state: NodeState) -> None:
        """Give a virtual node (holding nothing) back to its physical node."""
        self.layout += 1
        assert state.host is not None
        if state.free() != state.allocatable:
            raise ValueError(f"virtual node {state.name} still holds tasks")
        del self.virtual[state.name], self.by_name[state.name]
        self.give(state.host, state.allocatable, self.free_gpu_indices(state), tasks=0)

    def set_cordoned(self, name: str, cordoned: bool) -> None:
        """Take a node out of service or bring it back. Pools are rebuilt on next use (node
        changes are rare); bringing capacity back moves the release epoch."""
        self.layout += 1
        if cordoned:
            self.cordoned.add(name)
        else:
            self.cordoned.discard(name)
            self.release_epoch += 1
        self.pools.clear()
        self.idle_replicas.clear()
        for state in self.states:
            state.pools.clear()

    def take(self, state: NodeState, request: Resources, gpus: tuple[int, ...] | None = None,
             tasks: int = 1) -> tuple[int, ...]:
        """Reserve `request` on the node for `tasks` tasks (each counts one against a task
        limit; 0 for capacity that is no task's, as a carved virtual node); returns the GPU
        indices taken (the lowest free ones unless `gpus` names them)."""
        self.taken += 1
        old_gpu = state.gpu
        state.cpu -= request.cpu
        state.memory -= request.memory
        state.gpu -= request.gpu
        for key, value in request.extras:
            state.extras[key] = state.extras.get(key, 0) - value
        if tasks:
            _count_tasks(state, -tasks)
        if gpus is None:
            gpus = _lowest_bits(state.gpu_free_mask, request.gpu)
        for index in gpus:
            state.gpu_free_mask &= ~(1 << index)
        if state.gpu != old_gpu:
            for pool in state.pools:
                pool._move(state, old_gpu)
            if state.cpu_reserve and request.cpu < request.gpu * state.cpu_reserve:
                # Its GPUs were idle and kept more CPU than it takes: CPU-only requests
                # see more free CPU than before (see the module's docstring).
                self.release_epoch += 1
        _touched(state)
        return gpus

    def give(self, state: NodeState, request: Resources, gpus: tuple[int, ...],
             undo: bool = False, tasks: int = 1) -> None:
        """Return `request` and `tasks` task slots to the node. `undo` marks the reversal of
        a tentative take, which frees nothing that was free before the statement began."""
        old_gpu = state.gpu
        state.cpu += request.cpu
        state.memory += request.memory
        state.gpu += request.gpu
        for key, value in request.extras:
            state.extras[key] = state.extras.get(key, 0) + value
        if tasks:
            _count_tasks(state, tasks)
        for index in gpus:
            state.gpu_free_mask |= 1 << index
        if state.gpu != old_gpu:
            for pool in state.pools:
                pool._move(state, old_gpu)
        _touched(state)
        if undo:
            self.taken -= 1
        else:
            self.release_epoch += 1

    def free_gpu_indices(self, state: NodeState) -> tuple[int, ...]:
        return _lowest_bits(state.gpu_free_mask, state.gpu_free_mask.bit_count())


@dataclass(slots=True)
class _Bound:
    epoch: int
    replicas: int
    note: object = None
    """What the caller learnt when it computed the bound (a diagnosis to reuse)."""


class FitMemo:
    """Upper bounds on how many replicas of a request fit in a pool.

    Within a cycle allocations only shrink free capacity, so a bound stays an upper bound
    until some capacity is released (`ClusterState.release_epoch` moves); then it is dropped.
    Bounds must be recorded against committed state only (no tentative allocations)."""

    def __init__(self, cluster: ClusterState) -> None:
        self._cluster = cluster
        self._bounds: dict[tuple[Hashable, Resources], _Bound] = {}
        self.version = 0
        """Moves with every bound recorded or consumed: what a reason read from the memo
        depends on (`shoal.scheduler.job_classes`)."""

    def bound(self, pool: NodePool, request: Resources) -> int | None:
        entry = self._bounds.get((pool.key, request))
        if entry is None or entry.epoch != self._cluster.release_epoch:
            return None
        return entry.replicas

    def record(self, pool: NodePool, request: Resources, replicas: int, note: object = None
               ) -> None:
        self.version += 1
        self._bounds[(pool.key, request)] = _Bound(self._cluster.release_epoch, replicas, note)

    def entry(self, pool: NodePool, request: Resources) -> _Bound | None:
        """The still-valid bound with its note (`bound` and `note` in one look-up), or None;
        read only: the caller does not change it."""
        entry = self._bounds.get((pool.key, request))
        if entry is None or entry.epoch != self._cluster.release_epoch:
            return None
        return entry

    def note(self, pool: NodePool, request: Resources) -> object:
        """The note recorded with a still-valid bound, else None."""
        entry = self._bounds.get((pool.key, request))
        if entry is None or entry.epoch != self._cluster.release_epoch:
            return None
        return entry.note

    def consumed(self, pool: NodePool, request: Resources, replicas: int) -> None:
        """Lower the bound by replicas placed for good: a statement calls it as it commits
        (`Statement.consume`), never for placements it may still undo."""
        entry = self._bounds.get((pool.key, request))
        if entry is not None:
            self.version += 1
            entry.replicas = max(0, entry.replicas - replicas)


def _touched(state: NodeState) -> None:
    """Log a change of the node's free capacity in the pools keeping a census; a task on a
    virtual node also moves its physical node's task slots."""
    for pool in state.pools:
        if pool.censuses:
            pool.touched(state.ordinal)
    host = state.host
    if host is not None and host.pod_limited:
        for pool in host.pools:
            if pool.censuses:
                pool.touched(host.ordinal)


def _count_tasks(state: NodeState, change: int) -> None:
    """Move the task slots of the node, and of the physical node a virtual one is carved
    from, by `change` (negative: tasks taken); nodes without a task limit keep none."""
    if state.pod_limited:
        state.extras[PODS] += change
    host = state.host
    if host is not None and host.pod_limited:
        host.extras[PODS] += change


def _lowest_bits(mask: int, count: int) -> tuple[int, ...]:
    out: list[int] = []
    while len(out) < count and mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    if len(out) < count:
        raise ValueError(f"only {len(out)} free GPU indices, {count} needed")
    return tuple(out)
