"""Issue 17's rules together under the built-in `fairshare` profile (services, enqueue,
allocate, backfill, fairshare; fairshare, priority with aging, usage, gang; predicates,
capacity, placement, gpu-discipline), driven through the simulator on random worlds.

Each rule was tested alone by its slice; here they meet. A world mixes rigid gangs,
elastic jobs and CPU-only jobs of the four priority classes, several users in two or three
virtual clusters (some with `maxPerUser`), GPU nodes with load used outside Shoal
(`Node.reserved`) beside a CPU-only node, an online service with a quiet-hours schedule,
and jobs with `freezingWindow` and `checkpointInterval`. After every cycle the decisions
are replayed on a ledger this test keeps itself, and checked by oracles that read only the
ledger, the world and the decisions — never the scheduler's model:

- no node holds more than its capacity, counting what it has reserved outside Shoal;
- no gang runs below its minimum;
- no user holds more than `maxPerUser` in a virtual cluster;
- a service's task is evicted only by its own schedule (down to what it needs then);
- a CPU-only task is bound to a GPU node only if the node keeps, after it, a CPU per idle
  GPU (gpu-discipline's default reserve);
- the fairshare action resizes no job within its freezing window of its last change;
- every job starts before the run ends.

The second property is `tests/property/test_starvation.py`'s bound carried over to this
profile: same streams (one virtual cluster, identical nodes, any class, every job fitting
the idle cluster, offered load below 1), now with elastic jobs beside rigid ones, so that
the fairshare action grows and shrinks while a starving job holds its reservation. The
bound's argument holds as it is, with two changes. Order: the fairshare plugin orders
first, but a job that never ran has key 0, so waiting jobs are in aging order as there.
`dmax`: an elastic job may run at its minimum size, and its work (linear speed-up) then
takes `duration × max / min`; that is the longest a task on the head's nodes may run. Step 2
is checked on its own too, as there: first in order and starving, a job waits at most that
long plus two cycles. Were the fairshare action to start a job behind the starving head, it
would break (it does, tried). Growing a running job onto the reserved nodes does not break
it — such a job ends within the longest run anyway — so that rule has its scenario table
(`together17-grow-keeps-off-reservation`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Elasticity, Node, PriorityClass, Resources, VirtualCluster
from shoal.api.decisions import Decisions
from shoal.api.objects import BUILTIN_PRIORITY_CLASSES
from shoal.api.resources import ResourceLimit
from shoal.api.services import DAY, QuietWindow, Service
from shoal.scheduler import Profile
from shoal.sim.simulator import SimConfig, Simulator
from shoal.sim.trace import Trace, TraceJob

from .test_starvation import bound, longest_first_and_starving

CYCLE = 5.0
HOUR = 3600.0
VALUES = {c.name: c.value for c in BUILTIN_PRIORITY_CLASSES}
CLASSES = sorted(VALUES)
PROFILE_WINDOW = 300.0
"""The fairshare action's default `freezingWindow` in the built-in profile."""
CPU_PER_IDLE_GPU = 1000
"""gpu-discipline's default reserve: `minCpuPerGpu`, 1 CPU (millicores)."""
WEB_LABEL = {"role": "web"}


@dataclass(frozen=True)
class Cluster:
    nodes: tuple[Node, ...]
    virtual_clusters: tuple[VirtualCluster, ...] = ()
    priority_classes: tuple[PriorityClass, ...] = ()


@dataclass(frozen=True)
class World:
    cluster: Cluster
    jobs: tuple[TraceJob, ...]


def gpu_task(gpus: int, cpu_per_gpu: int) -> Resources:
    return Resources.of(cpu=1000 * gpus * cpu_per_gpu, memory=4096 * gpus, gpu=gpus)


# ---- the mixed world -----------------------------------------------------------------------

@st.composite
def worlds(draw: st.DrawFn) -> World:
    """GPU nodes (some with reserved load), maybe a CPU-only node, a node for the service;
    two or three virtual clusters, some capping each user; up to 25 jobs at offered load
    below 1, each fitting one regular GPU node (a CPU-only one the node with the most CPU
    left to it) and its user's cap."""
    gpus = draw(st.sampled_from([4, 8]))
    nodes: list[Node] = []
    for i in range(draw(st.integers(1, 2))):
        reserved = draw(st.sampled_from([Resources(), Resources.of(cpu=2000),
                                         Resources.of(cpu=2000, memory=8192, gpu=1)]))
        # Two CPUs per GPU beside the reserved load: CPU-only work that spills over meets
        # the idle GPUs' reserve, and a GPU gang at two CPUs per GPU still fits.
        nodes.append(Node(f"gpu{i}", Resources.of(cpu=2000 * gpus + reserved.cpu,
                                                  memory=256 * 1024, gpu=gpus),
                          reserved=reserved))
    if draw(st.booleans()):
        nodes.append(Node("cpu0", Resources.of(cpu=8000, memory=64 * 1024)))
    service = draw(st.booleans())
    if service:
        nodes.append(Node("web0", Resources.of(cpu=8000, memory=64 * 1024, gpu=2),
                          labels=WEB_LABEL))
    # The largest GPU task any regular GPU node holds whole, reserved load included.
    room = min(gpus - n.reserved.gpu for n in nodes if n.name.startswith("gpu"))
    caps = [draw(st.sampled_from([None, room, room // 2])) for _ in range(draw(st.integers(2, 3)))]
    vcs = tuple(VirtualCluster(f"vc{i}", max_per_user=ResourceLimit() if cap is None
                               else ResourceLimit.of({"gpu": cap}))
                for i, cap in enumerate(caps))
    capacity = sum(n.capacity.gpu - n.reserved.gpu for n in nodes if n.name.startswith("gpu"))
    # The most CPU one node gives CPU-only work with every GPU idle: a CPU-only gang fits it.
    cpu_room = max((n.capacity.cpu - n.reserved.cpu)
                   - (n.capacity.gpu - n.reserved.gpu) * CPU_PER_IDLE_GPU for n in nodes)
    load = draw(st.floats(0.4, 0.9))
    jobs: list[TraceJob] = []
    if service:
        # Quiet from midnight (the simulated clock's 0) to 01:00, needing 1 of 2; back at 2
        # from 00:55 (hand-back 300 s).
        web = Service("worker", (QuietWindow(0.0, HOUR, 1),), hand_back=300.0)
        jobs.append(TraceJob("web", 0.0, math.inf, 2, gpu_task(1, 1),
                             elastic=Elasticity("worker", 1, 2), service=web,
                             node_selector=WEB_LABEL))
    at = 0.0
    for i in range(draw(st.integers(2, 25))):
        vc = draw(st.integers(0, len(vcs) - 1))
        cap = caps[vc]
        most = room if cap is None else cap
        kind = draw(st.sampled_from(["rigid", "elastic", "cpu"] if most >= 1 else ["cpu"]))
        elastic = None
        if kind == "cpu":
            replicas = draw(st.integers(1, 3))
            cores = draw(st.integers(1, max(1, min(4, cpu_room // 1000 // replicas))))
            per_task = Resources.of(cpu=1000 * cores, memory=2048)
        elif kind == "elastic":
            replicas = draw(st.integers(2, max(2, min(4, most))))
            replicas = min(replicas, most)
            per_task = gpu_task(1, draw(st.integers(1, 2)))
            low = draw(st.integers(1, replicas))
            elastic = Elasticity("worker", low, replicas) if replicas > 1 else None
        else:
            per = draw(st.integers(1, most))
            replicas = draw(st.integers(1, max(1, most // per)))
            per_task = gpu_task(per, draw(st.integers(1, 2)))
        duration = float(draw(st.integers(60, 1800)))
        jobs.append(TraceJob(
            f"j{i:02d}", at, duration, replicas, per_task, queue=f"vc{vc}",
            user=f"u{draw(st.integers(0, 2))}", priority_class=draw(st.sampled_from(CLASSES)),
            elastic=elastic,
            checkpoint_interval=draw(st.sampled_from([None, 60.0, 300.0])),
            freezing_window=draw(st.sampled_from([None, 0.0, 120.0, 600.0]))))
        at += max(per_task.gpu, 1) * replicas * duration / (capacity * load)
    return World(Cluster(tuple(nodes), vcs), tuple(jobs))


def service_need(job: TraceJob, now: float) -> int:
    """What a service needs at `now`, from its schedule, written out here: a window's
    replicas from its start until `hand_back` before its end, else all of them."""
    service = job.service
    assert service is not None
    second = now % DAY
    for window in service.schedule:
        length = (window.end - window.start) % DAY
        if (second - window.start) % DAY < length - service.hand_back:
            return min(window.replicas, job.replicas)
    return job.replicas


def minimum(job: TraceJob) -> int:
    return job.replicas if job.elastic is None else job.elastic.min_replicas


@dataclass
class Placed:
    node: str
    resources: Resources
    gpus: tuple[int, ...]


class Observed(Simulator):
    """The simulator, with every cycle's decisions replayed on this test's own ledger and
    checked against the oracles of the module docstring."""

    def __init__(self, world: World, config: SimConfig) -> None:
        super().__init__(Trace.of(list(world.jobs), "together"), world.cluster,
                         Profile.load("fairshare"), config)
        self.world = world
        self.specs = {j.name: j for j in world.jobs}
        self.nodes = {n.name: n for n in world.cluster.nodes}
        self.caps = {vc.name: vc.max_per_user for vc in world.cluster.virtual_clusters}
        self.ledger: dict[tuple[str, str, int], Placed] = {}
        self.last_change: dict[str, float] = {}
        self.fairshare_resizes = 0

    def _apply(self, decisions: Decisions, now: float) -> None:
        # Jobs that ended since the last cycle hold nothing any more.
        for key in [k for k in self.ledger if self.runs[k[0]].end is not None]:
            del self.ledger[key]
        before = Counter(k[0] for k in self.ledger)
        self._check_freezing(decisions, before, now)
        self._check_cpu_reserve(decisions)
        super()._apply(decisions, now)
        for evict in decisions.evictions:
            self.ledger.pop((evict.task.job, evict.task.group, evict.task.index), None)
        for bind in decisions.binds:
            key = (bind.task.job, bind.task.group, bind.task.index)
            assert key not in self.ledger, f"t={now}: {key} bound twice"
            self.ledger[key] = Placed(bind.node, bind.resources, bind.gpus)
        changed = {b.task.job for b in decisions.binds} | \
            {e.task.job for e in decisions.evictions} | {r.job for r in decisions.resizes}
        for name in changed:
            self.last_change[name] = now
        self._check_state(now)
        self._check_services(decisions, before, now)

    def _check_freezing(self, decisions: Decisions, before: Counter[str], now: float
                        ) -> None:
        for resize in decisions.resizes:
            if "(fair share)" not in resize.reason:
                continue
            self.fairshare_resizes += 1
            spec = self.specs[resize.job]
            window = PROFILE_WINDOW if spec.freezing_window is None else spec.freezing_window
            # A job that held nothing before this cycle started in it: a change, now.
            last = self.last_change.get(resize.job) if before[resize.job] else now
            assert last is not None and now - last >= window, (
                f"t={now}: {resize.job} resized by fair share {now - (last or now)} s after "
                f"its last change, within its freezing window {window}: {resize.reason}")

    def _check_cpu_reserve(self, decisions: Decisions) -> None:
        """At each CPU-only bind on a GPU node, with every eviction of the cycle counted as
        done first (which only leaves more CPU per idle GPU) and the binds before it."""
        evicted = {(e.task.job, e.task.group, e.task.index) for e in decisions.evictions}
        used: dict[str, Resources] = {}
        for key, placed in self.ledger.items():
            if key not in evicted:
                used[placed.node] = used.get(placed.node, Resources()) + placed.resources
        for bind in decisions.binds:
            used[bind.node] = used.get(bind.node, Resources()) + bind.resources
            node = self.nodes[bind.node]
            offered_gpus = node.capacity.gpu - node.reserved.gpu
            if bind.resources.gpu or not bind.resources.cpu or not offered_gpus:
                continue
            idle = offered_gpus - used[bind.node].gpu
            free_cpu = node.capacity.cpu - node.reserved.cpu - used[bind.node].cpu
            assert free_cpu >= idle * CPU_PER_IDLE_GPU, (
                f"CPU-only task {bind.task} on {bind.node} leaves {free_cpu}m CPU for "
                f"{idle} idle GPUs")

    def _check_state(self, now: float) -> None:
        used: dict[str, Resources] = {}
        gpus: dict[str, list[int]] = {}
        held: dict[tuple[str, str], int] = {}
        count = Counter(k[0] for k in self.ledger)
        for (job, _, _), placed in self.ledger.items():
            used[placed.node] = used.get(placed.node, Resources()) + placed.resources
            gpus.setdefault(placed.node, []).extend(placed.gpus)
            spec = self.specs[job]
            user = (spec.queue, spec.user or "")
            held[user] = held.get(user, 0) + placed.resources.gpu
        for name, total in used.items():
            node = self.nodes[name]
            for dim, have in (("cpu", node.capacity.cpu), ("memory", node.capacity.memory),
                              ("gpu", node.capacity.gpu)):
                taken = getattr(total, dim) + getattr(node.reserved, dim)
                assert taken <= have, f"t={now}: {name} over-committed in {dim}: {taken} > {have}"
            indices = gpus[name]
            assert len(indices) == len(set(indices)), f"t={now}: {name} GPU given twice"
            assert len(indices) <= node.capacity.gpu - node.reserved.gpu
        for job, tasks in count.items():
            assert tasks >= minimum(self.specs[job]), (
                f"t={now}: {job} runs {tasks} tasks, below its minimum "
                f"{minimum(self.specs[job])}")
        for (vc, user), gpu in held.items():
            limits = dict(self.caps[vc].limits) if vc in self.caps else {}
            if "gpu" in limits:
                assert gpu <= limits["gpu"], (
                    f"t={now}: user {user} holds {gpu} GPUs in {vc}, over maxPerUser "
                    f"{limits['gpu']}")

    def _check_services(self, decisions: Decisions, before: Counter[str], now: float) -> None:
        evicted = Counter(e.task.job for e in decisions.evictions)
        for name, spec in self.specs.items():
            if spec.service is None or not evicted[name]:
                continue
            need = service_need(spec, now)
            assert before[name] > need and before[name] - evicted[name] >= need, (
                f"t={now}: service {name} lost {evicted[name]} of {before[name]} tasks; it "
                f"needs {need} now")


CONFIG = SimConfig(cycle_interval=CYCLE, cycle_on_events=True, check_invariants=True,
                   until=3 * DAY)


@settings(max_examples=40, deadline=None)
@given(worlds())
def test_the_rules_hold_together_under_fairshare(world: World) -> None:
    sim = Observed(world, CONFIG)
    result = sim.run()
    started = {j.name: j.first_start for j in result.jobs}
    for job in world.jobs:
        if job.service is None:
            assert started[job.name] is not None, f"{job.name} never started"


# ---- the starvation bound under fairshare --------------------------------------------------

def bound_profile(half_life: float, starvation_after: float) -> Profile:
    """The built-in `fairshare` profile with the aging of `test_starvation`'s streams."""
    return Profile.from_dict({
        "name": "fairshare-aging",
        "actions": "services, enqueue, allocate, backfill, fairshare",
        "tiers": [{"plugins": [{"name": "fairshare"},
                               {"name": "priority",
                                "arguments": {"agingHalfLife": half_life,
                                              "starvationAfter": starvation_after}},
                               {"name": "usage"}, {"name": "gang"}]},
                  {"plugins": [{"name": "predicates"}, {"name": "capacity"},
                               {"name": "placement"}, {"name": "gpu-discipline"}]}]})


@st.composite
def streams(draw: st.DrawFn) -> tuple[Cluster, list[TraceJob], float, float]:
    """`test_starvation.streams`, with some of the small jobs elastic."""
    gpus = draw(st.sampled_from([4, 8]))
    count = draw(st.integers(1, 3))
    cluster = Cluster(tuple(Node(f"n{i}", Resources.of(cpu=64_000, memory=512 * 1024,
                                                         gpu=gpus)) for i in range(count)))
    capacity = gpus * count
    load = draw(st.floats(0.5, 0.95))
    base = float(draw(st.integers(60, 900)))
    jobs: list[TraceJob] = []
    at = 0.0
    for i in range(draw(st.integers(2, 30))):
        elastic = None
        if draw(st.integers(0, 5)) == 0:
            replicas, per_task = count, gpus
            duration = float(draw(st.integers(10, int(base))))
        elif draw(st.booleans()):
            replicas, per_task = draw(st.sampled_from([2, 4])), 1
            elastic = Elasticity("worker", draw(st.integers(1, replicas)), replicas)
            duration = base * draw(st.floats(0.8, 1.0))
        else:
            replicas = 1
            per_task = draw(st.sampled_from([g for g in (1, 2, 4) if g <= gpus // 2]))
            duration = base * draw(st.floats(0.8, 1.0))
        jobs.append(TraceJob(f"j{i:02d}", at, duration, replicas,
                             Resources.of(cpu=1000 * per_task, gpu=per_task),
                             priority_class=draw(st.sampled_from(CLASSES)), elastic=elastic,
                             freezing_window=draw(st.sampled_from([None, 0.0]))))
        at += replicas * per_task * duration / (capacity * load)
    half_life = draw(st.sampled_from([30.0, 120.0, 600.0]))
    starvation_after = draw(st.sampled_from([half_life / 2, half_life, 3 * half_life]))
    return cluster, jobs, half_life, starvation_after


def longest_run(job: TraceJob) -> float:
    """The longest its work may take: at its minimum size, with linear speed-up."""
    if job.elastic is None:
        return job.duration
    return job.duration * job.replicas / job.elastic.min_replicas


@settings(max_examples=30, deadline=None)
@given(streams())
def test_every_job_starts_within_the_bound_under_fairshare(
        case: tuple[Cluster, list[TraceJob], float, float]) -> None:
    cluster, jobs, half_life, starvation_after = case
    config = SimConfig(cycle_interval=CYCLE, cycle_on_events=True, check_invariants=True)
    result = Simulator(Trace.of(jobs, "stream"), cluster,
                       bound_profile(half_life, starvation_after), config).run()
    started = {j.name: j.first_start for j in result.jobs}
    longest = max(longest_run(j) for j in jobs)
    for job in jobs:
        start = started[job.name]
        assert start is not None, f"{job.name} never started"
        limit = bound(jobs, job, half_life, starvation_after, longest_run)
        assert start <= limit, f"{job.name} started at {start}, after its bound {limit}"
        # Step 2 of the argument, checked on its own: first in order and starving, a job
        # waits at most for what runs on the nodes it reserved to end.
        stretch = longest_first_and_starving(jobs, started, job, half_life, starvation_after)
        assert stretch <= longest + 2 * CYCLE, (
            f"{job.name} was first in order and starving for {stretch} s without starting "
            f"(longest run {longest})")
