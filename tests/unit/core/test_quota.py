"""The quota tree: headroom, guarantees, borrowing, max ceilings and their reasons."""

from shoal.api import PendingKind, ResourceLimit, Resources, VirtualCluster
from shoal.core.quota import QuotaTree


def gpu(n: int) -> Resources:
    return Resources.of(gpu=n)


def tree() -> QuotaTree:
    # root (16 GPUs) ─ a (min 8, max 12) ─ a1 (min 4)
    #                └ b (min 4)
    return QuotaTree([
        VirtualCluster("a", min=gpu(8), max=ResourceLimit.of({"gpu": 12})),
        VirtualCluster("a1", parent="a", min=gpu(4)),
        VirtualCluster("b", min=gpu(4)),
    ], gpu(16))


def test_default_queue_is_implicit() -> None:
    t = tree()
    assert t.get("default").parent is t.root
    assert t.get("default").min == Resources()


def test_usage_is_pushed_up_the_tree() -> None:
    t = tree()
    t.charge("a1", gpu(3))
    assert t.get("a1").usage == gpu(3)
    assert t.get("a").usage == gpu(3)
    assert t.root.usage == gpu(3)
    t.refund("a1", gpu(3))
    assert t.root.usage == Resources()


def test_headroom_keeps_sibling_guarantees() -> None:
    t = tree()
    # default may borrow everything except a's 8 and b's 4 unused GPUs.
    assert t.headroom("default").gpu == 4
    # a may use up to its max (12) minus nothing: b's 4 stay reserved.
    assert t.headroom("a").gpu == 12
    # b: 16 - a's idle 8 = 8
    assert t.headroom("b").gpu == 8


def test_borrowing_reduces_idle_and_reason_names_guarantee() -> None:
    t = tree()
    t.charge("default", gpu(4))
    reason = t.check("default", gpu(1))
    assert reason is not None and reason.kind is PendingKind.GUARANTEE
    assert "'a'" in reason.message and "'b'" in reason.message
    assert t.headroom("a").gpu == 8  # a's guarantee is intact
    assert t.check("a1", gpu(4)) is None and t.check("a", gpu(4)) is None


def test_a_job_in_a_parent_leaves_its_childrens_guarantees_alone() -> None:
    # A job placed in `a` itself is outside `a1`: of a's room (12, its max), a1's unused
    # min (4) is kept, lent or not; once a1 uses it, nothing is kept from `a`.
    t = tree()
    assert t.check("a", gpu(8)) is None
    reason = t.check("a", gpu(9))
    assert reason is not None and reason.kind is PendingKind.GUARANTEE
    assert reason.queue == "a" and "'a1'" in reason.message
    assert t.check("a", gpu(9), lend=True) is None  # a1 has no lendingLimit: all lent
    t.charge("a1", gpu(4))
    assert t.check("a", gpu(8)) is None
    assert t.check("a", gpu(9)) is not None  # a's max 12, a1 uses 4


def test_max_is_a_ceiling_on_the_subtree() -> None:
    t = tree()
    t.charge("a1", gpu(10))
    reason = t.check("a", gpu(3))
    assert reason is not None and reason.kind is PendingKind.QUEUE_LIMIT
    assert reason.queue == "a" and reason.resource == "gpu"


def test_cluster_full_is_insufficient_resources() -> None:
    t = QuotaTree([], gpu(4))
    t.charge("default", gpu(4))
    reason = t.check("default", gpu(1))
    assert reason is not None and reason.kind is PendingKind.INSUFFICIENT_RESOURCES


def test_never_fits() -> None:
    t = tree()
    assert t.never_fits("a", gpu(13)) is not None
    assert t.never_fits("b", gpu(17)) is not None
    assert t.never_fits("b", gpu(16)) is None


def test_check_cache_is_invalidated_by_usage_changes() -> None:
    t = tree()
    assert t.check("b", gpu(8)) is None
    t.charge("default", gpu(4))
    assert t.check("b", gpu(8)) is not None
    t.refund("default", gpu(4))
    assert t.check("b", gpu(8)) is None


def test_a_child_borrowing_inside_its_parents_min_keeps_its_siblings_min_owed() -> None:
    # root (4) ─ team (min 2) ─ team-t (min 2)
    #                         └ team-s (min 0)
    # team-s runs 2 inside team's min; team-t's 2 are still owed, so `default` may not
    # take the other 2 (found by tests/property/test_guarantees.py).
    t = QuotaTree([VirtualCluster("team", min=gpu(2)),
                   VirtualCluster("team-t", parent="team", min=gpu(2)),
                   VirtualCluster("team-s", parent="team")], gpu(4))
    assert t.check("team-s", gpu(2)) is None
    t.charge("team-s", gpu(2))
    assert t.get("team").reserved == gpu(2)  # its own min is used, its child's is not
    reason = t.check("default", gpu(1))
    assert reason is not None and reason.kind is PendingKind.GUARANTEE
    assert t.check("team-t", gpu(2)) is None


def test_fixed_size_nodes_are_guaranteed_and_raise_the_ceiling() -> None:
    from shoal.api import FixedSizeNode, FixedSizeNodes

    fixed = FixedSizeNodes((FixedSizeNode(gpu(2)), FixedSizeNode(gpu(2))))
    t = QuotaTree([VirtualCluster("pg", min=gpu(1), max=ResourceLimit.of({"gpu": 1}),
                                  fixed_size_nodes=(fixed,))], gpu(16))
    assert t.get("pg").min == gpu(5)  # flexible 1 + fixed 4
    assert t.headroom("default").gpu == 11  # pg's 5 stay reserved
    assert t.headroom("pg").gpu == 5  # flexible max 1 + fixed 4
