"""Per-user quotas (issue 17, `shoal.core.user_quota`): counted per limited virtual cluster
on a task's path, checked from the root down, with reasons naming the user and the limit."""

from __future__ import annotations

from shoal.api import PendingKind, ResourceLimit, Resources, VirtualCluster
from shoal.core.usage import NO_USER
from shoal.core.user_quota import UserQuota

GPU = Resources.of(gpu=1)
QUOTA_VCS = (VirtualCluster("org", max_per_user=ResourceLimit.of({"gpu": 6})),
             VirtualCluster("team", "org", max_per_user=ResourceLimit.of({"gpu": 4})),
             VirtualCluster("free", "org"))
TEAM = ["root", "org", "team"]
FREE = ["root", "org", "free"]


def test_only_limited_clusters_count_and_a_parent_sums_its_children() -> None:
    quota = UserQuota(QUOTA_VCS)
    assert bool(quota) and not UserQuota([VirtualCluster("x")])
    quota.hold(TEAM, "alice", GPU.scale(3), +1)
    quota.hold(FREE, "alice", GPU.scale(2), +1)
    assert quota.used("team", "alice") == GPU.scale(3)
    assert quota.used("org", "alice") == GPU.scale(5)
    assert ("free", "alice") not in quota.held
    quota.hold(TEAM, "alice", GPU.scale(3), -1)
    assert ("team", "alice") not in quota.held  # nothing held: no entry
    assert quota.used("org", "alice") == GPU.scale(2)


def test_the_first_limit_from_the_root_down_refuses() -> None:
    quota = UserQuota(QUOTA_VCS)
    quota.hold(FREE, "alice", GPU.scale(4), +1)
    assert quota.check(FREE, "alice", GPU.scale(2)) is None
    reason = quota.check(TEAM, "alice", GPU.scale(3))
    assert reason is not None and reason.kind is PendingKind.QUEUE_LIMIT
    assert reason.queue == "org" and reason.resource == "gpu"
    assert reason.message == ("user alice uses 4 of at most 6 gpu in virtual cluster 'org' "
                              "(maxPerUser), 3 more needed")
    assert quota.check(TEAM, "bob", GPU.scale(4)) is None  # another user: his own count
    assert quota.check(TEAM, "alice", Resources.of(cpu=1000)) is None  # no GPU asked
    quota.hold(TEAM, NO_USER, GPU.scale(4), +1)
    reason = quota.check(TEAM, NO_USER, GPU)
    assert reason is not None and reason.message.startswith("jobs without a user use 4 of")


def test_a_request_alone_over_a_limit_never_fits() -> None:
    quota = UserQuota(QUOTA_VCS)
    assert quota.never_fits(TEAM, GPU.scale(4)) is None
    reason = quota.never_fits(TEAM, GPU.scale(5))
    assert reason is not None and reason.kind is PendingKind.UNSCHEDULABLE
    assert reason.message == ("needs 5 gpu but virtual cluster 'team' allows at most 4 gpu "
                              "per user (maxPerUser)")
    assert quota.never_fits(FREE, GPU.scale(7)) is not None  # org's 6


def test_a_cluster_that_joins_later_counts_from_then_on() -> None:
    quota = UserQuota()
    assert not quota
    quota.add(VirtualCluster("plain"))
    assert not quota
    quota.add(VirtualCluster("sub", max_per_user=ResourceLimit.of({"gpu": 1})))
    quota.hold(["root", "sub"], "alice", GPU, +1)
    reason = quota.check(["root", "sub"], "alice", GPU)
    assert reason is not None and reason.queue == "sub"
