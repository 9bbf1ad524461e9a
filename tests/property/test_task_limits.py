"""Task limits (`capacity.pods`) and best-effort tasks over random clusters.

Worlds as `strategies.worlds` draws them, but some nodes declare a small task limit and
best-effort tasks (no resource requests) are common. After every cycle — allocate, backfill,
preempt, reclaim and elastic alike — no node holds more tasks than its limit, nor more of
any resource than it has; a profile without the backfill action binds no best-effort task.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import DEFAULT_QUEUE, Decisions, Job, Node, Resources, TaskRef
from shoal.api.resources import PODS

from .oracles import bind_problems, holding, node_problems
from .strategies import (
    World,
    capacity,
    class_names,
    jobs,
    nodes,
    priority_classes,
    requests,
    vc_trees,
    warm_up,
)

CHECKS = settings(max_examples=50, deadline=None)

PROFILES = ("default", "strict-fifo", "spread", "fifo", "las", "lend-reclaim", "evict-first")
"""With and without backfill, and with preempt and reclaim (`strategies.LENDING_PROFILES`)."""

best_effort_or_not = st.integers(0, 3).flatmap(
    lambda k: st.just(Resources()) if k == 0 else requests)
"""A quarter of the task groups are best-effort."""


@st.composite
def limited_worlds(draw: st.DrawFn) -> World:
    node_list = tuple(
        replace(n, capacity=n.capacity + Resources.of(extras={PODS: draw(st.integers(0, 4))}),
                allocatable=None if n.allocatable is None else n.allocatable
                + Resources.of(extras={PODS: draw(st.integers(0, 4))}))
        if draw(st.booleans()) else n
        for n in draw(nodes(max_size=6)))
    vcs = draw(vc_trees(capacity(node_list)))
    classes = draw(priority_classes())
    queues = [vc.name for vc in vcs] + [DEFAULT_QUEUE]
    all_jobs = draw(jobs(queues, class_names(classes), max_size=15,
                         request=best_effort_or_not))
    early = [j for j in all_jobs if draw(st.booleans())]
    later = [j for j in all_jobs if j not in early]
    world = World(node_list, vcs, classes, tuple(early), draw(st.sampled_from(PROFILES)))
    return warm_up(world, later, draw(st.integers(0, 2)), [])


def task_limit_problems(node_list: tuple[Node, ...], job_list: tuple[Job, ...]) -> list[str]:
    limits = {n.name: n.allocatable_resources.get(PODS) for n in node_list
              if PODS in n.allocatable_resources.dimensions()}
    held = Counter(t.node for j in job_list for t in j.tasks if t.state.holds_resources)
    return [f"node {name}: {held[name]} tasks > pods {limit}"
            for name, limit in limits.items() if held[name] > limit]


def best_effort_binds(job_list: tuple[Job, ...], decisions: Decisions) -> list[TaskRef]:
    """Best-effort tasks bound other than as members of a mixed gang's minimum (the one
    way allocate places them: a gang below its minimum, with a group that requests)."""
    by_name = {j.name: j for j in job_list}
    out = []
    for bind in decisions.binds:
        job = by_name[bind.task.job]
        if not job.group(bind.task.group).resources.is_zero():
            continue
        mixed = any(not g.resources.is_zero() for g in job.groups)
        if not (job.gang and mixed and holding(job) < job.gang_minimum):
            out.append(bind.task)
    return out


@pytest.mark.slow
@CHECKS
@given(world=limited_worlds())
def test_no_node_holds_more_tasks_than_its_pods(world: World) -> None:
    assert task_limit_problems(world.nodes, world.jobs) == []
    assert node_problems(world.nodes, world.jobs) == []
    backfills = "backfill" in world.profile.doc.actions
    for _ in range(4):
        before = world
        _, decisions, world = world.step()
        assert bind_problems(before.nodes, before.jobs, decisions) == []
        assert task_limit_problems(world.nodes, world.jobs) == []
        assert node_problems(world.nodes, world.jobs) == []
        if not backfills:
            assert best_effort_binds(before.jobs, decisions) == []
        if not decisions.changes_anything():
            break
