"""Services and unmanaged load (issue 17, seed 002), as properties of whole cycles.

A random world (some jobs running, some waiting) turns some of its running jobs into
services — gangs of one group sometimes with a quiet window sized down to a random
minimum, others without a schedule — puts jobs of a class above production on top (they
would preempt a service if anything could), and declares on some
nodes a random load used outside Shoal (`Node.reserved`, at most what the node has free, as
an admin would see it). Then a few cycles run at random clocks (any second of the day,
jumps of up to a day, so quiet windows begin and hand-backs fall between cycles) under
profiles that preempt, reclaim and shrink, with and without the services action:

1. No task of a service is ever evicted but by its own schedule: the services action
   stopping its surplus in a quiet window, down to exactly what it needs then.
2. No node ever holds more than it offers: the requests of its tasks holding resources
   stay within its allocatable less its reserved load.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import DEFAULT_QUEUE, Job, Node, PriorityClass, Resources
from shoal.api.elastic import Elasticity
from shoal.api.resources import total
from shoal.api.services import DAY, QuietWindow, Service
from shoal.core import Snapshot
from shoal.scenario import apply
from shoal.scheduler import Profile, run_cycle

from .strategies import World, class_names, jobs, worlds

RULES = settings(max_examples=60, deadline=None)

ALL_ACTIONS = Profile.from_yaml("""
name: services-evicting
description: The services action with every action that evicts; guarantees lent.
actions: "services, enqueue, allocate, backfill, preempt, reclaim, elastic"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity, arguments: {reclaimMode: reclaim}},
              {name: placement}]
""", "services-evicting")
CRITICAL = PriorityClass("critical", 1_000_000, "above production: preempts all it may")
PROFILES = (ALL_ACTIONS, Profile.load("elastic"), Profile.load("default"), Profile.load("las"))


def running(job: Job) -> bool:
    return any(t.state.holds_resources for t in job.tasks)


def held_on(world: World) -> dict[str, Resources]:
    out: dict[str, list[Resources]] = {}
    for job in world.jobs:
        for task in job.tasks:
            if task.state.holds_resources and task.node is not None:
                out.setdefault(task.node, []).append(job.group(task.group).resources)
    return {name: total(requests) for name, requests in out.items()}


@st.composite
def made_service(draw: st.DrawFn, job: Job) -> Job:
    """The job as a production service; a gang of one group of several replicas gets a
    quiet window now and then, sizing it down to a random minimum."""
    service = replace(job, preemptable=False, priority_class="production", service=Service())
    if not job.gang or len(job.groups) != 1 or job.groups[0].replicas < 2 \
            or job.elastic is not None or not draw(st.booleans()):
        return service
    group = job.groups[0]
    least = draw(st.integers(1, group.replicas - 1))
    start = float(draw(st.integers(0, int(DAY) - 1)))
    length = float(draw(st.integers(600, int(DAY) - 600)))
    hand_back = float(draw(st.integers(0, 599)))
    window = QuietWindow(start, (start + length) % DAY, least)
    return replace(service, min_available=None,
                   elastic=Elasticity(group.name, least, group.replicas),
                   service=Service(group.name, (window,), hand_back))


@st.composite
def reserved_nodes(draw: st.DrawFn, world: World) -> tuple[Node, ...]:
    """Some nodes get a load outside Shoal of at most what they have free now."""
    held = held_on(world)
    out: list[Node] = []
    for node in world.nodes:
        free = node.allocatable_resources.saturating_sub(held.get(node.name, Resources()))
        if not draw(st.booleans()):
            out.append(node)
            continue
        share = draw(st.sampled_from([1, 2, 4]))
        out.append(replace(node, reserved=Resources(
            cpu=free.cpu * draw(st.integers(0, share)) // share,
            memory=free.memory * draw(st.integers(0, share)) // share,
            gpu=free.gpu * draw(st.integers(0, share)) // share)))
    return tuple(out)


@pytest.mark.slow
@RULES
@given(world=worlds(profiles=("default",)), data=st.data(),
       profile=st.sampled_from(PROFILES))
def test_services_are_never_evicted_and_reserved_load_is_never_used(
        world: World, data: st.DataObject, profile: Profile) -> None:
    candidates = sorted(j.name for j in world.jobs if running(j))
    chosen = data.draw(st.sets(st.sampled_from(candidates)) if candidates else st.just(set()))
    queues = [vc.name for vc in world.virtual_clusters] + [DEFAULT_QUEUE]
    urgent = [replace(j, priority_class=CRITICAL.name, submitted=50.0) for j in data.draw(
        jobs(queues, class_names(world.priority_classes), max_size=3, prefix="urgent"))]
    world = replace(world, priority_classes=(*world.priority_classes, CRITICAL))
    world = world.with_jobs([*(data.draw(made_service(j)) if j.name in chosen else j
                               for j in world.jobs), *urgent],
                            now=float(data.draw(st.integers(0, int(2 * DAY)))))
    world = replace(world, nodes=data.draw(reserved_nodes(world)))
    # Counted here from the declaration, not from `Node.allocatable_resources`, which the
    # scheduler reads.
    offered = {n.name: (n.allocatable or n.capacity) - n.reserved for n in world.nodes}
    for cycle in range(4):
        now = world.now
        services = {j.name: j for j in world.jobs if j.service is not None}
        decisions = run_cycle(Snapshot(world.nodes, world.jobs, world.virtual_clusters,
                                       world.priority_classes, now=now), profile)
        for eviction in decisions.evictions:
            job = services.get(eviction.task.job)
            if job is None:
                continue
            assert job.service is not None and job.elastic is not None, (
                f"cycle {cycle + 1} ({profile.name}, t={now}) evicted {eviction.task} of "
                f"service {job.name}: {eviction.reason}")
            need = job.service.need(now, job.group(job.elastic.group).replicas)
            assert eviction.reason.startswith("service resized") \
                and eviction.task.index >= need, (
                f"cycle {cycle + 1} ({profile.name}, t={now}) evicted {eviction.task} of "
                f"service {job.name} (needs {need}): {eviction.reason}")
        jobs_now = apply({j.name: j for j in world.jobs}, decisions, now=now)
        later = now + float(data.draw(st.integers(1, int(DAY))))
        world = world.with_jobs(jobs_now.values(), now=later)
        for node, held in held_on(world).items():
            assert held.fits(offered[node]), (
                f"cycle {cycle + 1} ({profile.name}): node {node} holds {held}, more than "
                f"it offers ({offered[node]}, its reserved load subtracted)")
