"""No queue above its borrowingLimit or lendingLimit (issue 16; `shoal.core.quota_limits`).

Two statements, each checked on the quota tree alone and through real scheduling cycles:

- borrowingLimit: a virtual cluster's subtree never uses more than its guarantee plus its
  borrowingLimit, in any dimension the limit names.
- lendingLimit: what the rest of the cluster uses of a virtual cluster's guarantee never
  exceeds its lendingLimit, even when guarantees are lent (capacity `reclaimMode: reclaim`).
  "What the rest uses of q's guarantee" is measured from usage alone: whatever the others
  use beyond the capacity that is not guaranteed to q, `max(0, others − (capacity − min(q)))`.
  Equivalently, in the slot world: the free slots never fall below q's unused guarantee less
  its lendingLimit, and a job within that part starts at once, and no eviction is made for
  it (the cycle evicts what it would without it).

Capacity never shrinks here (no node lost or cordoned): a guarantee is only promised while
the capacity that backs it is there.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from shoal.api import (
    DEFAULT_QUEUE,
    ROOT_QUEUE,
    Job,
    Node,
    ResourceLimit,
    Resources,
    SchedulerName,
    TaskGroup,
    VirtualCluster,
)
from shoal.core import QuotaTree
from shoal.scheduler import run_cycle

from .oracles import QuotaOracle, node_free, queue_usage
from .strategies import (
    SLOT,
    GuaranteeCase,
    World,
    capacity,
    guarantee_cases,
    profile,
    vc_trees,
    worlds,
)

LIMITS = settings(max_examples=60, deadline=None)

capacities = st.builds(
    Resources.of, cpu=st.integers(0, 64000), memory=st.integers(0, 262144),
    gpu=st.integers(0, 16))
requests = st.builds(
    Resources.of, cpu=st.sampled_from([0, 1, 500, 4000, 16000]),
    memory=st.sampled_from([0, 1, 1024, 65536]), gpu=st.integers(0, 4))
operations = st.lists(
    st.tuples(st.integers(0, 10), requests, st.booleans(), st.booleans(), st.integers(0, 30)),
    max_size=40)
"""(queue pick, request, lent?, refund?, which outstanding charge to refund)."""


@st.composite
def trees(draw: st.DrawFn) -> tuple[Resources, tuple[VirtualCluster, ...]]:
    cap = draw(capacities)
    return cap, draw(vc_trees(cap, limits=True))


def limit_problems(vcs: tuple[VirtualCluster, ...], cap: Resources,
                   usage: dict[str, Resources]) -> list[str]:
    """Every virtual cluster above its borrowingLimit, or lending more of its guarantee than
    its lendingLimit, recomputed from the charges alone."""
    oracle = QuotaOracle(vcs, cap, usage)
    out: list[str] = []
    for vc in vcs:
        used = oracle.usage[vc.name]
        for dim, limit in vc.borrowing_limit.limits:
            if used.get(dim) > vc.min.get(dim) + limit:
                out.append(f"{vc.name} uses {used.get(dim)} {dim}, above its guarantee "
                           f"{vc.min.get(dim)} + borrowingLimit {limit}")
        for dim, limit in vc.lending_limit.limits:
            others = oracle.usage[ROOT_QUEUE].get(dim) - used.get(dim)
            lent = max(0, others - (cap.get(dim) - vc.min.get(dim)))
            if lent > limit:
                out.append(f"the rest of the cluster uses {lent} {dim} of {vc.name}'s "
                           f"guarantee {vc.min.get(dim)}, above its lendingLimit {limit}")
    return out


PARENT_JOB = (Resources.of(1, 1, 1),
              (VirtualCluster("vc-0", min=Resources.of(gpu=1)),
               VirtualCluster("vc-0000", parent="vc-0", min=Resources.of(gpu=1),
                              lending_limit=ResourceLimit.of({"gpu": 0}))))
"""Found by hypothesis: a job placed in the parent `vc-0` itself took the 1 gpu that its
child `vc-0000` is guaranteed and keeps unlent (lendingLimit 0). A job in a parent is outside
every child, so `check` keeps the children's guarantees from it."""


@LIMITS
@given(case=trees(), ops=operations)
@example(case=PARENT_JOB, ops=[(1, Resources.of(gpu=1), False, False, 0)])
def test_the_quota_tree_keeps_every_queue_within_its_limits(
        case: tuple[Resources, tuple[VirtualCluster, ...]],
        ops: list[tuple[int, Resources, bool, bool, int]]) -> None:
    """Charges made only when `check` allows them (lent or not, as the capacity plugin asks),
    refunds in any order: after every step, no virtual cluster is above its borrowingLimit
    nor has more than its lendingLimit of its guarantee used by others."""
    cap, vcs = case
    tree = QuotaTree(vcs, cap)
    queues = sorted([vc.name for vc in vcs] + [DEFAULT_QUEUE])
    charged: dict[str, list[Resources]] = {}
    for pick, request, lend, refund, which in ops:
        queue = queues[pick % len(queues)]
        outstanding = charged.setdefault(queue, [])
        if refund and outstanding:
            tree.refund(queue, outstanding.pop(which % len(outstanding)))
        elif tree.check(queue, request, lend) is None:
            tree.charge(queue, request)
            outstanding.append(request)
        usage = {q: sum(rs, Resources()) for q, rs in charged.items()}
        problems = limit_problems(vcs, cap, usage)
        assert not problems, problems


@LIMITS
@given(world=worlds(profiles=("default", "lend-only", "lend-reclaim", "evict-first"),
                    limits=True))
def test_cycles_keep_every_queue_below_its_borrowing_limit(world: World) -> None:
    """Real cycles, every built-in way of lending: no virtual cluster's running tasks ever
    go above its guarantee plus its borrowingLimit (the running state before the cycle was
    made by cycles under the same limits)."""
    for _ in range(2):
        world = world.step()[2]
        oracle = QuotaOracle(world.virtual_clusters, Resources(), queue_usage(world.jobs))
        for vc in world.virtual_clusters:
            used = oracle.usage[vc.name]
            over = [dim for dim, limit in vc.borrowing_limit.limits
                    if used.get(dim) > vc.min.get(dim) + limit]
            assert not over, \
                f"{vc.name} uses {used}, above its guarantee {vc.min} + borrowingLimit " \
                f"{vc.borrowing_limit} in {over}"


def _unlent_slots(case: GuaranteeCase) -> int:
    """The target's unused guarantee less its lendingLimit, in slots (none without a limit:
    then all of it may be lent)."""
    spec = next(vc for vc in case.world.virtual_clusters if vc.name == case.target)
    limit = spec.lending_limit.get("gpu")
    return 0 if limit is None else max(0, case.idle_slots - limit)


@LIMITS
@given(case=guarantee_cases(profiles=("lend-only",), limits=True))
def test_lending_never_gives_away_more_than_the_lending_limit(case: GuaranteeCase) -> None:
    """Borrowers ran to convergence under a profile that lends every guarantee: the free
    slots still hold the target's unused guarantee less its lendingLimit."""
    free = sum(r.gpu for r in node_free(case.world.nodes, case.world.jobs).values())
    assert free >= _unlent_slots(case), \
        f"{case.target!r}: {case.idle_slots} unused guaranteed slot(s), lendingLimit " \
        f"{_lending(case)}, but only {free} slot(s) free"


def _lending(case: GuaranteeCase) -> str:
    spec = next(vc for vc in case.world.virtual_clusters if vc.name == case.target)
    return str(spec.lending_limit)


@LIMITS
@given(case=guarantee_cases(profiles=("lend-only",), limits=True), size=st.integers(1, 64),
       gang=st.booleans(), evicting=st.sampled_from(["lend-reclaim", "evict-first"]))
def test_a_job_within_the_unlent_guarantee_starts_without_eviction(
        case: GuaranteeCase, size: int, gang: bool, evicting: str) -> None:
    """A job of k one-slot tasks, k at most what the lending limit kept unlent, is placed
    whole by the very next cycle of a lending profile, and evicts nothing: that part of
    the guarantee was never lent, so there is nothing to take back.

    The borrowers converged under a profile that never reclaims, so another virtual cluster
    below its guarantee may rightly take it back in this very cycle (its waiting jobs are
    still there); those evictions are not the newcomer's. So the statement is: the cycle
    with the newcomer evicts exactly what the same cycle without it evicts, and nothing for
    it."""
    unlent = _unlent_slots(case)
    if unlent == 0:
        return
    k = (size - 1) % unlent + 1
    job = Job("kept", (TaskGroup("worker", k, SLOT),), queue=case.target,
              scheduler_name=SchedulerName.SHOAL if gang else SchedulerName.DEFAULT,
              submitted=100.0)
    world = case.world.with_jobs([*case.world.jobs, job])
    decisions = run_cycle(world.snapshot(), profile(evicting))
    placed = [b for b in decisions.binds if b.task.job == job.name]
    assert len(placed) == k, \
        f"{len(placed)} of {k} placed: {decisions.pending_by_job().get(job.name)}; " \
        f"capacity {capacity(world.nodes)}"
    without = run_cycle(case.world.snapshot(), profile(evicting))
    assert decisions.evictions == without.evictions, \
        f"with {job.name!r}: {decisions.evictions}; without it: {without.evictions}"


@st.composite
def capped_departments(draw: st.DrawFn) -> tuple[World, int]:
    """One node of `capacity` slots; a department with a borrowingLimit and two teams
    splitting its guarantee; the borrowing team ran one-slot jobs under a profile that lends
    every guarantee until nothing changed, so it holds as much of the lending team's
    guarantee and of what the department may borrow as it wanted (one-slot jobs: whatever
    it borrowed, it can give back job by job). Returns the world and the lending team's
    unused guarantee (≥ 1)."""
    lend = draw(st.integers(1, 4))
    own = draw(st.integers(0, 4))
    borrow = draw(st.integers(0, 4))
    slots = lend + own + draw(st.integers(0, 6))
    vcs = (VirtualCluster("dept", min=SLOT.scale(lend + own),
                          borrowing_limit=ResourceLimit.from_resources(SLOT.scale(borrow))),
           VirtualCluster("lender", parent="dept", min=SLOT.scale(lend)),
           VirtualCluster("borrower", parent="dept", min=SLOT.scale(own)))
    jobs = tuple(Job(f"b{i}", (TaskGroup("w", 1, SLOT),), queue="borrower",
                     scheduler_name=SchedulerName.SHOAL, submitted=float(i))
                 for i in range(draw(st.integers(1, 12))))
    world = World((Node("n", SLOT.scale(slots)),), vcs, (), jobs, "lend-only")
    for _ in range(8):
        _, decisions, world = world.step()
        if not decisions.changes_anything():
            break
    return world, lend


@LIMITS
@given(case=capped_departments(), size=st.integers(1, 8))
def test_a_lender_under_a_capped_department_takes_its_guarantee_back(
        case: tuple[World, int], size: int) -> None:
    """Whatever its sibling borrowed, up to the department's borrowingLimit, the lending
    team's gang within its unused guarantee starts in the next reclaim cycle: when the
    department's cap (not room) holds it, reclaim takes back inside the department what the
    cap needs, rather than leave it waiting beside idle slots."""
    world, lend = case
    k = (size - 1) % lend + 1
    job = Job("owed", (TaskGroup("w", k, SLOT),), queue="lender",
              scheduler_name=SchedulerName.SHOAL, submitted=100.0)
    world = world.with_jobs([*world.jobs, job])
    decisions = run_cycle(world.snapshot(), profile("lend-reclaim"))
    placed = [b for b in decisions.binds if b.task.job == job.name]
    assert len(placed) == k, \
        f"{len(placed)} of {k} placed: {decisions.pending_by_job().get(job.name)}; " \
        f"usage {queue_usage(world.jobs)}"
