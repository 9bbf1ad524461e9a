"""Issue 16's rules together: one random world mixes every one of them, and every cycle keeps
all their invariants at once.

Each rule was built, and property-tested, on its own branch; this file checks that they
combine. A world has

- a quota tree of virtual clusters (departments → teams; random min, max and weight) with
  random `state` (mostly Open), `priority`, `preemption` policies, `borrowingLimit` and
  `lendingLimit` (at most the min), and sometimes virtual clusters whose quota is given per
  resource flavor (A100 / V100 nodes), with random fungibility;
- nodes with GPU types, some with a task limit (`pods`);
- priority classes, some with `preemptionPolicy: Never`;
- gangs and default-scheduler jobs, elastic ones, some not preemptable, groups with their own
  `minAvailable`, some with `minCount` (partial admission), some best-effort;

the jobs arrive over several cycles and some end between them, under one of four profiles:
`default`, `elastic`, a reclaim-mode profile that reclaims before it allocates (Volcano's
capacity order) and one with `share: proportional`. After every cycle, applied as the
scenario runner applies it (`test_rules_hold_together_cycle_after_cycle`):

1. no node is over-committed, in any resource nor in its task count (`pods`);
2. no gang runs below its minimum nor below any group's own minimum;
3. no virtual cluster's subtree uses more than its `max`, nor more than its
   min + `borrowingLimit`;
4. no job with `preemptable: false` loses a task;
5. no job of a closed virtual cluster (or of one under a closed ancestor) gets a bind;
6. every eviction is one the preemptor's virtual cluster allows (`withinQueue`,
   `reclaimWithinParent`, `borrowWithinParent`), and none is made for a job whose priority
   class says `preemptionPolicy: Never`;
7. every job of a flavored virtual cluster runs on the nodes of one of its flavors, within
   the flavor's max;
8. a partially admitted job never runs more of a group than it was admitted with, nor starts
   it below its `minCount`.

And, in the same worlds once settled (`test_no_eviction_for_a_job_that_fits_without_one`):
a newcomer that allocation alone places makes the profile that reclaims before it
allocates evict nothing.

The oracles read the api objects only; most are the single-rule tests' own, reused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from shoal.api import (
    BUILTIN_PRIORITY_CLASSES,
    DEFAULT_QUEUE,
    ROOT_QUEUE,
    Decisions,
    Elasticity,
    Job,
    Node,
    PriorityClass,
    Resources,
    ScaleStep,
    SchedulerName,
    TaskGroup,
    VirtualCluster,
)
from shoal.api.queue_policy import PreemptionPolicy, QueueStatus
from shoal.api.resources import PODS
from shoal.core import Snapshot
from shoal.core.snapshot import PriorityTable
from shoal.scenario import apply
from shoal.scheduler import Profile, run_cycle

from .oracles import QuotaOracle, bind_problems, node_problems, queue_usage, vc_max_problems
from .strategies import (
    capacity,
    class_names,
    jobs,
    nodes,
    priority_classes,
    small_requests,
    vc_trees,
)
from .test_flavors import FLAVORS, flavor_problems, flavored_clusters
from .test_group_minimums import group_fields, held_per_group
from .test_queue_preemption import FOR_JOB, _allowed, policies
from .test_task_limits import best_effort_or_not, task_limit_problems

CHECKS = settings(max_examples=200, deadline=None)

_PLUGINS = """
tiers:
  - plugins: [{{name: priority}}, {{name: gang}}]
  - plugins: [{{name: predicates}}, {{name: capacity, arguments: {{{capacity}}}}},
              {{name: placement}}]
"""


def _profile(name: str, actions: str, capacity_arguments: str) -> Profile:
    return Profile.from_yaml(
        f"name: {name}\ndescription: issue 16's rules together.\nactions: \"{actions}\"\n"
        + _PLUGINS.format(capacity=capacity_arguments), name)


RECLAIM_FIRST = _profile("reclaim-first", "enqueue, reclaim, allocate, backfill, preempt",
                         "reclaimMode: reclaim")
"""Volcano's capacity order, guarantees lent and taken back."""
PLACE_ONLY = _profile("place-only-lent", "enqueue, allocate, backfill", "reclaimMode: reclaim")
"""RECLAIM_FIRST's plugins, allocation alone: what fits without an eviction."""
PROPORTIONAL = _profile("proportional", "enqueue, allocate, backfill, preempt, reclaim",
                        "reclaimMode: reclaim, share: proportional")
"""Volcano's proportion: weight-proportional deserved shares for order and reclaim."""
PROFILES = {"default": Profile.load("default"), "elastic": Profile.load("elastic"),
            "reclaim-first": RECLAIM_FIRST, "proportional": PROPORTIONAL}


@dataclass(frozen=True)
class Together:
    """A world of every rule: the cluster, and the jobs with the cycle each arrives in."""

    nodes: tuple[Node, ...]
    vcs: tuple[VirtualCluster, ...]
    classes: tuple[PriorityClass, ...]
    arrivals: tuple[tuple[int, Job], ...]
    profile_name: str

    def snapshot(self, job_list: Sequence[Job], now: float) -> Snapshot:
        return Snapshot(self.nodes, tuple(job_list), self.vcs, self.classes, now=now,
                        resource_flavors=FLAVORS)


# ---- the world ----------------------------------------------------------------------------


@st.composite
def _nodes(draw: st.DrawFn) -> tuple[Node, ...]:
    """`strategies.nodes`, some with a task limit (`pods`)."""
    out = []
    for node in draw(nodes(max_size=4)):
        if draw(st.integers(0, 2)) == 0:
            pods = Resources.of(extras={PODS: draw(st.integers(1, 4))})
            out.append(replace(node, capacity=node.capacity + pods,
                               allocatable=None if node.allocatable is None
                               else node.allocatable + pods))
        else:
            out.append(node)
    return tuple(out)


@st.composite
def _queues(draw: st.DrawFn, node_list: Sequence[Node]) -> tuple[VirtualCluster, ...]:
    """A quota tree with limits, states, priorities and policies; sometimes flavored
    virtual clusters beside it (under the root: their quota is per flavor)."""
    tree = draw(vc_trees(capacity(node_list), max_vcs=5, limits=True))
    flavored = tuple(replace(vc, name="fl" + vc.name[2:])  # never a tree's name
                     for vc in draw(flavored_clusters(node_list))) if draw(st.booleans()) \
        else ()
    out = []
    for vc in (*tree, *flavored):
        out.append(replace(
            vc, state=QueueStatus.CLOSED if draw(st.integers(0, 5)) == 0 else QueueStatus.OPEN,
            priority=draw(st.sampled_from([0, 0, 1, 5])),
            preemption=draw(policies)))
    return tuple(out)


@st.composite
def _classes(draw: st.DrawFn) -> tuple[PriorityClass, ...]:
    """Declared priority classes, and some built-in levels overridden, any of them with
    `preemptionPolicy: Never` now and then."""
    declared = list(draw(priority_classes()))
    taken = {c.name for c in declared}
    for builtin in BUILTIN_PRIORITY_CLASSES:
        if builtin.name not in taken and draw(st.integers(0, 3)) == 0:
            declared.append(replace(builtin, global_default=False))
    return tuple(replace(c, preemption_policy=PreemptionPolicy.NEVER)
                 if draw(st.integers(0, 3)) == 0 else c for c in declared)


@st.composite
def _elastic_job(draw: st.DrawFn, name: str, queues: list[str], levels: list[str]) -> Job:
    low = draw(st.integers(1, 3))
    high = low + draw(st.integers(0, 3))
    return Job(name, (TaskGroup("w", high, Resources.of(cpu=1000, gpu=draw(st.integers(0, 2)))),),
               queue=draw(st.sampled_from(queues)),
               scheduler_name=draw(st.sampled_from(list(SchedulerName))),
               elastic=Elasticity("w", low, high, ScaleStep.ANY),
               priority_class=draw(st.sampled_from(levels)),
               submitted=float(draw(st.integers(0, 30))),
               preemptable=draw(st.integers(0, 4)) != 0)


@st.composite
def together(draw: st.DrawFn) -> Together:
    node_list = draw(_nodes())
    vcs = draw(_queues(node_list))
    classes = draw(_classes())
    queues = sorted({vc.name for vc in vcs} | {DEFAULT_QUEUE})
    levels = class_names(classes)
    plain = draw(jobs(queues, levels, max_size=14, request=best_effort_or_not))
    mixed = [replace(draw(group_fields(j)), preemptable=draw(st.integers(0, 4)) != 0)
             for j in plain]
    # Low-priority background that arrives first and fills the cluster: later arrivals
    # have something to preempt and reclaim.
    background = draw(jobs(queues, ["experiment", "offline"], max_size=8,
                           request=small_requests, prefix="bg"))
    mixed += [replace(draw(group_fields(j)), submitted=0.0) for j in background]
    mixed += [draw(_elastic_job(f"e-{i}", queues, levels))
              for i in range(draw(st.integers(0, 2)))]
    arrivals = []
    for job in mixed:
        at = 0 if job.name.startswith("bg-") else draw(st.integers(0, 3))
        # Later arrivals lean to the top class: they find lower work to preempt.
        top = at > 0 and draw(st.booleans())
        arrivals.append((at, replace(job, priority_class="production") if top else job))
    # The profiles that evict, twice as often.
    return Together(node_list, vcs, classes, tuple(arrivals), draw(st.sampled_from(
        ["default", "elastic", *["reclaim-first", "proportional"] * 2])))


# ---- the oracles --------------------------------------------------------------------------


def _closed(vcs: Sequence[VirtualCluster]) -> set[str]:
    """Every virtual cluster that is closed or under a closed ancestor."""
    specs = {vc.name: vc for vc in vcs}

    def shut(name: str) -> bool:
        while name != ROOT_QUEUE and name in specs:
            if specs[name].state is QueueStatus.CLOSED:
                return True
            name = specs[name].parent
        return False

    return {name for name in specs if shut(name)}


def _never(classes: Sequence[PriorityClass], job: Job) -> bool:
    """Whether the job's priority class (or the global default) says Never, read off the
    declared classes."""
    name = job.priority_class
    if name is None:
        name = next((c.name for c in classes if c.global_default), None)
    return any(c.name == name and c.preemption_policy is PreemptionPolicy.NEVER
               for c in classes)


def _borrowing_problems(vcs: Sequence[VirtualCluster], job_list: Sequence[Job]) -> list[str]:
    oracle = QuotaOracle(vcs, Resources(), queue_usage(job_list))
    problems = []
    for vc in vcs:
        for dim in oracle.dims:
            cap = oracle.borrowing_cap(vc.name, dim)
            if cap is not None and oracle.usage[vc.name].get(dim) > cap:
                problems.append(f"{vc.name}: subtree uses {oracle.usage[vc.name].get(dim)} "
                                f"{dim}, above min + borrowingLimit = {cap}")
    return problems


def _gang_problems(job_list: Sequence[Job]) -> list[str]:
    problems = []
    for job in job_list:
        held = held_per_group(job)
        if not job.gang or not held:
            continue
        if sum(held.values()) < job.gang_minimum:
            problems.append(f"gang {job.name} holds {held}, below its minimum "
                            f"{job.gang_minimum}")
        for group in job.groups:
            if group.min_available is not None and \
                    held.get(group.name, 0) < min(group.min_available, group.replicas):
                problems.append(f"gang {job.name} holds {held}, below group {group.name}'s "
                                f"minimum {group.min_available}")
    return problems


def _eviction_problems(world: Together, before: Sequence[Job], decisions: Decisions
                       ) -> list[str]:
    jobs_by_name = {j.name: j for j in before}
    specs = {vc.name: vc for vc in world.vcs}
    specs.setdefault(DEFAULT_QUEUE, VirtualCluster(DEFAULT_QUEUE))
    table = PriorityTable(world.classes)
    priority = {name: table.priority(job) for name, job in jobs_by_name.items()}
    problems = []
    for eviction in decisions.evictions:
        victim = jobs_by_name[eviction.task.job]
        if not victim.preemptable:
            problems.append(f"{eviction.task} of non-preemptable {victim.name} evicted: "
                            f"{eviction.reason}")
        found = FOR_JOB.search(eviction.reason)
        if found is None:
            continue  # not taken for another job (the elastic shrink to a size, say)
        preemptor = jobs_by_name[found.group(1) or found.group(2)]
        if _never(world.classes, preemptor):
            problems.append(f"{eviction.task} evicted for {preemptor.name}, whose priority "
                            f"class says preemptionPolicy Never: {eviction.reason}")
        spec = specs[preemptor.queue]
        why = _allowed(spec.preemption, spec.queueing, priority, preemptor, victim)
        if why is not None:
            problems.append(f"{eviction.task} ({victim.queue!r}) evicted for "
                            f"{preemptor.name} ({preemptor.queue!r}): {why}; "
                            f"reason: {eviction.reason}")
    return problems


def _partial_problems(asked: dict[str, Job], before: Sequence[Job], decisions: Decisions,
                      after: Sequence[Job]) -> list[str]:
    was = {j.name: j for j in before}
    problems = []
    for job in after:
        held = held_per_group(job)
        started = not held_per_group(was[job.name]) and held
        bound: dict[str, int] = {}
        for bind in decisions.binds:
            if bind.task.job == job.name:
                bound[bind.task.group] = bound.get(bind.task.group, 0) + 1
        for group in job.groups:
            first = asked[job.name].group(group.name)
            if held.get(group.name, 0) > group.replicas:
                problems.append(f"{job.name} runs {held[group.name]} of {group.name}, above "
                                f"the {group.replicas} it was admitted with")
            if first.min_count is None or job.elastic is not None:
                continue
            if group.replicas < first.min_count:
                problems.append(f"{job.name}'s {group.name} admitted with {group.replicas}, "
                                f"below its minCount {first.min_count}")
            least = max(first.min_count, first.min_available if job.gang and
                        first.min_available else 0)
            if started and bound.get(group.name, 0) < min(least, group.replicas):
                problems.append(f"{job.name} started {group.name} with "
                                f"{bound.get(group.name, 0)}, below its minCount {least}")
    return problems


def problems_of(world: Together, asked: dict[str, Job], before: Sequence[Job],
                decisions: Decisions, after: Sequence[Job]) -> list[str]:
    """Every invariant of the module's text, for one cycle."""
    closed = _closed(world.vcs)
    by_name = {j.name: j for j in before}
    return [
        *bind_problems(world.nodes, before, decisions),
        *node_problems(world.nodes, after),
        *task_limit_problems(world.nodes, tuple(after)),
        *_gang_problems(after),
        *vc_max_problems(world.vcs, after),
        *_borrowing_problems(world.vcs, after),
        *(f"{b.task} of {by_name[b.task.job].queue!r} bound, a closed virtual cluster"
          for b in decisions.binds if by_name[b.task.job].queue in closed),
        *_eviction_problems(world, before, decisions),
        *flavor_problems(world.nodes, [vc for vc in world.vcs if vc.flavors], after),
        *_partial_problems(asked, before, decisions, after),
    ]


def evolve(world: Together, finish: list[list[int]], cycles: int = 6
           ) -> tuple[list[Job], list[str]]:
    """Run `cycles` cycles: the jobs arriving in a cycle are submitted before it, the jobs
    `finish` names end after it. Returns the jobs at the end and every problem seen."""
    current: dict[str, Job] = {}
    asked = {j.name: j for _, j in world.arrivals}
    problems: list[str] = []
    for cycle in range(cycles):
        current.update({j.name: j for at, j in world.arrivals if at == cycle})
        before = list(current.values())
        decisions = run_cycle(world.snapshot(before, float(cycle)),
                              PROFILES[world.profile_name])
        current = apply(current, decisions, now=float(cycle))
        for what, happened in (("eviction", decisions.evictions), ("bind", decisions.binds),
                               ("partial admission", [r for r in decisions.resizes
                                                      if r.partial_admission])):
            if happened:
                event(f"{world.profile_name}: a cycle with a {what}")
        after = list(current.values())
        problems += [f"cycle {cycle}: {p}" for p in
                     problems_of(world, asked, before, decisions, after)]
        if problems:
            break
        names = sorted(current)
        for i in finish[cycle] if cycle < len(finish) and names else []:
            current.pop(names[i % len(names)], None)
    return list(current.values()), problems


finishing = st.lists(st.lists(st.integers(0, 50), max_size=2), max_size=5)


@pytest.mark.slow
@CHECKS
@given(world=together(), finish=finishing)
def test_rules_hold_together_cycle_after_cycle(world: Together, finish: list[list[int]]
                                               ) -> None:
    _, problems = evolve(world, finish)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@CHECKS
@given(world=together(), finish=finishing, data=st.data())
def test_no_eviction_for_a_job_that_fits_without_one(world: Together, finish: list[list[int]],
                                                      data: st.DataObject) -> None:
    """The world's jobs after a few cycles, those that wait for nothing kept, and one
    newcomer of any kind: if allocation alone (`PLACE_ONLY`) starts it, the profile that
    reclaims before allocating (`RECLAIM_FIRST`, same plugins) evicts nothing."""
    job_list, _ = evolve(world, finish, cycles=3)
    settled = [j for j in job_list if len(j.tasks) >= j.replicas and
               all(t.state.holds_resources or t.state.terminal for t in j.tasks)]
    queues = sorted({vc.name for vc in world.vcs} - _closed(world.vcs) | {DEFAULT_QUEUE})
    new = data.draw(jobs(queues, class_names(world.classes), max_size=1, prefix="new"))
    if not new:
        return
    job = replace(data.draw(group_fields(new[0])), submitted=100.0)
    snapshot = world.snapshot([*settled, job], 10.0)
    placed = run_cycle(snapshot, PLACE_ONLY)
    if job.name in placed.pending_by_job() or not any(b.task.job == job.name
                                                      for b in placed.binds):
        return  # it does not fit without an eviction: evicting may be right
    evicting = run_cycle(snapshot, RECLAIM_FIRST)
    assert not evicting.evictions, (
        f"{job.name} fits without an eviction (allocation alone placed "
        f"{sum(b.task.job == job.name for b in placed.binds)} task(s)), yet "
        + "; ".join(f"{e.task} was evicted: {e.reason}" for e in evicting.evictions))
