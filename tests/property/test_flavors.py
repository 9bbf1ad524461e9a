"""Resource flavors (issue 16): what any cycle keeps true, whatever the cluster and jobs.

Random nodes (some labelled A100 or V100), two flavors by GPU type, a few virtual clusters
under the root each with quota on a random choice and order of the flavors (min within what
the flavor's nodes hold, sometimes a max) and random fungibility, and random jobs (some with
their own GPU-type selectors) in them and in `default`. Cycles run under profiles that place
only, and that lend guarantees and preempt and reclaim; after each one, applied as the
scenario runner applies it:

1. no task of a job in a flavored virtual cluster runs on a node outside the flavor it was
   admitted on: all the tasks a job holds are on nodes of one of its cluster's flavors;
2. no virtual cluster uses more of a flavor than that flavor's `max` in it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import DEFAULT_QUEUE, GPU_TYPE_LABEL, Job, Node, ResourceLimit, Resources
from shoal.api.flavors import (
    FlavorFungibility,
    FlavorQuota,
    ResourceFlavor,
    WhenCanBorrow,
    WhenCanPreempt,
)
from shoal.api.objects import VirtualCluster
from shoal.api.resources import total
from shoal.core import Snapshot
from shoal.scenario import apply
from shoal.scheduler import run_cycle

from .strategies import class_names, jobs, names, nodes, priority_classes, profile

FLAVORS = (ResourceFlavor("a100", {GPU_TYPE_LABEL: "A100"}),
           ResourceFlavor("v100", {GPU_TYPE_LABEL: "V100"}))
PROFILES = ("default", "lend-reclaim", "evict-first")


def flavor_capacity(node_list: Sequence[Node], flavor: ResourceFlavor) -> Resources:
    return total(n.allocatable_resources for n in node_list
                 if n.schedulable and flavor.matches(n.labels))


@st.composite
def flavored_clusters(draw: st.DrawFn, node_list: Sequence[Node]
                      ) -> tuple[VirtualCluster, ...]:
    count = draw(st.integers(1, 3))
    vc_names = draw(st.lists(names.map(lambda s: "vc-" + s), min_size=count, max_size=count,
                             unique=True))
    left = {f.name: flavor_capacity(node_list, f).gpu for f in FLAVORS}
    out = []
    for name in vc_names:
        chosen = draw(st.lists(st.sampled_from([f.name for f in FLAVORS]), min_size=1,
                               max_size=2, unique=True))
        quotas = []
        for flavor in chosen:
            gpus = draw(st.integers(0, left[flavor]))
            left[flavor] -= gpus
            maximum = ResourceLimit.of({"gpu": gpus + draw(st.integers(0, 4))}) \
                if draw(st.booleans()) else ResourceLimit()
            quotas.append(FlavorQuota(flavor, Resources.of(gpu=gpus), maximum))
        fungibility = FlavorFungibility(draw(st.sampled_from(list(WhenCanBorrow))),
                                        draw(st.sampled_from(list(WhenCanPreempt))))
        out.append(VirtualCluster(name, flavors=tuple(quotas),
                                  flavor_fungibility=fungibility))
    return tuple(out)


def flavor_problems(node_list: Sequence[Node], vcs: Sequence[VirtualCluster],
                    job_list: Sequence[Job]) -> list[str]:
    by_node = {n.name: n for n in node_list}
    flavors = {f.name: f for f in FLAVORS}
    queues = {vc.name: vc for vc in vcs}
    usage: dict[tuple[str, str], Resources] = {}
    problems = []
    for job in job_list:
        vc = queues.get(job.queue)
        held = [t for t in job.tasks if t.state.holds_resources]
        if vc is None or not held:
            continue
        on = [q for q in vc.flavors
              if all(flavors[q.name].matches(by_node[t.node].labels) for t in held)]
        if not on:
            problems.append(f"job {job.name} of {vc.name} runs on "
                            f"{sorted({t.node for t in held})}, outside every flavor of it")
            continue
        key = (vc.name, on[0].name)
        usage[key] = usage.get(key, Resources()) + total(
            job.group(t.group).resources for t in held)
    for vc in vcs:
        for quota in vc.flavors:
            used = usage.get((vc.name, quota.name), Resources())
            over = quota.max.exceeded(used)
            if over:
                problems.append(f"{vc.name} uses {used} of flavor {quota.name}, above its "
                                f"max {quota.max.to_dict()}")
    return problems


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_tasks_stay_on_their_flavor_and_within_its_max(data: st.DataObject) -> None:
    node_list = data.draw(nodes(max_size=8))
    vcs = data.draw(flavored_clusters(node_list))
    classes = data.draw(priority_classes())
    queues = [vc.name for vc in vcs] + [DEFAULT_QUEUE]
    job_list = data.draw(jobs(queues, class_names(classes), max_size=12))
    profile_name = data.draw(st.sampled_from(PROFILES))
    current = {j.name: j for j in job_list}
    for cycle in range(3):
        snapshot = Snapshot(node_list, tuple(current.values()), vcs, classes,
                            now=float(cycle), resource_flavors=FLAVORS)
        decisions = run_cycle(snapshot, profile(profile_name))
        current = apply(current, decisions, now=float(cycle))
        problems = flavor_problems(node_list, vcs, list(current.values()))
        assert not problems, problems
