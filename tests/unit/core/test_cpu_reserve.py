"""The node index's CPU reserve for idle GPUs (gpu-discipline) and its CPU-only bucket."""

from shoal.api import Node, Resources
from shoal.core.nodes import CPU_ONLY, ClusterState

CPU_TASK = Resources.of(cpu=4000)


def cluster() -> ClusterState:
    return ClusterState([Node("a-gpu", Resources.of(cpu=16_000, memory=1000, gpu=4)),
                         Node("b-cpu", Resources.of(cpu=16_000, memory=1000))])


def test_cpu_only_requests_see_free_cpu_less_the_reserve_of_idle_gpus() -> None:
    c = cluster()
    gpu_node = c.by_name["a-gpu"]
    assert gpu_node.fits(Resources.of(cpu=16_000))  # off: all of it
    c.set_cpu_reserve(2000)  # 4 idle GPUs keep 8 CPUs
    assert gpu_node.fits(Resources.of(cpu=8000))
    assert not gpu_node.fits(Resources.of(cpu=8001))
    assert gpu_node.how_many(CPU_TASK) == 2
    assert gpu_node.free_for(CPU_TASK).cpu == 8000 and gpu_node.free().cpu == 16_000
    # A GPU task may use every CPU; a task asking no CPU is not held back either.
    assert gpu_node.fits(Resources.of(cpu=16_000, gpu=1))
    assert gpu_node.how_many(Resources.of(cpu=16_000, gpu=1)) == 1
    assert gpu_node.fits(Resources.of(memory=10))
    # Busy GPUs keep nothing: 2 GPUs taken with 2 CPUs leave 14 CPUs, 2 idle GPUs keep 4.
    c.take(gpu_node, Resources.of(cpu=2000, gpu=2))
    assert gpu_node.how_many(Resources.of(cpu=1000)) == 10
    assert c.by_name["b-cpu"].how_many(CPU_TASK) == 4  # no GPU, nothing kept


def test_the_memo_epoch_moves_whenever_cpu_only_requests_may_see_more() -> None:
    c = cluster()
    gpu_node = c.by_name["a-gpu"]
    c.set_cpu_reserve(2000)
    epoch = c.release_epoch
    c.set_cpu_reserve(3000)  # a larger reserve only hides capacity
    assert c.release_epoch == epoch
    c.take(gpu_node, Resources.of(cpu=6000, gpu=2))  # takes more CPU than its GPUs kept
    assert c.release_epoch == epoch
    c.take(gpu_node, Resources.of(cpu=1000, gpu=1))  # less: CPU-only requests see more
    assert c.release_epoch == epoch + 1
    c.set_cpu_reserve(1000)  # a smaller reserve frees capacity
    assert c.release_epoch == epoch + 2
    before = c.release_epoch
    c.set_cpu_reserve(1000)  # unchanged: nothing moves (every cycle but the first)
    assert c.release_epoch == before


def test_carved_virtual_nodes_follow_the_reserve() -> None:
    c = cluster()
    c.set_cpu_reserve(1000)
    virtual = c.carve("v0", c.by_name["a-gpu"], Resources.of(cpu=4000, gpu=2), {}, "vc")
    assert not virtual.fits(Resources.of(cpu=3000))  # 2 idle GPUs keep 2 of its 4 CPUs
    c.set_cpu_reserve(0)
    assert virtual.fits(Resources.of(cpu=3000))


def test_cpu_only_requests_search_nodes_without_gpus_first() -> None:
    c = cluster()
    pool = c.pool((), lambda n: True)
    gpu_node = c.by_name["a-gpu"]
    c.take(gpu_node, Resources.of(cpu=4000, gpu=4))  # its GPUs full: bucket 0
    assert sorted(level for level, b in pool.buckets.items() if b) == [CPU_ONLY, 0]
    for spread in (False, True):
        assert [n.name for n in pool.candidates(CPU_TASK, spread)] == ["b-cpu", "a-gpu"]
    assert [n.name for n in pool.candidates(Resources.of(gpu=1), False)] == []
    c.give(gpu_node, Resources.of(cpu=4000, gpu=4), (0, 1, 2, 3))
    assert [n.name for n in pool.candidates(Resources.of(gpu=1), False)] == ["a-gpu"]
    assert pool.gpu_slots(1) == 4
