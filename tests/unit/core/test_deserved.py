"""Deserved shares (`shoal.core.deserved`) on small trees worked out by hand: the weights'
split, a demand or a max that caps it, a min that floors it, a department's share split
again among its teams, and a closed virtual cluster that asks nothing more."""

from __future__ import annotations

import math

import pytest

from shoal.api import ResourceLimit, Resources, VirtualCluster
from shoal.api.queue_policy import QueueStatus
from shoal.core.deserved import Claim, deserved_shares, water_fill
from shoal.core.quota import QuotaTree
from shoal.scheduler.queue_status import QueuePriorities, closed_queues

GPUS = Resources.of(cpu=64000, memory=524288, gpu=8)


def gpus(n: int) -> Resources:
    return Resources.of(gpu=n)


def test_weights_split_what_both_want_three_to_one() -> None:
    assert water_fill(8, [Claim(3, 0, math.inf), Claim(1, 0, math.inf)]) == [6, 2]


def test_a_capped_claim_leaves_the_rest_to_the_others() -> None:
    # c asks 1 only: the others share the other 7 by weight, 3:1 of 7.
    out = water_fill(8, [Claim(3, 0, math.inf), Claim(1, 0, math.inf), Claim(4, 0, 1)])
    assert out == pytest.approx([5.25, 1.75, 1])


def test_a_floor_is_deserved_whatever_the_weight() -> None:
    out = water_fill(8, [Claim(3, 0, math.inf), Claim(1, 4, math.inf)])
    assert out == pytest.approx([4, 4])


def test_when_every_cap_fits_each_gets_its_cap() -> None:
    assert water_fill(8, [Claim(1, 0, 2), Claim(5, 1, 3)]) == [2, 3]


def test_a_department_share_is_split_again_among_its_teams() -> None:
    tree = QuotaTree([VirtualCluster("dept", weight=1), VirtualCluster("other", weight=1),
                      VirtualCluster("a", "dept", weight=1),
                      VirtualCluster("b", "dept", weight=3,
                                     max=ResourceLimit.of({"gpu": 1}))], GPUS)
    asked = [("a", gpus(8)), ("b", gpus(8)), ("other", gpus(8))]
    shares = deserved_shares(tree, asked)
    assert shares.of("dept", "gpu") == pytest.approx(4)
    assert shares.of("other", "gpu") == pytest.approx(4)
    assert shares.of("b", "gpu") == pytest.approx(1)  # its max
    assert shares.of("a", "gpu") == pytest.approx(3)
    assert shares.of("default", "gpu") == 0  # asks nothing


def test_a_closed_virtual_cluster_deserves_only_what_it_uses() -> None:
    tree = QuotaTree([VirtualCluster("shut", state=QueueStatus.CLOSED),
                      VirtualCluster("open")], GPUS)
    tree.charge("shut", gpus(1))
    shares = deserved_shares(tree, [("shut", gpus(7)), ("open", gpus(8))],
                             closed=closed_queues(tree))
    assert shares.of("shut", "gpu") == pytest.approx(1)
    assert shares.of("open", "gpu") == pytest.approx(7)
    assert shares.share(tree.get("shut")) == pytest.approx(1.0)


def test_share_is_usage_over_deserved_at_its_largest() -> None:
    tree = QuotaTree([VirtualCluster("a")], GPUS)
    tree.charge("a", Resources.of(cpu=32000, gpu=2))
    shares = deserved_shares(tree, [("a", gpus(2))])
    # Capped by its demand: 4 GPUs (2 used, 2 asked) and the 32 CPUs it uses.
    assert shares.of("a", "gpu") == pytest.approx(4)
    assert shares.share(tree.get("a")) == pytest.approx(1.0)  # CPUs: 32 of 32


def test_priorities_are_compared_from_the_top_down() -> None:
    tree = QuotaTree([VirtualCluster("ops", priority=5), VirtualCluster("lab"),
                      VirtualCluster("ops-a", "ops"),
                      VirtualCluster("lab-a", "lab", priority=100)], GPUS)
    key = QueuePriorities.of(tree).key
    assert key(tree.get("ops-a")) < key(tree.get("lab-a")) < key(tree.get("default"))
    flat = QuotaTree([VirtualCluster("x")], GPUS)
    assert QueuePriorities.of(flat).key(flat.get("x")) == ()  # all 0: no key at all
