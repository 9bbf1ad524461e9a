"""Nodes, virtual clusters, priority classes, users and bearer tokens."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import select

from shoal.api import (
    BUILTIN_PRIORITY_CLASSES,
    FixedSizeNode,
    FixedSizeNodes,
    Node,
    PlacementPolicy,
    PriorityClass,
    QueueingPolicy,
    Reserve,
    ResourceLimit,
    Resources,
    VirtualCluster,
    VirtualNodePlacement,
)
from shoal.api.flavors import (
    FlavorFungibility,
    FlavorQuota,
    ResourceFlavor,
    WhenCanBorrow,
    WhenCanPreempt,
)
from shoal.api.queue_policy import (
    BorrowPolicy,
    BorrowWithinParent,
    PreemptionPolicy,
    QueuePreemption,
    QueueStatus,
    ReclaimWithinParent,
    WithinQueue,
)
from shoal.store import AlreadyExistsError, NotFoundError, Repository, User, hash_token
from shoal.store.models import TokenRow


def test_nodes_round_trip_and_update(repo: Repository) -> None:
    a = Node("a", Resources.of(cpu=64000, memory=512 * 1024, gpu=8, extras={"rdma/hca": 2}),
             labels={"gpu-type": "a100"}, allocatable=Resources.of(cpu=60000, gpu=8))
    b = Node("b", Resources.of(cpu=8000, memory=1024), schedulable=False)
    repo.put_node(b)
    repo.put_node(a)
    assert repo.list_nodes() == [a, b]
    a2 = Node("a", Resources.of(gpu=4), labels={"gpu-type": "v100"})
    repo.put_node(a2)
    assert repo.list_nodes() == [a2, b]


def test_virtual_clusters_round_trip(repo: Repository) -> None:
    vcs = [VirtualCluster("prod", min=Resources.of(gpu=8), max=ResourceLimit.of({"gpu": 16}),
                          weight=3, queueing=QueueingPolicy.FIFO),
           VirtualCluster("research", parent="prod"),
           VirtualCluster("zero", max=ResourceLimit.of({"gpu": 0, "cpu": 0}))]
    for vc in vcs:
        repo.put_virtual_cluster(vc)
    assert repo.list_virtual_clusters() == vcs
    assert repo.list_virtual_clusters()[1].max.is_unlimited()
    assert repo.list_virtual_clusters()[2].max.get("gpu") == 0


def test_fixed_size_nodes_round_trip(repo: Repository) -> None:
    groups = (FixedSizeNodes((FixedSizeNode(Resources.of(gpu=4), {"bundle_index": "0"}),
                              FixedSizeNode(Resources.of(gpu=1, cpu=500)))),
              FixedSizeNodes((FixedSizeNode(Resources.of(memory=1024)),),
                             PlacementPolicy.STRICT_SPREAD))
    vc = VirtualCluster("pg", min=Resources.of(cpu=1000), fixed_size_nodes=groups)
    repo.put_virtual_cluster(vc)
    assert repo.list_virtual_clusters() == [vc]


def test_carvings_are_recorded_and_kept_while_the_fixed_size_nodes_stay(
        repo: Repository) -> None:
    groups = (FixedSizeNodes((FixedSizeNode(Resources.of(gpu=2)),
                              FixedSizeNode(Resources.of(gpu=1)))),)
    vc = VirtualCluster("pg", fixed_size_nodes=groups)
    repo.put_virtual_cluster(vc)
    carving = (VirtualNodePlacement("n1", (0, 1)), VirtualNodePlacement("n2", (3,)))
    repo.record_reservations([Reserve("pg", carving), Reserve("gone", carving)])
    assert repo.list_virtual_clusters() == [replace(vc, reservation=carving)]
    repo.put_virtual_cluster(replace(vc, weight=2))  # same fixed-size nodes: kept
    assert repo.list_virtual_clusters()[0].reservation == carving
    repo.put_virtual_cluster(replace(vc, fixed_size_nodes=groups[:0]))  # changed: dropped
    assert repo.list_virtual_clusters()[0].reservation is None
    repo.record_reservations([Reserve("pg", None, "node lost")])
    assert repo.list_virtual_clusters()[0].reservation is None


def test_virtual_clusters_are_listed_in_creation_order(repo: Repository) -> None:
    """The order queued reservations are carved in (FIFO), whatever the names."""
    for name in ("zeta", "alpha", "mid"):
        repo.put_virtual_cluster(VirtualCluster(name))
    repo.put_virtual_cluster(VirtualCluster("zeta", weight=5))  # replacing keeps its place
    assert [vc.name for vc in repo.list_virtual_clusters()] == ["zeta", "alpha", "mid"]


def test_priority_classes_round_trip(repo: Repository) -> None:
    for pc in BUILTIN_PRIORITY_CLASSES:
        repo.put_priority_class(pc)
    assert repo.list_priority_classes() == list(BUILTIN_PRIORITY_CLASSES)
    repo.put_priority_class(PriorityClass("normal", 500, "redefined"))
    assert PriorityClass("normal", 500, "redefined") in repo.list_priority_classes()


def test_users_and_tokens(repo: Repository) -> None:
    alice = repo.create_user("alice", queues=["vc-a", "vc-b"])
    root = repo.create_user("root", admin=True)
    assert alice == User("alice", False, ("vc-a", "vc-b"))
    with pytest.raises(AlreadyExistsError):
        repo.create_user("alice")
    token = repo.issue_token("alice")
    other = repo.issue_token("root")
    assert token != other and len(token) >= 32
    assert repo.authenticate(token) == alice
    assert repo.authenticate(other) == root
    assert repo.authenticate(token + "x") is None
    assert repo.authenticate("") is None
    with repo.store.sessions.begin() as s:
        rows = list(s.scalars(select(TokenRow)))
        stored = {r.token_hash for r in rows}
        assert all(r.last_used is not None for r in rows)
    assert stored == {hash_token(token), hash_token(other)}
    assert token not in stored and all(token not in h for h in stored)
    assert repo.revoke_token(token)
    assert repo.authenticate(token) is None
    with pytest.raises(NotFoundError):
        repo.issue_token("nobody")
    assert repo.get_user("root") == root


def test_queue_fields_round_trip(repo: Repository) -> None:
    """Issue 16's queue fields: state, priority, preemption policies, limits; a cluster with
    the defaults stores none of them and reads them back as the defaults."""
    policies = VirtualCluster(
        "team", min=Resources.of(gpu=8), state=QueueStatus.CLOSED, priority=-5,
        preemption=QueuePreemption(WithinQueue.LOWER_OR_NEWER_EQUAL_PRIORITY,
                                   ReclaimWithinParent.LOWER_PRIORITY,
                                   BorrowWithinParent(BorrowPolicy.LOWER_PRIORITY, 100)),
        borrowing_limit=ResourceLimit.of({"gpu": 4}), lending_limit=ResourceLimit.of({"gpu": 2}))
    plain = VirtualCluster("plain")
    repo.put_virtual_cluster(policies)
    repo.put_virtual_cluster(plain)
    assert repo.list_virtual_clusters() == [policies, plain]
    repo.put_virtual_cluster(replace(policies, state=QueueStatus.OPEN))
    assert repo.list_virtual_clusters()[0].state is QueueStatus.OPEN
    never = PriorityClass("batch", 5, preemption_policy=PreemptionPolicy.NEVER)
    repo.put_priority_class(never)
    assert never in repo.list_priority_classes()


def test_resource_flavors_round_trip(repo: Repository) -> None:
    """Issue 16's resource flavors: their own table; a virtual cluster's quota per flavor
    and fungibility in its queue policy, read back as written."""
    a100 = ResourceFlavor("a100", {"gpu-type": "a100"})
    anywhere = ResourceFlavor("anywhere")
    repo.put_resource_flavor(a100)
    repo.put_resource_flavor(anywhere)
    assert repo.list_resource_flavors() == [a100, anywhere]
    repo.put_resource_flavor(ResourceFlavor("a100", {"gpu-type": "A100"}))
    assert repo.list_resource_flavors()[0].node_labels == {"gpu-type": "A100"}
    team = VirtualCluster(
        "team", flavors=(FlavorQuota("a100", Resources.of(gpu=8), ResourceLimit.of({"gpu": 16})),
                         FlavorQuota("anywhere")),
        flavor_fungibility=FlavorFungibility(WhenCanBorrow.TRY_NEXT_FLAVOR,
                                             WhenCanPreempt.PREEMPT))
    repo.put_virtual_cluster(team)
    assert repo.list_virtual_clusters() == [team]


def test_a_queue_policy_written_before_flavors_reads_without_them() -> None:
    from shoal.store.convert import queue_policy_from_json, queue_policy_to_json

    stored = queue_policy_to_json(VirtualCluster("team", borrowing_limit=ResourceLimit.of(
        {"gpu": 4})))
    assert stored is not None and "flavors" not in stored
    read = VirtualCluster("team", **queue_policy_from_json(stored))
    assert read.flavors == () and read.flavor_fungibility == FlavorFungibility()
