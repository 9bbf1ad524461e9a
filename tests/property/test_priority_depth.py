"""`QuotaTree.priority_depth`, kept per layout, is what working it out afresh gives.

Random trees of virtual clusters, some with priorities, then random additions (job-scoped
virtual clusters, with or without a priority, under any existing one) and removals of
leaves that hold nothing: after each change the kept answer is compared with the plain one
over every virtual cluster — the deepest depth where any has a priority, else 0 — and with
`QueuePriorities.of`'s key for every virtual cluster built that way.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Resources, VirtualCluster
from shoal.core import QuotaTree
from shoal.scheduler.queue_status import QueuePriorities

CAPACITY = Resources.of(cpu=64000, memory=262144, gpu=16)

steps = st.lists(st.tuples(st.booleans(), st.integers(0, 20), st.integers(0, 2)),
                 max_size=12)
"""(add?, which virtual cluster (parent, or leaf to remove), priority)."""


def plain(tree: QuotaTree) -> int:
    return max(q.depth for q in tree) if any(q.priority for q in tree) else 0


@settings(max_examples=40, deadline=None)
@given(first=st.lists(st.integers(0, 2), max_size=4), changes=steps)
def test_kept_priority_depth_is_the_plain_one(first: list[int],
                                              changes: list[tuple[bool, int, int]]) -> None:
    tree = QuotaTree([VirtualCluster(f"vc-{i}", priority=p) for i, p in enumerate(first)],
                     CAPACITY)
    made = 0
    assert tree.priority_depth() == plain(tree)
    for add, pick, priority in changes:
        names = sorted(q.name for q in tree if q.parent is not None)
        if add or not names:
            parents = sorted(q.name for q in tree)
            made += 1
            tree.add(VirtualCluster(f"job-{made}", parent=parents[pick % len(parents)],
                                    priority=priority))
        else:
            leaves = [n for n in names if not tree.get(n).children]
            tree.remove(leaves[pick % len(leaves)])
        kept = tree.priority_depth()
        assert kept == plain(tree)
        fresh = QueuePriorities(plain(tree))
        priorities = QueuePriorities.of(tree)
        assert priorities == fresh
        for queue in tree:
            assert priorities.key(queue) == fresh.key(queue)
