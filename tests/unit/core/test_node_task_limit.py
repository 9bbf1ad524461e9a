"""A node's task limit (`capacity.pods`): every task counts one, whatever it requests."""

from shoal.api import Node, Resources
from shoal.api.resources import PODS
from shoal.core.nodes import ClusterState

CPU = Resources.of(cpu=1000)
NOTHING = Resources()


def limited(pods: int, cpu: int = 8000) -> ClusterState:
    return ClusterState([Node("n", Resources.of(cpu=cpu, memory=1000, extras={PODS: pods}))])


def test_a_node_at_its_task_limit_takes_no_more_tasks() -> None:
    c = limited(2)
    n = c.by_name["n"]
    assert n.fits(CPU) and n.task_slots() == 2
    c.take(n, CPU)
    c.take(n, NOTHING)  # a best-effort task counts as much as any other
    assert n.task_slots() == 0
    assert not n.fits(CPU) and not n.fits(NOTHING)
    assert n.cpu == 7000  # its resources are not what stops it


def test_give_frees_the_slot_and_moves_the_release_epoch() -> None:
    c = limited(1)
    n = c.by_name["n"]
    c.take(n, NOTHING)
    epoch = c.release_epoch
    c.give(n, NOTHING, ())
    assert n.fits(NOTHING) and n.task_slots() == 1
    assert c.release_epoch == epoch + 1


def test_a_node_without_a_limit_takes_any_number_of_tasks() -> None:
    c = ClusterState([Node("n", Resources.of(cpu=8000))])
    n = c.by_name["n"]
    assert not n.pod_limited and n.task_slots() is None
    for _ in range(1000):
        c.take(n, NOTHING)
    assert n.fits(NOTHING) and n.fits(CPU)
    assert n.how_many(CPU) == 8  # no slot count in the bound


def test_how_many_counts_the_slots_left() -> None:
    c = limited(3)
    n = c.by_name["n"]
    assert n.how_many(CPU) == 3  # 8 by CPU, 3 by task limit
    assert n.how_many(NOTHING) == 3
    c.take(n, CPU)
    assert n.how_many(Resources.of(cpu=4000)) == 1  # CPU binds now: 7000 // 4000
    assert n.how_many(CPU) == 2


def test_free_and_used_show_the_slots() -> None:
    c = limited(4)
    n = c.by_name["n"]
    c.take(n, CPU)
    assert n.free().get(PODS) == 3
    assert n.used().get(PODS) == 1 and n.used().cpu == 1000


def test_tasks_over_a_lowered_limit_leave_no_slot_and_no_negative_free() -> None:
    c = limited(1)
    n = c.by_name["n"]
    c.take(n, CPU)
    c.take(n, CPU)  # already running when the limit was lowered
    assert n.task_slots() == 0 and not n.fits(NOTHING)
    assert n.free().get(PODS) == 0
    c.give(n, CPU, ())
    assert not n.fits(NOTHING)  # still at its limit
    c.give(n, CPU, ())
    assert n.fits(NOTHING)


def test_a_virtual_nodes_tasks_count_against_its_physical_node() -> None:
    c = limited(2)
    host = c.by_name["n"]
    virtual = c.carve("vc/n", host, Resources.of(cpu=4000), {}, "vc")
    assert host.task_slots() == 2  # carving takes resources, not task slots
    assert virtual.task_slots() == 2
    c.take(virtual, CPU)
    c.take(host, CPU)
    assert host.task_slots() == 0 and virtual.task_slots() == 0
    assert not virtual.fits(CPU) and virtual.how_many(CPU) == 0
    c.give(virtual, CPU, ())
    assert host.fits(CPU) and virtual.fits(CPU)
    c.give(host, CPU, ())
    c.uncarve(virtual)
    assert host.task_slots() == 2 and host.cpu == 8000
