"""`ClosedQueues` (`shoal.scheduler.queue_status`) answers what `closed_queues` answers.

A cycle's opening reads the closed virtual clusters from a memo kept per quota tree layout.
On random trees with random states, as virtual clusters — open or closed, under open or
closed parents — are added and removed and capacity moves, the kept answer equals the one
worked out from the tree each time.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import ROOT_QUEUE, Resources, VirtualCluster
from shoal.api.queue_policy import QueueStatus
from shoal.core import QuotaTree
from shoal.scheduler.queue_status import ClosedQueues, closed_queues

from .strategies import vc_trees

CAPACITY = Resources.of(cpu=64000, memory=262144, gpu=16)
STEPS = st.lists(st.tuples(st.sampled_from(("add", "remove", "capacity", "ask")),
                           st.integers(0, 20), st.booleans()), max_size=12)


@settings(max_examples=60, deadline=None)
@given(vcs=vc_trees(CAPACITY), closed=st.sets(st.integers(0, 5)), steps=STEPS)
def test_kept_closed_queues_are_the_trees(vcs: tuple[VirtualCluster, ...], closed: set[int],
                                          steps: list[tuple[str, int, bool]]) -> None:
    vcs = tuple(replace(vc, state=QueueStatus.CLOSED) if i in closed else vc
                for i, vc in enumerate(vcs))
    tree = QuotaTree(vcs, CAPACITY)
    kept = ClosedQueues()
    added = 0
    for what, pick, shut in steps:
        names = sorted(q.name for q in tree if q.name != ROOT_QUEUE)
        if what == "add":
            added += 1
            parent = names[pick % len(names)] if names and pick % 3 else ROOT_QUEUE
            tree.add(VirtualCluster(f"new-{added}", parent=parent,
                                    state=QueueStatus.CLOSED if shut else QueueStatus.OPEN))
        elif what == "remove":
            leaves = [n for n in names if not tree.get(n).children]
            if leaves:
                tree.remove(leaves[pick % len(leaves)])
        elif what == "capacity":
            tree.set_capacity(CAPACITY.scale(1 + pick % 2))
        assert kept.of(tree) == closed_queues(tree)
