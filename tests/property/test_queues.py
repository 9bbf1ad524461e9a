"""Queue state and weighted proportional share (issue 16).

1. Deserved shares (`shoal.core.deserved`), on random trees, usage and demand: per
   dimension, the children of a virtual cluster deserve together at most what it deserves,
   and all of it when they ask for it; each child at least its `min`, at most its `max` and
   its demand (unless its `min` is more); and the split is weighted max-min fair — two
   siblings that are neither at their floor nor at their cap deserve the same per unit of
   weight, and one at its floor deserves no more per weight than any sibling below its cap.
2. A closed virtual cluster never gets a new bind: random worlds with some virtual clusters
   closed, cycles under profiles that allocate, preempt, reclaim (guarantees lent, or shares
   proportional) and grow elastic jobs; no job in a closed subtree gets a bind.
3. Proportional reclaim takes only what is above a deserved share, and only for a virtual
   cluster that stays within its own: after a cycle of reclaim alone, every virtual cluster
   that lost tasks holds at least what it deserves, every one that gained at most.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import DEFAULT_QUEUE, ROOT_QUEUE, Node, Resources, VirtualCluster
from shoal.api.queue_policy import QueueStatus
from shoal.core.deserved import Claim, deserved_shares, water_fill
from shoal.core.quota import QuotaTree
from shoal.scenario import apply
from shoal.scheduler import Profile, run_cycle
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.plugins.capacity import Capacity
from shoal.scheduler.session import Hooks, Session

from .strategies import SLOT, World, capacity, class_names, jobs, nodes, vc_trees, worlds

RULES = settings(max_examples=60, deadline=None)
TOLERANCE = 1e-6

PROPORTIONAL = Profile.from_yaml("""
name: proportional-reclaim
description: Weighted proportional share, reclaimed; preempt and elastic too.
actions: "enqueue, allocate, backfill, preempt, reclaim, elastic"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity, arguments: {share: proportional}},
              {name: placement}]
""", "proportional-reclaim")

small = st.integers(0, 40)
claims = st.builds(
    lambda w, floor, extra, unbounded: Claim(w, float(floor),
                                             math.inf if unbounded else float(floor + extra)),
    st.integers(1, 5), small, small, st.booleans())


@RULES
@given(amount=st.integers(0, 200), parts=st.lists(claims, min_size=1, max_size=6))
def test_water_fill_is_weighted_max_min_fair(amount: int, parts: list[Claim]) -> None:
    out = water_fill(float(amount), parts)
    floors = sum(c.floor for c in parts)
    for claim, got in zip(parts, out, strict=True):
        assert claim.floor - TOLERANCE <= got <= claim.cap + TOLERANCE
    if floors <= amount:
        assert sum(out) <= amount + TOLERANCE
        if sum(c.cap for c in parts) >= amount:
            assert math.isclose(sum(out), amount, abs_tol=TOLERANCE)
    _fair(parts, out)


def _fair(parts: list[Claim], out: list[float]) -> None:
    free = [(c, got) for c, got in zip(parts, out, strict=True)
            if c.floor + TOLERANCE < got < c.cap - TOLERANCE]
    levels = [got / c.weight for c, got in free]
    assert max(levels, default=0) - min(levels, default=0) <= TOLERANCE * 10
    for claim, got in zip(parts, out, strict=True):
        for other, theirs in zip(parts, out, strict=True):
            if theirs < other.cap - TOLERANCE and got > claim.floor + TOLERANCE:
                # It got more than its floor while a sibling stayed below its cap: no more
                # per weight than that sibling.
                assert got / claim.weight <= theirs / other.weight + TOLERANCE * 10


@RULES
@given(data=st.data())
def test_deserved_shares_fill_the_tree_within_min_max_and_demand(data: st.DataObject
                                                                  ) -> None:
    node_list = data.draw(nodes(max_size=4))
    vcs = data.draw(vc_trees(capacity(node_list)))
    tree = QuotaTree(vcs, capacity(node_list))
    names = [vc.name for vc in vcs] + [DEFAULT_QUEUE]
    request = st.builds(Resources.of, st.integers(0, 64000), st.integers(0, 262144),
                        st.integers(0, 16))
    for name in data.draw(st.lists(st.sampled_from(names), max_size=6)):
        tree.charge(name, data.draw(request))
    asked = data.draw(st.lists(st.tuples(st.sampled_from(names), request), max_size=6))
    closed = data.draw(st.lists(st.sampled_from(names), max_size=2, unique=True))
    shares = deserved_shares(tree, asked, closed)

    demand = {q.name: q.usage for q in tree}
    for name, req in asked:
        if name not in closed:
            for q in tree.get(name).path():
                demand[q.name] = demand[q.name] + req
    for parent in tree:
        if not parent.children:
            continue
        for dim in ("cpu", "memory", "gpu"):
            have = shares.of(parent.name, dim)
            parts = [shares.of(c.name, dim) for c in parent.children]
            caps = []
            for child, got in zip(parent.children, parts, strict=True):
                floor = child.min.get(dim)
                limit = child.max.get(dim)
                cap = max(floor, min(demand[child.name].get(dim),
                                     math.inf if limit is None else limit))
                caps.append(cap)
                assert floor - TOLERANCE <= got <= cap + TOLERANCE, (child.name, dim)
            assert sum(parts) <= have + TOLERANCE * max(1.0, have)
            if sum(caps) >= have:
                assert math.isclose(sum(parts), have, rel_tol=1e-9, abs_tol=TOLERANCE)
            _fair([Claim(c.weight, float(c.min.get(dim)), float(cap))
                   for c, cap in zip(parent.children, caps, strict=True)], parts)
    if ROOT_QUEUE in shares.by_queue:
        assert shares.of(ROOT_QUEUE, "gpu") == tree.capacity.gpu


def _closed_subtree(vcs: tuple[VirtualCluster, ...]) -> set[str]:
    parent = {vc.name: vc.parent for vc in vcs}
    shut = {vc.name for vc in vcs if vc.state is QueueStatus.CLOSED}
    out = set()
    for name in parent:
        node: str | None = name
        while node is not None and node != ROOT_QUEUE:
            if node in shut:
                out.add(name)
                break
            node = parent.get(node)
    return out


@settings(max_examples=40, deadline=None)
@given(world=worlds(max_jobs=15, profiles=("default",)), data=st.data())
def test_a_closed_virtual_cluster_never_gets_a_new_bind(world: World, data: st.DataObject
                                                        ) -> None:
    names = [vc.name for vc in world.virtual_clusters]
    shut = set(data.draw(st.lists(st.sampled_from(names), max_size=2, unique=True))) \
        if names else set()
    vcs = tuple(replace(vc, state=QueueStatus.CLOSED) if vc.name in shut else vc
                for vc in world.virtual_clusters)
    world = replace(world, virtual_clusters=vcs)
    closed = _closed_subtree(vcs)
    queue_of = {j.name: j.queue for j in world.jobs}
    profile = data.draw(st.sampled_from(
        [PROPORTIONAL, *(Profile.load(n) for n in ("default", "elastic"))]))
    jobs = {j.name: j for j in world.jobs}
    now = world.now
    for _ in range(3):
        snapshot = replace(world, jobs=tuple(jobs.values()), now=now).snapshot()
        decisions = run_cycle(snapshot, profile)
        for bind in decisions.binds:
            assert queue_of[bind.task.job] not in closed, \
                f"{bind.task} bound in closed virtual cluster {queue_of[bind.task.job]!r}"
        for pending in decisions.pending:
            if queue_of[pending.job] in closed:
                assert pending.reason.kind.value == "QueueClosed"
        jobs = apply(jobs, decisions, now=now)
        now += 1.0


RECLAIM_ONLY = Profile.from_yaml("""
name: proportional-reclaim-only
description: Weighted proportional share; reclaim alone, so every eviction is reclaim's.
actions: "enqueue, reclaim"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity, arguments: {share: proportional}},
              {name: placement}]
""", "proportional-reclaim-only")


@st.composite
def crowded_worlds(draw: st.DrawFn) -> World:
    """A slot cluster (`SLOT`: a GPU with its CPU and memory) filled by the jobs of a few
    virtual clusters with weights and no minimum, under the default profile; then jobs of
    others arrive: the shape in which some virtual clusters hold more than they deserve."""
    node_list = tuple(Node(f"n{i}", SLOT.scale(draw(st.sampled_from([2, 4, 8]))))
                      for i in range(draw(st.integers(1, 3))))
    count = draw(st.integers(2, 4))
    vcs: list[VirtualCluster] = []
    for i in range(count):
        parent = draw(st.sampled_from([ROOT_QUEUE, ROOT_QUEUE, *(vc.name for vc in vcs)])) \
            if i else ROOT_QUEUE
        vcs.append(VirtualCluster(f"vc{i}", parent, weight=draw(st.integers(1, 4))))
    queues = [vc.name for vc in vcs]
    slots = st.sampled_from([SLOT, SLOT.scale(2)])
    early = [replace(j, submitted=0.0) for j in draw(jobs(
        queues[:2], class_names(()), max_size=10, request=slots, selectors_allowed=False,
        prefix="early"))]
    world = World(node_list, tuple(vcs), (), tuple(early))
    for _ in range(2):
        world = world.step()[2]
    later = draw(jobs(queues[1:], class_names(()), max_size=6, request=slots,
                      selectors_allowed=False, prefix="late"))
    return world.with_jobs([*world.jobs, *(replace(j, submitted=world.now) for j in later)])


@settings(max_examples=150, deadline=None)
@given(world=crowded_worlds())
def test_proportional_reclaim_takes_no_victim_below_its_deserved_share(world: World) -> None:
    """3. Under `share: proportional`, reclaim leaves every virtual cluster it took from at
    or above its deserved share in GPUs (when every job placed asks GPUs, GPUs are the
    dimension reclaim judges), and every reclaimer at or below its own."""
    snapshot = world.snapshot()
    session = Session(snapshot, Hooks(RECLAIM_ONLY.plugins()))
    [capacity_plugin] = [p for p in session.hooks.plugins if isinstance(p, Capacity)]
    shares = capacity_plugin.deserved
    assert shares is not None
    usage = {q.name: q.usage.gpu for q in session.quota}
    decisions = run_cycle(snapshot, RECLAIM_ONLY)
    jobs = {j.name: j for j in world.jobs}
    if not decisions.evictions or any(
            g.resources.gpu == 0 for b in decisions.binds for g in jobs[b.task.job].groups):
        return
    model = SchedulerModel.from_snapshot(snapshot)
    account = {name: info.account for name, info in model.jobs.items()}
    after = dict(usage)
    for evict in decisions.evictions:
        for q in model.quota.get(account[evict.task.job]).path():
            after[q.name] -= jobs[evict.task.job].group(evict.task.group).resources.gpu
    for bind in decisions.binds:
        for q in model.quota.get(account[bind.task.job]).path():
            after[q.name] += bind.resources.gpu
    victims = {account[e.task.job] for e in decisions.evictions}
    for leaf in victims:
        assert after[leaf] >= shares.of(leaf, "gpu") - TOLERANCE, \
            f"{leaf!r} left with {after[leaf]} GPUs, deserves {shares.of(leaf, 'gpu')}"
    # A reclaimer is named in its victims' reasons. Jobs that fitted without evicting are
    # placed by the action too, whatever they deserve; counted up to the reclaimer's own
    # binds (the decisions keep their order), they bound what it found.
    reclaimers = {m.group(1) for e in decisions.evictions
                  for m in [re.search(r" for job '([^']+)'", e.reason)] if m}
    held = dict(usage)
    for bind in decisions.binds:
        leaf = account[bind.task.job]
        held[leaf] += bind.resources.gpu
        if bind.task.job in reclaimers and leaf not in victims:
            assert held[leaf] <= shares.of(leaf, "gpu") + TOLERANCE, \
                f"reclaimer {leaf!r} holds {held[leaf]} GPUs, deserves " \
                f"{shares.of(leaf, 'gpu')}"

