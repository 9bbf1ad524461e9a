"""Hypothesis strategies for the property tests of the scheduling core.

Everything is built from the api objects directly (no YAML). A `World` is a cluster (nodes,
virtual clusters, priority classes) plus its jobs; `worlds()` generates random but valid
ones, some with tasks already running. Running state is never invented: it is produced by
running real cycles on the earlier jobs and applying their decisions with
`shoal.scenario.apply`, so it is consistent by construction (no over-committed node, GPU
indices from the node index, gangs at or above their minimum).

The second family, `guarantee_cases()`, is a deliberately simple shape for the guarantee
property: every node is a whole number of *slots* (one slot = `SLOT` = 1 GPU with its share
of CPU and memory), every task asks for one or two slots and every virtual-cluster `min` and
`max` is a whole number of slots, so "a task fits" is exactly "a node has a free GPU".
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from functools import cache

from hypothesis import assume
from hypothesis import strategies as st

from shoal.api import (
    BUILTIN_PRIORITY_CLASSES,
    DEFAULT_QUEUE,
    GPU_TYPE_LABEL,
    ROOT_QUEUE,
    Decisions,
    Job,
    Node,
    PriorityClass,
    QueueingPolicy,
    ResourceLimit,
    Resources,
    SchedulerName,
    TaskGroup,
    VirtualCluster,
)
from shoal.api.resources import CORE_DIMENSIONS, total
from shoal.core import Snapshot
from shoal.scenario import apply
from shoal.scheduler import Profile, run_cycle

PROFILE_NAMES = ("default", "strict-fifo", "spread")
GPU_TYPES = ("A100", "V100")
ZONE_LABEL = "zone"


LENDING_PROFILES = {
    "lend-only": """
name: lend-only
description: Guarantees are lent to any task (capacity reclaimMode reclaim), never taken back.
actions: "enqueue, allocate, backfill"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity, arguments: {reclaimMode: reclaim}},
              {name: placement}]
""",
    "lend-reclaim": """
name: lend-reclaim
description: Guarantees are lent to any task (capacity reclaimMode reclaim) and reclaimed.
actions: "enqueue, allocate, backfill, preempt, reclaim"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity, arguments: {reclaimMode: reclaim}},
              {name: placement}]
""",
    "evict-first": """
name: evict-first
description: Reclaim and preempt before allocate, as Volcano's capacity setups order them.
actions: "enqueue, reclaim, preempt, allocate"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity, arguments: {reclaimMode: reclaim}},
              {name: placement}]
""",
    "place-only": """
name: place-only
description: The plugins of evict-first with allocation alone, so what fits without eviction.
actions: "enqueue, allocate"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity, arguments: {reclaimMode: reclaim}},
              {name: placement}]
""",
}
"""Test-only profiles beside the built-in ones: guarantees lent, and preemption."""


@cache
def profile(name: str) -> Profile:
    """Built-in profiles and `LENDING_PROFILES`, parsed once per process (a `Profile` is
    immutable)."""
    if name in LENDING_PROFILES:
        return Profile.from_yaml(LENDING_PROFILES[name], name)
    return Profile.load(name)


# ---- the world ----------------------------------------------------------------------------


@dataclass(frozen=True)
class World:
    """A cluster and its jobs at one instant; `snapshot()` is what a cycle reads."""

    nodes: tuple[Node, ...]
    virtual_clusters: tuple[VirtualCluster, ...]
    priority_classes: tuple[PriorityClass, ...]
    jobs: tuple[Job, ...]
    profile_name: str = "default"
    now: float = 0.0

    def snapshot(self) -> Snapshot:
        return Snapshot(self.nodes, self.jobs, self.virtual_clusters, self.priority_classes,
                        now=self.now)

    @property
    def profile(self) -> Profile:
        return profile(self.profile_name)

    def with_jobs(self, jobs: Iterable[Job], now: float | None = None) -> World:
        return replace(self, jobs=tuple(jobs), now=self.now if now is None else now)

    def step(self, profile_name: str | None = None) -> tuple[Snapshot, Decisions, World]:
        """Run one cycle and apply its decisions (as the scenario runner does)."""
        snapshot = self.snapshot()
        decisions = run_cycle(snapshot, profile(profile_name or self.profile_name))
        jobs = apply({j.name: j for j in self.jobs}, decisions, now=self.now)
        return snapshot, decisions, self.with_jobs(jobs.values(), now=self.now + 1.0)

    def assert_cycles_alike(self, count: int,
                            plain: Callable[[], AbstractContextManager[object]]) -> None:
        """`count` cycles, each applied before the next, decide the same as they do inside
        `plain()` (a knob that turns a shortcut of the core off)."""
        jobs = {j.name: j for j in self.jobs}
        for _ in range(count):
            snapshot = self.with_jobs(jobs.values()).snapshot()
            decided = run_cycle(snapshot, self.profile)
            with plain():
                assert decided == run_cycle(snapshot, self.profile)
            jobs = apply(jobs, decided, now=self.now)



def capacity(nodes: Sequence[Node], jobs: Sequence[Job] = ()) -> Resources:
    """What the quota tree's root stands for: the allocatable of the schedulable nodes, plus
    what tasks still hold on cordoned nodes (they are charged to their VCs)."""
    cordoned = {n.name for n in nodes if not n.schedulable}
    held = [j.group(t.group).resources for j in jobs for t in j.tasks
            if t.state.holds_resources and t.node in cordoned]
    return total([*(n.allocatable_resources for n in nodes if n.schedulable), *held])


# ---- nodes --------------------------------------------------------------------------------

names = st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=6)


@st.composite
def nodes(draw: st.DrawFn, min_size: int = 1, max_size: int = 12) -> tuple[Node, ...]:
    node_names = draw(st.lists(names, min_size=min_size, max_size=max_size, unique=True))
    out = []
    for name in node_names:
        gpu = draw(st.integers(0, 8))
        cpu = draw(st.sampled_from([4000, 8000, 16000, 32000, 64000]))
        memory = draw(st.sampled_from([8192, 16384, 65536, 262144]))
        cap = Resources.of(cpu=cpu, memory=memory, gpu=gpu)
        labels: dict[str, str] = {}
        if gpu and draw(st.booleans()):
            labels[GPU_TYPE_LABEL] = draw(st.sampled_from(GPU_TYPES))
        if draw(st.integers(0, 3)) == 0:
            labels[ZONE_LABEL] = draw(st.sampled_from(["a", "b"]))
        allocatable = None
        if draw(st.integers(0, 3)) == 0:
            # The system keeps some CPU and memory (never GPUs).
            allocatable = Resources.of(cpu=cpu - draw(st.integers(0, cpu // 4)),
                                       memory=memory - draw(st.integers(0, memory // 4)),
                                       gpu=gpu)
        schedulable = draw(st.integers(0, 9)) != 0
        out.append(Node(name, cap, labels, allocatable, schedulable))
    return tuple(out)


# ---- virtual clusters ---------------------------------------------------------------------


MAX_SLACK = {"cpu": [0, 1, 2000, 8000, 32000], "memory": [0, 4096, 16384, 131072],
             "gpu": [0, 1, 2, 4, 8]}
"""How far above its min a VC's max may be, per dimension."""


def _split(draw: st.DrawFn, room: Resources, dims: Sequence[str] = CORE_DIMENSIONS
           ) -> Resources:
    """A vector that fits in `room` (each dimension drawn between 0 and room's)."""
    values = {d: draw(st.integers(0, room.get(d))) if room.get(d) else 0 for d in dims}
    return Resources.of(cpu=values.get("cpu", 0), memory=values.get("memory", 0),
                        gpu=values.get("gpu", 0))


@st.composite
def vc_trees(draw: st.DrawFn, root_min: Resources, max_vcs: int = 5, max_depth: int = 3,
             unit: Resources | None = None, limits: bool = False
             ) -> tuple[VirtualCluster, ...]:
    """0–`max_vcs` VCs in a tree at most `max_depth` levels below the root. Every VC's `min`
    fits in what its parent's `min` has left after the siblings drawn before it (the root's
    `min` is `root_min`, the cluster's capacity), so Σ children's min ≤ parent's min. An
    optional `max` limits some dimensions, each at or above the `min`. With `unit`, mins and
    maxes are whole multiples of it. With `limits`, some VCs have a `borrowingLimit` and a
    `lendingLimit` (issue 16), the latter at most the `min` (`_limits`)."""
    count = draw(st.integers(0, max_vcs))
    vc_names = draw(st.lists(names.map(lambda s: "vc-" + s), min_size=count, max_size=count,
                             unique=True))
    depth = {ROOT_QUEUE: 0}
    left: dict[str, Resources] = {ROOT_QUEUE: root_min}
    units_left: dict[str, int] = {ROOT_QUEUE: root_min.gpu if unit else 0}
    out: list[VirtualCluster] = []
    for name in vc_names:
        parents = [p for p in depth if depth[p] < max_depth]
        parent = draw(st.sampled_from(sorted(parents)))
        if unit is None:
            minimum = _split(draw, left[parent])
            left[parent] = left[parent] - minimum
        else:
            slots = draw(st.integers(0, units_left[parent]))
            units_left[parent] -= slots
            units_left[name] = slots
            minimum = unit.scale(slots)
        left[name] = minimum
        depth[name] = depth[parent] + 1
        maximum = ResourceLimit()
        if draw(st.booleans()):
            if unit is None:
                dims = draw(st.lists(st.sampled_from(CORE_DIMENSIONS), min_size=1, unique=True))
                maximum = ResourceLimit.of({
                    d: minimum.get(d) + draw(st.sampled_from(MAX_SLACK[d])) for d in dims})
            else:
                slots_max = minimum.gpu + draw(st.integers(0, 6))
                maximum = ResourceLimit.from_resources(unit.scale(slots_max))
        borrowing, lending = _limits(draw, minimum, unit) if limits else \
            (ResourceLimit(), ResourceLimit())
        out.append(VirtualCluster(
            name, parent, minimum, maximum, weight=draw(st.integers(1, 3)),
            queueing=draw(st.sampled_from(list(QueueingPolicy))),
            borrowing_limit=borrowing, lending_limit=lending))
    return tuple(out)


def _limits(draw: st.DrawFn, minimum: Resources, unit: Resources | None
            ) -> tuple[ResourceLimit, ResourceLimit]:
    """An optional borrowingLimit (some dimensions, any amount; whole units with `unit`) and
    an optional lendingLimit at most `minimum` (as the spec layer requires)."""
    borrowing = lending = ResourceLimit()
    if unit is not None:
        if draw(st.booleans()):
            borrowing = ResourceLimit.from_resources(unit.scale(draw(st.integers(0, 4))))
        if draw(st.booleans()):
            lending = ResourceLimit.from_resources(
                unit.scale(draw(st.integers(0, minimum.gpu))))
        return borrowing, lending
    if draw(st.booleans()):
        dims = draw(st.lists(st.sampled_from(CORE_DIMENSIONS), min_size=1, unique=True))
        borrowing = ResourceLimit.of({d: draw(st.sampled_from(MAX_SLACK[d])) for d in dims})
    if draw(st.booleans()):
        dims = draw(st.lists(st.sampled_from(CORE_DIMENSIONS), min_size=1, unique=True))
        lending = ResourceLimit.of({d: draw(st.integers(0, minimum.get(d))) for d in dims})
    return borrowing, lending


def leaves(vcs: Sequence[VirtualCluster]) -> list[str]:
    parents = {vc.parent for vc in vcs}
    return sorted(vc.name for vc in vcs if vc.name not in parents)


@st.composite
def priority_classes(draw: st.DrawFn) -> tuple[PriorityClass, ...]:
    pc_names = draw(st.lists(names.map(lambda s: "pc-" + s), max_size=3, unique=True))
    default = draw(st.sampled_from([None, *pc_names]))
    return tuple(PriorityClass(n, draw(st.integers(-100, 20000)), global_default=n == default)
                 for n in pc_names)


# ---- jobs ---------------------------------------------------------------------------------

small_requests = st.builds(
    Resources.of,
    cpu=st.sampled_from([0, 500, 1000, 2000, 3000, 4000]),
    memory=st.sampled_from([0, 512, 1024, 2048, 4096]),
    gpu=st.sampled_from([0, 0, 1, 1, 2]),
)
any_requests = st.builds(
    Resources.of,
    cpu=st.sampled_from([0, 500, 1000, 2000, 3000, 4000, 8000, 16000, 70000]),
    memory=st.sampled_from([0, 512, 1024, 4096, 16384, 65536, 300000]),
    gpu=st.sampled_from([0, 0, 0, 1, 1, 2, 4, 8, 9]),
)
requests = st.integers(0, 9).flatmap(lambda k: any_requests if k == 0 else small_requests)
"""Per-task requests: mostly small, sometimes large or larger than any node (cpu 70000,
memory 300000, gpu 9)."""

selectors = st.sampled_from([
    {}, {}, {}, {}, {}, {}, {GPU_TYPE_LABEL: "A100"}, {GPU_TYPE_LABEL: "V100"},
    {ZONE_LABEL: "a"}])


@st.composite
def task_groups(draw: st.DrawFn, request: st.SearchStrategy[Resources] = requests
                ) -> tuple[TaskGroup, ...]:
    count = draw(st.integers(1, 3))
    selector = draw(selectors)
    return tuple(TaskGroup(f"g{i}", draw(st.integers(1, 6)), draw(request),
                           node_selector=selector if draw(st.booleans()) else {})
                 for i in range(count))


@st.composite
def jobs(draw: st.DrawFn, queues: Sequence[str], classes: Sequence[str],
         max_size: int = 25, request: st.SearchStrategy[Resources] = requests,
         selectors_allowed: bool = True, prefix: str = "j") -> tuple[Job, ...]:
    count = draw(st.integers(0, max_size))
    job_names = draw(st.lists(names.map(lambda s: f"{prefix}-{s}"), min_size=count,
                              max_size=count, unique=True))
    out = []
    for name in job_names:
        groups = draw(task_groups(request))
        if not selectors_allowed:
            groups = tuple(replace(g, node_selector={}) for g in groups)
        gang = draw(st.booleans())
        replicas = sum(g.replicas for g in groups)
        # PodGroup minResources (gates the enqueue action), now and then.
        min_resources = groups[0].resources.scale(draw(st.integers(1, groups[0].replicas))) \
            if draw(st.integers(0, 5)) == 0 else None
        out.append(Job(
            name, groups, queue=draw(st.sampled_from(sorted(queues))),
            scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT,
            min_available=draw(st.one_of(st.none(), st.integers(1, replicas))),
            min_resources=min_resources,
            priority_class=draw(st.one_of(st.none(), st.sampled_from(sorted(classes)))),
            submitted=float(draw(st.integers(0, 30)))))
    return tuple(out)


def class_names(declared: Sequence[PriorityClass]) -> list[str]:
    return sorted({c.name for c in BUILTIN_PRIORITY_CLASSES} | {c.name for c in declared})


def warm_up(world: World, later: Sequence[Job], cycles: int, finished: Sequence[str],
            cordoned: Sequence[str] = ()) -> World:
    """Run `cycles` cycles of `world` (its jobs are the early ones), drop the jobs named in
    `finished` (they ended and gave their resources back), cordon the nodes named in
    `cordoned` (drained: unschedulable, their tasks still running), then submit `later`."""
    for _ in range(cycles):
        world = world.step()[2]
    kept = [j for j in world.jobs if j.name not in set(finished)]
    node_list = tuple(replace(n, schedulable=False) if n.name in set(cordoned) else n
                      for n in world.nodes)
    return replace(world.with_jobs([*kept, *later]), nodes=node_list)


@st.composite
def worlds(draw: st.DrawFn, max_nodes: int = 12, max_jobs: int = 25,
           profiles: Sequence[str] = PROFILE_NAMES, limits: bool = False) -> World:
    """A random cluster, VC tree, priority classes and jobs; some jobs already running (the
    early ones, after 0–2 real cycles), some of those finished, some nodes possibly cordoned
    with their tasks still running, and the later jobs waiting."""
    node_list = draw(nodes(max_size=max_nodes))
    vcs = draw(vc_trees(capacity(node_list), limits=limits))
    classes = draw(priority_classes())
    queues = [vc.name for vc in vcs] + [DEFAULT_QUEUE]
    # Real clusters have a few standard task flavours; drawing requests from a small
    # per-world catalogue makes many jobs share a shape, which is what caches keyed by
    # shape (fit bounds, quota answers, enqueue verdicts) must get right.
    flavours = draw(st.lists(requests, min_size=1, max_size=5))
    shapes = st.one_of(st.sampled_from(flavours), requests) if draw(st.booleans()) \
        else st.sampled_from(flavours)
    all_jobs = draw(jobs(queues, class_names(classes), max_size=max_jobs, request=shapes))
    profile_name = draw(st.sampled_from(list(profiles)))
    early_names = {j.name for j in all_jobs if draw(st.booleans())}
    early = [j for j in all_jobs if j.name in early_names]
    later = [j for j in all_jobs if j.name not in early_names]
    world = World(node_list, vcs, classes, tuple(early), profile_name)
    cycles = draw(st.sampled_from([0, 1, 1, 2])) if early else 0
    finished = draw(st.lists(st.sampled_from([j.name for j in early]), max_size=3,
                             unique=True)) if early and cycles else []
    cordoned = draw(st.lists(st.sampled_from([n.name for n in node_list]), max_size=2,
                             unique=True)) if draw(st.integers(0, 2)) == 0 else []
    return warm_up(world, later, cycles, finished, cordoned)


# ---- the slot world of the guarantee property ---------------------------------------------

SLOT = Resources.of(cpu=4000, memory=16384, gpu=1)
"""One GPU with its share of CPU and memory: every node, task, min and max is made of these."""


@dataclass(frozen=True)
class GuaranteeCase:
    world: World
    """After the borrowers ran to convergence; the target holds no waiting job."""
    target: str
    """A leaf VC with an unused guarantee."""
    idle_slots: int
    """The target's unused min, in slots: min(target) − usage(target)."""


@st.composite
def guarantee_cases(draw: st.DrawFn, profiles: Sequence[str] = PROFILE_NAMES,
                    limits: bool = False) -> GuaranteeCase:
    """Nodes of 1–8 slots; a VC tree whose mins and maxes are whole slots; a target leaf VC
    with min ≥ 1 slot; jobs of 1- or 2-slot tasks in the other leaf VCs and `default`,
    run until the scheduler changes nothing (they borrow whatever they may: under a profile
    that lends, the target's unused guarantee too). The target's own early jobs, if any, run
    too; those still waiting afterwards are dropped (they ended), so the job the test
    submits is the target's only waiting job."""
    node_names = draw(st.lists(names, min_size=1, max_size=8, unique=True))
    node_list = tuple(Node(n, SLOT.scale(draw(st.integers(1, 8)))) for n in node_names)
    vcs = draw(vc_trees(capacity(node_list), unit=SLOT, limits=limits))
    specs = {vc.name: vc for vc in vcs}
    candidates = [name for name in leaves(vcs) if specs[name].min.gpu >= 1]
    assume(candidates)
    target = draw(st.sampled_from(candidates))
    classes = draw(priority_classes())
    others = [n for n in leaves(vcs) if n != target] + [DEFAULT_QUEUE]
    slot_requests = st.sampled_from([SLOT, SLOT, SLOT.scale(2)])
    background = draw(jobs(others, class_names(classes), max_size=15, request=slot_requests,
                           selectors_allowed=False, prefix="bg"))
    own = draw(jobs([target], class_names(classes), max_size=2, request=slot_requests,
                    selectors_allowed=False, prefix="own"))
    profile_name = draw(st.sampled_from(list(profiles)))
    world = World(node_list, vcs, classes, (*background, *own), profile_name)
    for _ in range(12):
        _, decisions, world = world.step()
        if not decisions.changes_anything():
            break
    else:  # pragma: no cover - no evictions, so every cycle adds binds until none fit
        raise AssertionError("the borrowers did not converge in 12 cycles")
    waiting = {j.name for j in world.jobs if j.queue == target and
               sum(t.state.holds_resources for t in j.tasks) < j.replicas}
    world = world.with_jobs(j for j in world.jobs if j.name not in waiting)
    used = sum(j.group(t.group).resources.gpu for j in world.jobs if j.queue == target
               for t in j.tasks if t.state.holds_resources)
    idle = specs[target].min.gpu - used
    assume(idle >= 1)
    return GuaranteeCase(world, target, idle)

