"""The node index: GPU buckets, search order, GPU index assignment, fit bounds."""

from shoal.api import Node, Resources
from shoal.core.nodes import ClusterState, FitMemo


def cluster() -> ClusterState:
    return ClusterState([Node(f"n{i}", Resources.of(cpu=8000, memory=1000, gpu=8))
                         for i in range(3)])


def test_take_assigns_lowest_free_gpus_and_moves_buckets() -> None:
    c = cluster()
    pool = c.pool((), lambda n: True)
    n0 = c.by_name["n0"]
    assert c.take(n0, Resources.of(gpu=3)) == (0, 1, 2)
    assert c.take(n0, Resources.of(gpu=2)) == (3, 4)
    assert sorted(level for level, b in pool.buckets.items() if b) == [3, 8]
    c.give(n0, Resources.of(gpu=3), (0, 1, 2))
    assert c.take(n0, Resources.of(gpu=1)) == (0,)


def test_binpack_searches_fullest_first_spread_emptiest() -> None:
    c = cluster()
    pool = c.pool((), lambda n: True)
    c.take(c.by_name["n1"], Resources.of(gpu=4))
    req = Resources.of(gpu=2)
    assert next(pool.candidates(req, spread=False)).name == "n1"
    assert next(pool.candidates(req, spread=True)).name == "n0"


def test_gpu_slots_and_how_many() -> None:
    c = cluster()
    pool = c.pool((), lambda n: True)
    assert pool.gpu_slots(3) == 6  # floor(8/3) per node
    assert c.by_name["n0"].how_many(Resources.of(cpu=4000, gpu=1)) == 2  # cpu binds


def test_pools_filter_nodes() -> None:
    c = ClusterState([Node("a", Resources.of(gpu=1), {"gpu-type": "A100"}),
                      Node("b", Resources.of(gpu=1), {"gpu-type": "V100"}),
                      Node("c", Resources.of(gpu=1), schedulable=False)])
    pool = c.pool("a100", lambda n: n.labels.get("gpu-type") == "A100")
    assert [s.name for s in pool.nodes] == ["a"]
    assert [s.name for s in c.pool("all", lambda n: True).nodes] == ["a", "b"]


def test_fit_memo_expires_when_capacity_is_released() -> None:
    c = cluster()
    pool = c.pool((), lambda n: True)
    memo = FitMemo(c)
    req = Resources.of(gpu=8)
    memo.record(pool, req, 1)
    assert memo.bound(pool, req) == 1
    memo.consumed(pool, req, 1)
    assert memo.bound(pool, req) == 0
    n0 = c.by_name["n0"]
    gpus = c.take(n0, req)
    assert memo.bound(pool, req) == 0  # taking keeps bounds valid
    c.give(n0, req, gpus, undo=True)
    assert memo.bound(pool, req) == 0  # undoing a tentative take frees nothing new
    c.take(n0, req)
    c.give(n0, req, gpus)
    assert memo.bound(pool, req) is None  # a real release invalidates
