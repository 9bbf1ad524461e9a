"""Invariants of fixed-size virtual nodes (seed 003) over random clusters, cycle after cycle.

A world is 1–4 nodes, 1–3 virtual clusters with a group of fixed-size nodes each (any
policy; the set must be carvable on the idle cluster, as the spec checks demand), and jobs
in those VCs and in `default`, some running before the VCs are carved, some with their own
virtual cluster of bundles (a job-scoped one, created and removed with the job). Cycles run on fresh
snapshots that carry the recorded carvings, as the control plane rebuilds its model after a
restart, and jobs finish between cycles. After every cycle, against oracles computed here
from the API objects alone:
- no physical node gives its carved virtual nodes and the tasks outside them more than it
  has (no other VC's task ever runs in capacity carved for a VC);
- every GPU a virtual node holds is used by no task of another VC;
- a bind onto a virtual node is onto one of the job's own VC, on the host it is carved from,
  with GPUs among those carved;
- a carving is whole (every virtual node of the VC) and STRICT_SPREAD groups are on distinct
  nodes;
- no VC's subtree uses more than its ceiling (flexible max plus fixed-size nodes);
- and once every job is gone, every VC is carved: none is left queued forever.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import (
    DEFAULT_QUEUE,
    Decisions,
    FixedSizeNode,
    FixedSizeNodes,
    Job,
    Node,
    PlacementPolicy,
    ResourceLimit,
    Resources,
    SchedulerName,
    TaskGroup,
    VirtualCluster,
    VirtualNodePlacement,
)
from shoal.api.objects import job_virtual_cluster
from shoal.api.resources import total
from shoal.core import Snapshot
from shoal.core.virtual_nodes import uncarvable
from shoal.scenario import apply, record_reservations
from shoal.scheduler import Profile, run_cycle

from .oracles import node_problems, queue_usage

PROFILE = Profile.default()


def slot(gpus: int) -> Resources:
    return Resources.of(cpu=1000 * max(gpus, 1), memory=1024 * max(gpus, 1), gpu=gpus)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[tuple[Node, ...], tuple[VirtualCluster, ...]]:
    node_list = tuple(Node(f"n{i}", slot(draw(st.sampled_from([4, 8]))))
                      for i in range(draw(st.integers(1, 4))))
    vcs = []
    for v in range(draw(st.integers(1, 3))):
        sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
        group = FixedSizeNodes(tuple(FixedSizeNode(slot(s)) for s in sizes),
                               draw(st.sampled_from(list(PlacementPolicy))))
        flexible = draw(st.sampled_from([None, 0, 2]))
        vcs.append(VirtualCluster(
            f"vc{v}", fixed_size_nodes=(group,),
            max=ResourceLimit() if flexible is None else ResourceLimit.of({"gpu": flexible})))
    # Only sets of virtual clusters the spec checks let in: carvable on the idle cluster.
    if uncarvable(vcs, node_list) is not None:
        vcs = vcs[:1]
        if uncarvable(vcs, node_list) is not None:
            vcs = []
    return node_list, tuple(vcs)


@st.composite
def job_lists(draw: st.DrawFn, queues: list[str]) -> list[Job]:
    """Jobs in the queues; some with their own virtual cluster (bundles of 1–2 GPUs)."""
    out = []
    for j in range(draw(st.integers(0, 12))):
        gpus = draw(st.integers(0, 4))
        queue = draw(st.sampled_from(queues))
        own = None
        if draw(st.integers(0, 3)) == 0:
            sizes = draw(st.lists(st.integers(1, 2), min_size=1, max_size=2))
            flexible = draw(st.sampled_from([None, 0]))
            own = VirtualCluster(
                job_virtual_cluster(f"j{j}"), parent=queue,
                fixed_size_nodes=(FixedSizeNodes(tuple(FixedSizeNode(slot(n)) for n in sizes),
                                                 draw(st.sampled_from(list(PlacementPolicy)))),),
                max=ResourceLimit() if flexible is None else ResourceLimit.of({"gpu": 0}))
        out.append(Job(f"j{j}", (TaskGroup("w", draw(st.integers(1, 4)), slot(gpus)),),
                       queue=queue, submitted=float(j), virtual_cluster=own,
                       scheduler_name=draw(st.sampled_from(list(SchedulerName)))))
    return out


def every_vc(vcs: dict[str, VirtualCluster], jobs: list[Job]) -> dict[str, VirtualCluster]:
    return {**vcs, **{j.virtual_cluster.name: j.virtual_cluster for j in jobs
                      if j.virtual_cluster is not None}}


def account(job: Job) -> str:
    return job.queue if job.virtual_cluster is None else job.virtual_cluster.name


def problems(nodes: tuple[Node, ...], declared: dict[str, VirtualCluster], jobs: list[Job],
             decisions: Decisions) -> list[str]:
    found = node_problems(nodes, jobs)
    vcs = every_vc(declared, jobs)
    carved: dict[str, list[tuple[str, Resources, frozenset[int]]]] = {n.name: [] for n in nodes}
    for vc in vcs.values():
        if vc.reservation is None:
            continue
        specs = vc.virtual_node_specs
        if len(vc.reservation) != len(specs):
            found.append(f"{vc.name}: carving of {len(vc.reservation)} of {len(specs)} nodes")
            continue
        for place, spec in zip(vc.reservation, specs, strict=True):
            carved[place.node].append((vc.name, spec.resources, frozenset(place.gpus)))
        start = 0
        for group in vc.fixed_size_nodes:
            hosts = [p.node for p in vc.reservation[start:start + len(group.nodes)]]
            start += len(group.nodes)
            if group.policy is PlacementPolicy.STRICT_SPREAD and len(set(hosts)) != len(hosts):
                found.append(f"{vc.name}: STRICT_SPREAD group shares nodes {hosts}")
    by_job = {j.name: j for j in jobs}
    for node in nodes:
        mine = carved[node.name]
        size = total(r for _, r, _ in mine)
        per_vc: dict[str, Resources] = {}
        outside = Resources()
        for job in jobs:
            for task in job.tasks:
                if not task.state.holds_resources or task.node != node.name:
                    continue
                request = job.group(task.group).resources
                charged = account(job)
                if any(owner == charged for owner, _, _ in mine):
                    per_vc[charged] = per_vc.get(charged, Resources()) + request
                else:
                    outside = outside + request
                for owner, _, gpus in mine:
                    if owner != charged and gpus & set(task.gpus):
                        found.append(f"task {task.ref} of {charged} holds GPUs {task.gpus}"
                                     f" carved for {owner} on {node.name}")
        for vc_name, used in per_vc.items():
            own = total(r for owner, r, _ in mine if owner == vc_name)
            outside = outside + used.saturating_sub(own)
        over = (outside + size).shortfall(node.allocatable_resources)
        if over:
            found.append(f"node {node.name}: {size} carved + {outside} outside virtual nodes "
                         f"> {node.allocatable_resources} ({over})")
    for bind in decisions.binds:
        if bind.virtual_node is None:
            continue
        owner, _, index = bind.virtual_node.rpartition("/")
        job = by_job[bind.task.job]
        reservation = vcs[owner].reservation if owner in vcs else None
        if owner != account(job) or reservation is None:
            found.append(f"{bind.task} of {account(job)} bound onto {bind.virtual_node}")
            continue
        place: VirtualNodePlacement = reservation[int(index)]
        if place.node != bind.node or not set(bind.gpus) <= set(place.gpus):
            found.append(f"{bind.task} bound to {bind.node} GPUs {bind.gpus}, but "
                         f"{bind.virtual_node} is {place}")
    usage = queue_usage(replace(j, queue=account(j)) for j in jobs)
    for vc in vcs.values():
        used = usage.get(vc.name, Resources())
        if not vc.ceiling.admits(used):
            found.append(f"{vc.name} uses {used}, above its ceiling {vc.ceiling}")
    return found


@settings(max_examples=120, deadline=None)
@given(clusters(), st.data())
def test_fixed_size_nodes_hold_their_invariants(
        cluster: tuple[tuple[Node, ...], tuple[VirtualCluster, ...]], data: st.DataObject
        ) -> None:
    nodes, declared = cluster
    queues = [vc.name for vc in declared] + [DEFAULT_QUEUE]
    jobs = {j.name: j for j in data.draw(job_lists(queues))}
    vcs = {vc.name: vc for vc in declared}
    # Some jobs run before the virtual clusters exist, so carvings must work around them.
    early = {n: jobs[n] for n in sorted(jobs) if data.draw(st.booleans())}
    if early:
        decisions = run_cycle(Snapshot(nodes, tuple(early.values())), PROFILE)
        record_reservations(decisions.reservations, {}, early)
        early = apply(early, decisions, now=0.0)
        jobs.update(early)
    for cycle in range(1, 6):
        decisions = run_cycle(Snapshot(nodes, tuple(jobs.values()), tuple(vcs.values()),
                                       now=float(cycle)), PROFILE)
        record_reservations(decisions.reservations, vcs, jobs)
        jobs = apply(jobs, decisions, now=float(cycle))
        found = problems(nodes, vcs, list(jobs.values()), decisions)
        assert not found, "\n".join(found)
        ending = data.draw(st.lists(st.sampled_from(sorted(jobs)), max_size=3)) if jobs else []
        jobs = {n: j for n, j in jobs.items() if n not in set(ending)}
    decisions = run_cycle(Snapshot(nodes, (), tuple(vcs.values()), now=10.0), PROFILE)
    record_reservations(decisions.reservations, vcs, {})
    assert all(vc.reservation is not None for vc in vcs.values()), \
        [p.reason for p in decisions.pending]
