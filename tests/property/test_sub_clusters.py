"""Sub-clusters of a job's own virtual cluster, over random trees and random work: no
sub-cluster (nor the job's own) ever uses more than its maximum, the quota tree's usage is
exactly what the running tasks hold, no node gives out more than it has — and when the job
and the work inside have left, in any order, nothing is left behind: no job-scoped cluster,
no usage, nothing owed."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from shoal.api import (
    Job,
    Node,
    ResourceLimit,
    Resources,
    SchedulerName,
    TaskGroup,
    TaskRef,
    VirtualCluster,
)
from shoal.api.objects import ROOT_QUEUE, sub_cluster_name
from shoal.api.resources import total
from shoal.scheduler import run_cycle
from shoal.scheduler.model import SchedulerModel

from .strategies import vc_trees

OWN = "job:tune"


def cpus(n: int) -> Resources:
    return Resources.of(cpu=1000 * n)



def scoped(vc: VirtualCluster) -> VirtualCluster:
    parent = OWN if vc.parent == ROOT_QUEUE else sub_cluster_name("tune", vc.parent)
    return VirtualCluster(sub_cluster_name("tune", vc.name), parent, vc.min, vc.max,
                          vc.weight, vc.queueing)


def work(name: str, queue: str, replicas: int, cpu: int) -> Job:
    return Job(name, (TaskGroup("w", replicas, cpus(cpu)),), queue=queue,
               scheduler_name=SchedulerName.DEFAULT)


def held(model: SchedulerModel) -> dict[str, Resources]:
    """What running tasks hold, per virtual cluster they are charged to."""
    out: dict[str, Resources] = {}
    for info in model.jobs.values():
        for task in info.running:
            request = info.job.group(task.ref.group).resources
            out[info.account] = out.get(info.account, Resources()) + request
    return out


def check(model: SchedulerModel, vcs: list[VirtualCluster], nodes: tuple[Node, ...]) -> None:
    charged = held(model)
    parents = {vc.name: vc.parent for vc in vcs}
    for vc in vcs:
        subtree = total(r for name, r in charged.items()
                        if _under(name, vc.name, parents))
        assert model.quota.get(vc.name).usage == subtree, vc.name
        assert vc.max.admits(subtree), f"{vc.name} uses {subtree}, above its max {vc.max}"
    on_node: dict[str, Resources] = {}
    for info in model.jobs.values():
        for task in info.running:
            node = model.node(task.node).physical or model.node(task.node)
            request = info.job.group(task.ref.group).resources
            on_node[node.name] = on_node.get(node.name, Resources()) + request
    for node in nodes:
        assert on_node.get(node.name, Resources()).fits(node.capacity), node.name


def _under(name: str, ancestor: str, parents: dict[str, str]) -> bool:
    while name in parents:
        if name == ancestor:
            return True
        name = parents[name]
    return False


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_sub_clusters_hold_their_max_and_leave_nothing_behind(data: st.DataObject) -> None:
    size = data.draw(st.integers(2, 12), label="cpus per node")
    nodes = tuple(Node(f"n{i}", Resources.of(cpu=1000 * size, memory=1000 * size))
                  for i in range(data.draw(st.integers(1, 3), label="nodes")))
    own_min = data.draw(st.integers(0, size), label="own min")
    own_max = data.draw(st.integers(max(own_min, 1), size * len(nodes) + 2), label="own max")
    own = VirtualCluster(OWN, "default", cpus(own_min), ResourceLimit.of({"cpu": own_max * 1000}))
    subs = [scoped(vc) for vc in data.draw(vc_trees(cpus(own_min), max_vcs=5), label="tree")]
    model = SchedulerModel(nodes)
    model.add_job(Job("tune", (TaskGroup("w", 1, cpus(1)),), virtual_cluster=own,
                      scheduler_name=SchedulerName.DEFAULT))
    run_cycle(model)
    assume(model.jobs["tune"].running)
    model.add_sub_clusters("tune", subs)
    vcs = [own, *subs]
    queues = [vc.name for vc in vcs]
    for step in range(data.draw(st.integers(1, 4), label="cycles")):
        for i in range(data.draw(st.integers(0, 3))):
            model.add_job(work(f"w{step}-{i}", data.draw(st.sampled_from(queues)),
                               data.draw(st.integers(1, 4)), data.draw(st.integers(1, 3))))
        run_cycle(model)
        check(model, vcs, nodes)
        for info in list(model.jobs.values()):
            for task in list(info.running):
                if info.name != "tune" and data.draw(st.booleans()):
                    model.finish_task(TaskRef(info.name, task.ref.group, task.ref.index))
        check(model, vcs, nodes)
    for name in data.draw(st.permutations(sorted(model.jobs)), label="leaving order"):
        model.withdraw(name)
        for task in list(model.jobs[name].running):
            model.finish_task(task.ref)
        model.remove_job(name)
        remaining = [vc for vc in vcs if vc.name in model.quota.queues]
        check(model, remaining, nodes)
    assert not [q for q in model.quota.queues if q.startswith("job:")]
    assert model.retiring == set() and model.sub_clusters == {}
    assert model.quota.root.usage.is_zero()
    assert model.quota.get("default").children_reserved.is_zero()
