"""The capacity plugin's queue order with resource flavors: a virtual cluster is below its
guarantee by its use summed over its flavors, per resource (`below_guarantee`)."""

from __future__ import annotations

import pytest

from shoal.api import Resources, VirtualCluster
from shoal.api.flavors import FlavorQuota, flavor_dimension, in_flavor, over_flavors
from shoal.core.quota import QuotaTree
from shoal.scheduler.plugins.capacity import below_guarantee


def gpu(n: int) -> Resources:
    return Resources.of(gpu=n)


def on(flavor: str, n: int) -> Resources:
    """What a task of `n` GPUs admitted on `flavor` is charged: the plain amount and the
    flavor's own."""
    return gpu(n) + in_flavor(gpu(n), flavor)


def test_over_flavors_sums_each_resource_over_its_flavors() -> None:
    used = Resources.of(cpu=3, gpu=5, extras={
        flavor_dimension("a100", "gpu"): 2, flavor_dimension("h100", "gpu"): 3,
        flavor_dimension("h100", "nvidia.com/mig-1g.10gb"): 4, "example.com/fpga": 1})
    assert over_flavors(used) == {"gpu": 5, "nvidia.com/mig-1g.10gb": 4}
    assert over_flavors(gpu(4)) == {}


def _team(a100_used: int, h100_used: int, plain_min: int = 0) -> bool:
    team = VirtualCluster("team", min=gpu(plain_min), flavors=(
        FlavorQuota("a100", min=gpu(2)), FlavorQuota("h100", min=gpu(2))))
    tree = QuotaTree([team], gpu(32) + in_flavor(gpu(16), "a100") + in_flavor(gpu(16), "h100"))
    for flavor, used in (("a100", a100_used), ("h100", h100_used)):
        if used:
            tree.charge("team", on(flavor, used))
    return below_guarantee(tree.get("team"))


@pytest.mark.parametrize(("a100", "h100", "below"), [
    (0, 0, True),
    (2, 0, True),    # its whole A100 guarantee, but 2 of the 4 GPUs it is owed in all
    (1, 2, True),
    (3, 0, True),
    (4, 0, False),   # as many GPUs as it is owed in all, on A100 alone
    (6, 0, False),   # more than its whole guarantee; its idle H100 share does not count
    (0, 4, False),
    (2, 2, False),
])
def test_a_flavored_cluster_is_below_its_guarantee_in_total(a100: int, h100: int,
                                                            below: bool) -> None:
    assert _team(a100, h100) is below


def test_a_plain_minimum_still_counts_beside_the_flavors() -> None:
    # Owed 8 GPUs plainly: 4 on flavors meets the flavors' guarantees, not that one.
    assert _team(2, 2, plain_min=8)
    assert not _team(4, 4, plain_min=8)
