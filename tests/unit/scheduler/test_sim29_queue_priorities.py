"""`QueuePriorities.of` hands out one shared value per depth: equal to the one it built each
cycle before, and following the tree when its depth moves."""

from shoal.api import Resources, VirtualCluster
from shoal.core.quota import QuotaTree
from shoal.scheduler.queue_status import QueuePriorities


def test_one_value_per_depth_following_the_tree() -> None:
    flat = QuotaTree([VirtualCluster("a"), VirtualCluster("b")], Resources.of(gpu=8))
    deep = QuotaTree([VirtualCluster("a", priority=2), VirtualCluster("a1", parent="a",
                                                                       priority=1)],
                     Resources.of(gpu=8))
    for tree in (flat, deep):
        first = QueuePriorities.of(tree)
        assert first == QueuePriorities(tree.priority_depth())
        assert QueuePriorities.of(tree) is first
    assert QueuePriorities.of(deep).depth == deep.priority_depth() != flat.priority_depth()
    assert QueuePriorities.of(deep).key(deep.get("a1")) == (-2, -1)
