"""A virtual cluster's borrowingLimit and lendingLimit in the quota tree (issue 16): the
ceiling `min + borrowingLimit`, what a lending limit keeps unlent, and their bookkeeping
through the tree's less common changes (a job-scoped VC added and removed, carving)."""

from shoal.api import (
    FixedSizeNode,
    FixedSizeNodes,
    PendingKind,
    ResourceLimit,
    Resources,
    VirtualCluster,
)
from shoal.core.quota import QuotaTree


def gpu(n: int) -> Resources:
    return Resources.of(gpu=n)


def limit(n: int) -> ResourceLimit:
    return ResourceLimit.of({"gpu": n})


def test_borrowing_limit_caps_usage_lent_or_not() -> None:
    t = QuotaTree([VirtualCluster("a", min=gpu(2), borrowing_limit=limit(1))],
                  Resources.of(cpu=8000, gpu=8))
    assert t.headroom("a").gpu == 3 and t.headroom("a", lend=True).gpu == 3
    t.charge("a", gpu(3))
    for lend in (False, True):
        reason = t.check("a", gpu(1), lend)
        assert reason is not None and reason.kind is PendingKind.QUEUE_LIMIT
        assert reason.queue == "a" and "borrowingLimit gpu=1" in reason.message
    assert t.over_ceiling("a", gpu(1)) and not t.over_ceiling("default", gpu(5))
    assert t.check("a", Resources.of(cpu=1000)) is None  # a dimension it does not cap


def test_lending_limit_keeps_the_rest_of_what_is_owed() -> None:
    # root (8) ─ d (min 6) ─ t (min 6, lends at most 2); b borrows.
    t = QuotaTree([VirtualCluster("d", min=gpu(6)),
                   VirtualCluster("t", parent="d", min=gpu(6), lending_limit=limit(2)),
                   VirtualCluster("b")], gpu(8))
    assert t.get("t").unlent == gpu(4) and t.get("d").unlent == gpu(4)  # kept up the tree
    assert t.headroom("b") == gpu(2) and t.headroom("b", lend=True) == gpu(4)
    t.charge("t", gpu(5))  # owed 1 now, all of it lendable
    assert t.get("t").unlent == Resources() and t.headroom("b", lend=True) == gpu(3)
    t.refund("t", gpu(5))
    reason = t.check("b", gpu(5), lend=True)
    assert reason is not None and reason.kind is PendingKind.GUARANTEE
    assert "kept unlent by the lendingLimit of 'd'" in reason.message


def test_added_and_removed_virtual_clusters_keep_the_sums_exact() -> None:
    t = QuotaTree([VirtualCluster("d", min=gpu(6))], gpu(8))
    t.add(VirtualCluster("job-vc", parent="d", min=gpu(4), lending_limit=limit(1)))
    assert t.get("d").children_unlent == gpu(3) and t.get("d").unlent == gpu(3)
    assert t.headroom("default", lend=True) == gpu(5)
    t.remove("job-vc")
    assert t.get("d").children_unlent == Resources() and t.get("d").unlent == Resources()
    assert t.headroom("default", lend=True) == gpu(8)


def test_borrowing_limit_counts_carved_fixed_size_nodes_as_guaranteed() -> None:
    fixed = (FixedSizeNodes((FixedSizeNode(gpu(2)),)),)
    vc = VirtualCluster("a", min=gpu(1), fixed_size_nodes=fixed, borrowing_limit=limit(1))
    t = QuotaTree([vc], gpu(8))
    assert t.headroom("a") == gpu(4)  # 1 + 2 guaranteed, 1 borrowed
    t.carve("a", gpu(2))  # its fixed node leaves the tree: 1 flexible + 1 borrowed
    assert t.headroom("a") == gpu(2)
    reason = t.never_fits("a", gpu(5))
    assert reason is not None and "borrowingLimit gpu=1" in reason.message
    assert t.never_fits("a", gpu(4)) is None


def test_adding_or_removing_a_virtual_cluster_invalidates_cached_answers() -> None:
    t = QuotaTree([], gpu(8))
    assert t.check("default", gpu(6), lend=True) is None  # cached
    t.add(VirtualCluster("job-vc", min=gpu(4), lending_limit=limit(1)))
    assert t.check("default", gpu(6), lend=True) is not None  # 3 of the 8 kept unlent
    t.remove("job-vc")
    assert t.check("default", gpu(6), lend=True) is None
