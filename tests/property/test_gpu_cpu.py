"""GPU/CPU discipline (the gpu-discipline plugin, seed 002) over random clusters.

Clusters mix GPU nodes and CPU-only nodes; jobs mix GPU tasks (most asking at least the
minimum CPU per GPU, some not) and CPU-only tasks. The profile holds gpu-discipline with a
drawn `minCpuPerGpu` and `cpuReservedPerIdleGpu`, and the placing actions that may run with
it: allocate, backfill, elastic, and in some draws preempt and reclaim. Over several cycles:

- when a CPU-only task is bound, its node keeps at least `cpuReservedPerIdleGpu` free CPU
  per idle GPU (replaying the cycle's binds in order from the state before it; a cycle that
  also evicts is replayed with its evictions first, which frees CPU and idles GPUs at once,
  so the check is made only where no eviction happened on that node);
- no task of a group asking less CPU per GPU than the minimum is ever bound;
- no node is over-committed and no GPU index is given twice.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import DEFAULT_QUEUE, Job, Node, Resources, SchedulerName, TaskGroup
from shoal.core import Snapshot
from shoal.scenario import apply
from shoal.scheduler import Profile, run_cycle

from .oracles import node_free, node_problems
from .strategies import names

CHECKS = settings(max_examples=40, deadline=None)

ACTIONS = ("enqueue, allocate, backfill, elastic",
           "enqueue, allocate, backfill, preempt, reclaim, elastic")


def discipline_profile(actions: str, minimum: int, reserve: int, spread: bool) -> Profile:
    placement: dict[str, object] = {"name": "placement"}
    if spread:
        placement["arguments"] = {"strategy": "spread"}
    return Profile.from_dict({
        "name": "gpucpu-property",
        "actions": actions,
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}]},
            {"plugins": [{"name": "predicates"},
                         {"name": "capacity", "arguments": {"reclaimMode": "reclaim"}},
                         placement,
                         {"name": "gpu-discipline",
                          "arguments": {"minCpuPerGpu": f"{minimum}m",
                                        "cpuReservedPerIdleGpu": f"{reserve}m"}}]},
        ]})


@st.composite
def cluster(draw: st.DrawFn) -> tuple[Node, ...]:
    node_names = draw(st.lists(names, min_size=1, max_size=6, unique=True))
    out = []
    for name in node_names:
        gpu = draw(st.sampled_from([0, 0, 2, 4, 8]))
        cpu = draw(st.sampled_from([4000, 8000, 16000, 32000]))
        out.append(Node(name, Resources.of(cpu=cpu, memory=262144, gpu=gpu)))
    return tuple(out)


@st.composite
def request(draw: st.DrawFn, minimum: int) -> Resources:
    gpu = draw(st.sampled_from([0, 0, 1, 2, 4]))
    if gpu and draw(st.integers(0, 5)) == 0:
        cpu = draw(st.integers(0, max(0, gpu * minimum - 1)))  # breaks the minimum
    elif gpu:
        cpu = gpu * minimum + draw(st.sampled_from([0, 500, 2000, 6000]))
    else:
        cpu = draw(st.sampled_from([500, 1000, 2000, 4000, 8000, 12000]))
    return Resources.of(cpu=cpu, memory=draw(st.sampled_from([0, 1024, 8192])), gpu=gpu)


@st.composite
def workload(draw: st.DrawFn, minimum: int) -> tuple[Job, ...]:
    job_names = draw(st.lists(names.map(lambda s: f"j-{s}"), min_size=1, max_size=12,
                              unique=True))
    out = []
    for name in job_names:
        groups = tuple(TaskGroup(f"g{i}", draw(st.integers(1, 4)), draw(request(minimum)))
                       for i in range(draw(st.integers(1, 2))))
        gang = draw(st.booleans())
        out.append(Job(name, groups, queue=DEFAULT_QUEUE,
                       scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT,
                       submitted=float(draw(st.integers(0, 20)))))
    return tuple(out)


def reserve_problems(nodes: tuple[Node, ...], before: list[Job], binds: list[tuple[str, str,
                     Resources]], evicted_on: set[str], reserve: int) -> list[str]:
    """Replays `binds` (task, node, request) in order from the state of `before`."""
    free = node_free(nodes, before)
    idle = {n.name: free[n.name].gpu for n in nodes}
    cpu = {n.name: free[n.name].cpu for n in nodes}
    problems = []
    for task, node, asked in binds:
        cpu[node] -= asked.cpu
        idle[node] -= asked.gpu
        if asked.gpu == 0 and asked.cpu > 0 and node not in evicted_on and \
                cpu[node] < idle[node] * reserve:
            problems.append(f"CPU-only task {task} left node {node} with {cpu[node]}m free "
                            f"CPU for {idle[node]} idle GPUs ({reserve}m each)")
    return problems


@CHECKS
@given(data=st.data(), nodes=cluster(), actions=st.sampled_from(ACTIONS),
       minimum=st.sampled_from([0, 500, 1000, 2000]),
       reserve=st.sampled_from([0, 500, 1000, 2000, 4000]), spread=st.booleans(),
       cycles=st.integers(1, 4))
def test_cpu_only_tasks_leave_idle_gpus_their_cpu(data: st.DataObject, nodes: tuple[Node, ...],
                                                  actions: str, minimum: int, reserve: int,
                                                  spread: bool, cycles: int) -> None:
    profile = discipline_profile(actions, minimum, reserve, spread)
    jobs = {j.name: j for j in data.draw(workload(minimum))}
    for cycle in range(cycles):
        now = float(cycle)
        before = list(jobs.values())
        decisions = run_cycle(Snapshot(nodes, tuple(before), now=now), profile)
        groups = {(j.name, g.name): g.resources for j in before for g in j.groups}
        binds = [(str(b.task), b.node, groups[(b.task.job, b.task.group)])
                 for b in decisions.binds]
        evicted_on = {e.node for e in decisions.evictions}
        problems = reserve_problems(nodes, before, binds, evicted_on, reserve)
        for task, _node, asked in binds:
            if asked.gpu and asked.cpu < asked.gpu * minimum:
                problems.append(f"task {task} asks {asked} but was bound: below the minimum "
                                f"of {minimum}m CPU per GPU")
        jobs = apply(jobs, decisions, now=now)
        problems += node_problems(list(nodes), list(jobs.values()))
        assert not problems, "\n".join(problems)


@CHECKS
@given(nodes=cluster(), reserve=st.sampled_from([500, 1000, 2000]))
def test_a_gpu_task_may_use_every_free_cpu(nodes: tuple[Node, ...], reserve: int) -> None:
    """The reserve binds CPU-only tasks alone: a GPU task asking all the CPU of an idle GPU
    node is placed, whatever the reserve."""
    gpu_nodes = [n for n in nodes if n.capacity.gpu]
    if not gpu_nodes:
        return
    node = gpu_nodes[0]
    whole = replace(node.capacity, extras=())
    job = Job("whole", (TaskGroup("w", 1, whole),), queue=DEFAULT_QUEUE)
    profile = discipline_profile(ACTIONS[0], 0, reserve, False)
    decisions = run_cycle(Snapshot(nodes, (job,)), profile)
    assert [b.task.job for b in decisions.binds] == ["whole"]
