"""The quota tree against its own docstring: random charge/refund sequences on random VC trees,
with every derived quantity recomputed from scratch after every operation."""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import example, given, settings
from hypothesis import strategies as st

from shoal.api import DEFAULT_QUEUE, ROOT_QUEUE, ResourceLimit, Resources, VirtualCluster
from shoal.api.resources import total
from shoal.core import QuotaTree

from .oracles import QuotaOracle
from .strategies import vc_trees

EXTRA = "rdma"

capacities = st.builds(
    Resources.of, cpu=st.integers(0, 64000), memory=st.integers(0, 262144),
    gpu=st.integers(0, 16),
    extras=st.dictionaries(st.just(EXTRA), st.integers(0, 4)))

charges = st.builds(
    Resources.of, cpu=st.sampled_from([0, 1, 500, 4000, 16000]),
    memory=st.sampled_from([0, 1, 1024, 65536]), gpu=st.integers(0, 4),
    extras=st.dictionaries(st.just(EXTRA), st.integers(0, 2)))

operations = st.lists(
    st.tuples(st.integers(0, 10), charges, st.booleans(), st.integers(0, 30)), max_size=30)
"""(queue pick, request, refund?, which outstanding charge to refund)."""


@st.composite
def trees(draw: st.DrawFn) -> tuple[Resources, tuple[VirtualCluster, ...]]:
    capacity = draw(capacities)
    return capacity, draw(vc_trees(capacity, limits=True))


def _replay(case: tuple[Resources, tuple[VirtualCluster, ...]],
            ops: list[tuple[int, Resources, bool, int]]
            ) -> Iterator[tuple[QuotaTree, QuotaOracle]]:
    """Apply the operations to a fresh tree; yield it with its brute-force oracle before the
    first operation and after each one. A refund gives back one outstanding charge of the
    same VC (or charges, when there is none)."""
    capacity, vcs = case
    tree = QuotaTree(vcs, capacity)
    queues = sorted([vc.name for vc in vcs] + [DEFAULT_QUEUE])
    charged: dict[str, list[Resources]] = {}
    yield tree, QuotaOracle(vcs, capacity, {})
    for pick, request, refund, which in ops:
        queue = queues[pick % len(queues)]
        outstanding = charged.setdefault(queue, [])
        if refund and outstanding:
            tree.refund(queue, outstanding.pop(which % len(outstanding)))
        else:
            tree.charge(queue, request)
            outstanding.append(request)
        yield tree, QuotaOracle(vcs, capacity, {q: total(rs) for q, rs in charged.items()})


@settings(max_examples=150, deadline=None)
@given(case=trees(), ops=operations)
def test_quota_tree_bookkeeping_matches_its_definition(
        case: tuple[Resources, tuple[VirtualCluster, ...]],
        ops: list[tuple[int, Resources, bool, int]]) -> None:
    """After every charge or refund, for every VC: its usage equals Σ charges to its
    subtree; its kept `reserved` equals the docstring's recursive definition
    max(min − usage, Σ children's reserved, 0) recomputed from scratch; its kept
    `children_reserved` equals Σ of its children's `reserved` (the incremental sum the
    borrowing rule subtracts; `children_idle` before commit e380a93); its kept `unlent` and
    `children_unlent` likewise match `shoal.core.quota_limits`' definition (lending limits);
    and `headroom`, lent or not, equals the docstring's top-down definition computed by
    brute force (borrowing limits included)."""
    for tree, oracle in _replay(case, ops):
        for queue in tree:
            assert queue.usage == oracle.usage[queue.name], queue.name
            recomputed = total(child.reserved for child in queue.children)
            assert queue.children_reserved == recomputed, \
                f"{queue.name}: children_reserved {queue.children_reserved}, Σ children's " \
                f"reserved {recomputed}"
            recomputed = total(child.unlent for child in queue.children)
            assert queue.children_unlent == recomputed, \
                f"{queue.name}: children_unlent {queue.children_unlent}, Σ children's " \
                f"unlent {recomputed}"
            if queue.name != ROOT_QUEUE:
                expected_reserved = oracle.reserved_vector(queue.name)
                assert {d: queue.reserved.get(d) for d in oracle.dims} == expected_reserved, \
                    f"reserved({queue.name}) = {queue.reserved}, docstring gives " \
                    f"{expected_reserved}"
                expected_unlent = oracle.unlent_vector(queue.name)
                assert {d: queue.unlent.get(d) for d in oracle.dims} == expected_unlent, \
                    f"unlent({queue.name}) = {queue.unlent}, quota_limits gives " \
                    f"{expected_unlent}"
            for lend in (False, True):
                room = tree.headroom(queue.name, lend)
                expected = oracle.headroom(queue.name, lend)
                assert {d: room.get(d) for d in oracle.dims} == expected, \
                    f"headroom({queue.name}, lend={lend}) = {room}, the docstring gives " \
                    f"{expected}"
                assert room.dimensions() <= set(oracle.dims)


@settings(max_examples=150, deadline=None)
@given(case=trees(), ops=operations, probe=charges, lend=st.booleans())
@example(  # a VC already above its GPU max (max lowered, say) asks for CPU only: see report
    case=(Resources.of(cpu=4000, gpu=4),
          (VirtualCluster("vc", max=ResourceLimit.of({"gpu": 1})),)),
    ops=[(1, Resources.of(gpu=2), False, 0)], probe=Resources.of(cpu=1000), lend=False)
@example(  # the same above its borrowing limit
    case=(Resources.of(cpu=4000, gpu=4),
          (VirtualCluster("vc", borrowing_limit=ResourceLimit.of({"gpu": 1})),)),
    ops=[(1, Resources.of(gpu=2), False, 0)], probe=Resources.of(cpu=1000), lend=True)
def test_check_admits_exactly_what_fits_the_headroom(
        case: tuple[Resources, tuple[VirtualCluster, ...]],
        ops: list[tuple[int, Resources, bool, int]], probe: Resources, lend: bool) -> None:
    """`check(name, r, lend)` is None (the capacity plugin allows the allocation) exactly
    when `r` fits `headroom(name, lend)` as the docstring defines it — asked twice, so the
    second answer comes from the check cache."""
    for tree, oracle in _replay(case, ops):
        for queue in tree:
            if queue.name == ROOT_QUEUE:
                continue
            expected = oracle.admits(queue.name, probe, lend)
            for _ in range(2):
                reason = tree.check(queue.name, probe, lend)
                assert (reason is None) is expected, \
                    f"check({queue.name}, {probe}) = {reason}; headroom " \
                    f"{oracle.headroom(queue.name, lend)}, usage {oracle.usage[queue.name]}"


@settings(max_examples=60, deadline=None)
@given(case=trees(), ops=operations, probe=charges, lend=st.booleans(), pick=st.integers(0, 10))
def test_a_refund_for_a_while_answers_as_a_refund_and_leaves_every_answer_as_it_was(
        case: tuple[Resources, tuple[VirtualCluster, ...]],
        ops: list[tuple[int, Resources, bool, int]], probe: Resources, lend: bool,
        pick: int) -> None:
    """Within `refunded(name, r)` checks answer as after `refund(name, r)`; after it, the
    answers cached before still answer rightly, and so do those after the next charge (no
    answer cached within is read again)."""
    capacity, vcs = case
    *_, (tree, oracle) = _replay(case, ops)
    names = sorted(q.name for q in tree if q.name != ROOT_QUEUE)
    name = names[pick % len(names)]
    held = oracle.charged.get(name, Resources())  # its own charges, not its children's
    before = {q: tree.check(q, probe, lend) for q in names}
    with tree.refunded(name, held):
        inside = QuotaOracle(vcs, capacity, {**oracle.charged, name: Resources()})
        for queue in names:
            assert (tree.check(queue, probe, lend) is None) is inside.admits(queue, probe, lend)
    assert {q: tree.check(q, probe, lend) for q in names} == before
    for queue in names:
        assert (before[queue] is None) is oracle.admits(queue, probe, lend)
    tree.charge(name, probe)
    after = QuotaOracle(vcs, capacity, {**oracle.charged, name: held + probe})
    for queue in names:
        assert (tree.check(queue, probe, lend) is None) is after.admits(queue, probe, lend)
