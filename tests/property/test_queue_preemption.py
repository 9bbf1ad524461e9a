"""Per-queue preemption policies (issue 16; `shoal.scheduler.queue_preemption`): whatever the
world, every eviction is one the PREEMPTOR's virtual cluster allows.

Worlds are contended on purpose (random worlds seldom evict): `contended` fills a slot
cluster beyond capacity under `lend-only` (queues borrow others' unused guarantees) and adds
newcomers leaning to high priorities and to lending queues; `lent` adds newcomers to the
lending leaf of a `guarantee_cases` world. Each virtual cluster then draws a policy
(`withinQueue`, `reclaimWithinParent`, `borrowWithinParent` with or without a threshold) and
one cycle runs under `lend-reclaim` (preempt and reclaim, guarantees lent). For each
eviction, the job it was taken for (the eviction's reason names it) and the victim must
satisfy:

- same virtual cluster: `withinQueue` Never — never; LowerPriority — the victim ranks
  strictly behind (lower priority in a priority-ordered queue; nobody in a `fifo` one);
  LowerOrNewerEqualPriority — that, or of equal priority and submitted after it;
- another virtual cluster: `reclaimWithinParent` Any, or LowerPriority and the victim of
  lower priority, or `borrowWithinParent` LowerPriority and the victim of lower priority and
  at most the threshold. So a queue whose `reclaimWithinParent` and `borrowWithinParent` are
  both Never never takes anything from another queue (and with `withinQueue` Never too,
  nothing is evicted at all).

And a preemptor stays within its own quota: what a job took by evicting queue-mates fits,
under `borrowWithinParent: Never`, in what its queue may use without borrowing a guarantee.

The oracles read the api objects only (priorities from the priority classes, ranks from the
queueing policy, headroom from `QuotaOracle`), never the scheduler's working state.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import (
    DEFAULT_QUEUE,
    Job,
    Node,
    QueueingPolicy,
    SchedulerName,
    TaskGroup,
    VirtualCluster,
)
from shoal.api.queue_policy import (
    BorrowPolicy,
    BorrowWithinParent,
    QueuePreemption,
    ReclaimWithinParent,
    WithinQueue,
)
from shoal.api.resources import total
from shoal.core.snapshot import PriorityTable
from shoal.scheduler import Profile, run_cycle

from .oracles import QuotaOracle, queue_usage
from .strategies import (
    SLOT,
    World,
    capacity,
    class_names,
    guarantee_cases,
    leaves,
    names,
    priority_classes,
    profile,
    vc_trees,
)

RULES = settings(max_examples=60, deadline=None)

#: The job an eviction was made for, as the preempt and reclaim actions word its reason.
FOR_JOB = re.compile(r"for job '([^']+)'|job '([^']+)' of virtual cluster")

policies = st.builds(
    QueuePreemption,
    within_queue=st.sampled_from(list(WithinQueue)),
    reclaim_within_parent=st.sampled_from(list(ReclaimWithinParent)),
    borrow_within_parent=st.builds(
        BorrowWithinParent, policy=st.sampled_from(list(BorrowPolicy)),
        max_priority_threshold=st.one_of(st.none(), st.sampled_from([10, 100, 1000]))))


def _with_policies(world: World, drawn: list[QueuePreemption]) -> World:
    """The world with each virtual cluster's policy replaced by one drawn (in order; the
    `default` queue declared too, so it draws one)."""
    vcs = list(world.virtual_clusters)
    if all(vc.name != DEFAULT_QUEUE for vc in vcs):
        vcs.append(VirtualCluster(DEFAULT_QUEUE))
    return replace(world, virtual_clusters=tuple(
        replace(vc, preemption=drawn[i % len(drawn)]) for i, vc in enumerate(vcs)))


def _allowed(policy: QueuePreemption, queueing: QueueingPolicy, priority: dict[str, int],
             preemptor: Job, victim: Job) -> str | None:
    """None if the policy of the preemptor's virtual cluster allows the eviction; else why
    not."""
    mine, theirs = priority[preemptor.name], priority[victim.name]
    if preemptor.queue == victim.queue:
        ranked = queueing is QueueingPolicy.PRIORITY
        behind = ranked and theirs < mine
        level = theirs == mine  # in a fifo queue every job ranks level: priority decides
        newer = (victim.submitted, victim.name) > (preemptor.submitted, preemptor.name)
        within = policy.within_queue
        if within is WithinQueue.NEVER:
            return "withinQueue Never, yet a queue-mate was evicted"
        if within is WithinQueue.LOWER_PRIORITY and not behind:
            return f"withinQueue LowerPriority, yet a victim of rank {theirs} ≥ {mine}"
        if within is WithinQueue.LOWER_OR_NEWER_EQUAL_PRIORITY and not (
                behind or (level and newer)):
            return "withinQueue LowerOrNewerEqualPriority, yet neither lower nor newer-equal"
        return None
    reclaim = policy.reclaim_within_parent
    if reclaim is ReclaimWithinParent.ANY or (
            reclaim is ReclaimWithinParent.LOWER_PRIORITY and theirs < mine):
        return None
    borrow = policy.borrow_within_parent
    threshold = borrow.max_priority_threshold
    if borrow.policy is BorrowPolicy.LOWER_PRIORITY and theirs < mine and (
            threshold is None or theirs <= threshold):
        return None
    return (f"reclaimWithinParent {reclaim}, borrowWithinParent {borrow}, yet a job of "
            f"priority {theirs} in {victim.queue!r} was evicted for one of {mine}")


@st.composite
def _job(draw: st.DrawFn, name: str, queues: list[str], classes: list[str],
         submitted: float) -> Job:
    slots = draw(st.sampled_from([SLOT, SLOT, SLOT.scale(2)]))
    replicas = draw(st.integers(1, 3))
    gang = draw(st.booleans())
    return Job(name, (TaskGroup("w", replicas, slots),), queue=draw(st.sampled_from(queues)),
               scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT,
               priority_class=draw(st.sampled_from(classes)), submitted=submitted)


@st.composite
def contended(draw: st.DrawFn) -> World:
    """A full slot cluster: nodes of 2–8 slots, a virtual-cluster tree of whole slots, and
    more background work than fits, run to convergence under `lend-only` (so queues borrow
    others' unused guarantees); then 1–4 newcomers of any queue and priority class, submitted
    later, which find queue-mates to preempt and borrowers to reclaim from."""
    node_names = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    node_list = tuple(Node(n, SLOT.scale(draw(st.integers(2, 8)))) for n in node_names)
    vcs = draw(vc_trees(capacity(node_list), max_vcs=4, unit=SLOT))
    classes = draw(priority_classes())
    queues = sorted({*leaves(vcs), DEFAULT_QUEUE})
    levels = class_names(classes)
    slots = capacity(node_list).gpu
    background: list[Job] = []
    while sum(j.replicas * j.groups[0].resources.gpu for j in background) < slots:
        background.append(draw(_job(f"bg-{len(background)}", queues, levels,
                                    float(len(background)))))
    world = World(node_list, vcs, classes, tuple(background), "lend-only")
    for _ in range(12):
        _, decisions, world = world.step()
        if not decisions.changes_anything():
            break
    held = [j for j in world.jobs if any(t.state.holds_resources for t in j.tasks)]
    # Newcomers lean to the top classes (above the background, they have victims) and to
    # the queues that lent part of their guarantee (they have it to take back).
    ahead = [c for c in levels if c in ("normal", "production")] * 2 + levels
    minimum = {vc.name: vc.min.gpu for vc in vcs}
    used = {q: sum(j.group(t.group).resources.gpu for j in held if j.queue == q
                   for t in j.tasks if t.state.holds_resources) for q in queues}
    lenders = [q for q in queues if minimum.get(q, 0) > used[q]]
    newcomers = [draw(_job(f"new-{i}", lenders * 3 + queues, ahead, 100.0 + i))
                 for i in range(draw(st.integers(1, 4)))]
    return world.with_jobs([*held, *newcomers])


@st.composite
def lent(draw: st.DrawFn) -> World:
    """A guarantee case (`guarantee_cases`: a leaf virtual cluster with unused guarantee,
    others that borrowed what they could under `lend-only`) and 1–3 newcomers in that leaf,
    of any priority class: they have a guarantee to take back."""
    case = draw(guarantee_cases(profiles=("lend-only",)))
    levels = class_names(case.world.priority_classes)
    newcomers = [draw(_job(f"new-{i}", [case.target], levels, 100.0 + i))
                 for i in range(draw(st.integers(1, 3)))]
    return case.world.with_jobs([*case.world.jobs, *newcomers])


@pytest.mark.slow
@RULES
@given(world=st.one_of(contended(), lent()),
       drawn=st.lists(policies, min_size=1, max_size=4))
def test_every_eviction_is_one_the_preemptors_queue_allows(
        world: World, drawn: list[QueuePreemption]) -> None:
    world = _with_policies(world, drawn)
    decisions = run_cycle(world.snapshot(), profile("lend-reclaim"))
    specs = {vc.name: vc for vc in world.virtual_clusters}
    jobs = {j.name: j for j in world.jobs}
    table = PriorityTable(world.priority_classes)
    priority = {name: table.priority(job) for name, job in jobs.items()}
    for eviction in decisions.evictions:
        found = FOR_JOB.search(eviction.reason)
        assert found, f"the reason names no preemptor: {eviction.reason!r}"
        preemptor = jobs[found.group(1) or found.group(2)]
        victim = jobs[eviction.task.job]
        spec = specs[preemptor.queue]
        why = _allowed(spec.preemption, spec.queueing, priority, preemptor, victim)
        assert why is None, (
            f"{eviction.task} ({victim.queue!r}) evicted for {preemptor.name} "
            f"({preemptor.queue!r}): {why}; reason: {eviction.reason}")


@pytest.mark.slow
@RULES
@given(world=st.one_of(contended(), lent()))
def test_never_never_evicts(world: World) -> None:
    """The same world with every queue's policy Never: the cycle evicts nothing, though it
    runs preempt and reclaim over borrowed guarantees."""
    never = QueuePreemption(WithinQueue.NEVER, ReclaimWithinParent.NEVER,
                            BorrowWithinParent(BorrowPolicy.NEVER))
    world = _with_policies(world, [never])
    decisions = run_cycle(world.snapshot(), profile("lend-reclaim"))
    assert not decisions.evictions, "; ".join(
        f"{e.task}: {e.reason}" for e in decisions.evictions)


PREEMPT_LENDING = Profile.from_yaml("""
name: preempt-lending
description: Guarantees lent to any task (capacity reclaimMode reclaim); preempt, no reclaim.
actions: "enqueue, allocate, backfill, preempt"
tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity, arguments: {reclaimMode: reclaim}},
              {name: placement}]
""", "preempt-lending")


@pytest.mark.slow
@RULES
@given(world=contended(), borrow=st.sampled_from(list(BorrowPolicy)))
def test_a_preemptor_stays_within_its_own_quota(world: World, borrow: BorrowPolicy) -> None:
    """Only one job waits — the first newcomer, X — among jobs that hold all their tasks,
    and every queue's `borrowWithinParent` is `borrow`. If X starts by evicting queue-mates
    under `borrowWithinParent: Never`, what X took must fit in its queue's headroom *as if
    nothing were lent* (`QuotaOracle`, from the quota tree's docstring), over the usage left
    once its victims are gone: X runs on no other subtree's unused guarantee."""
    preemptor = next((j for j in world.jobs if j.name.startswith("new-")), None)
    if preemptor is None:
        return
    settled = [j for j in world.jobs if len(j.tasks) >= j.replicas and
               all(t.state.holds_resources for t in j.tasks)]
    world = _with_policies(world.with_jobs([*settled, preemptor]),
                           [QueuePreemption(borrow_within_parent=BorrowWithinParent(borrow))])
    decisions = run_cycle(world.snapshot(), PREEMPT_LENDING)
    if not decisions.evictions or borrow is BorrowPolicy.LOWER_PRIORITY:
        return
    jobs = {j.name: j for j in world.jobs}
    evicted = {e.task for e in decisions.evictions}
    remaining = [replace(j, tasks=tuple(t for t in j.tasks if t.ref not in evicted))
                 for j in world.jobs]
    oracle = QuotaOracle(world.virtual_clusters, capacity(world.nodes, world.jobs),
                         queue_usage(remaining))
    took = total(b.resources for b in decisions.binds if b.task.job == preemptor.name)
    assert all(jobs[e.task.job].queue == preemptor.queue for e in decisions.evictions)
    assert oracle.admits(preemptor.queue, took), (
        f"{preemptor.name} evicted {sorted(str(t) for t in evicted)} in {preemptor.queue!r} "
        f"and took {took}, beyond what its queue may use without borrowing a guarantee: "
        f"{oracle.headroom(preemptor.queue)}")
