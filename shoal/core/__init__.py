"""Shoal's pure scheduling data structures: the snapshot a cycle reads, the node index and
quota tree it works on, and the statement that makes its changes all-or-nothing. No I/O, no
clock, no threads."""

from shoal.core.nodes import ClusterState, NodePool, NodeState
from shoal.core.quota import QueueState, QuotaTree
from shoal.core.snapshot import Snapshot, SnapshotError
from shoal.core.statement import Allocation, Eviction, Statement

__all__ = ["Allocation", "ClusterState", "Eviction", "NodePool", "NodeState", "QueueState",
           "QuotaTree", "Snapshot", "SnapshotError", "Statement"]
