"""A quota path update's in-place arithmetic (`QuotaTree._update_path`) against the vector
operators it stands for: the same usage on every level, and a refund of more than was
charged refused as `Resources.__sub__` refuses it, leaving the path as it was."""

import pytest

from shoal.api import ResourceLimit, Resources, VirtualCluster
from shoal.api.resources import QuantityError
from shoal.core.quota import QuotaTree


def _tree() -> QuotaTree:
    return QuotaTree([
        VirtualCluster("a", min=Resources.of(gpu=8), max=ResourceLimit.of({"gpu": 12})),
        VirtualCluster("a1", parent="a", min=Resources.of(gpu=4),
                       lending_limit=ResourceLimit.of({"gpu": 1})),
        VirtualCluster("b", min=Resources.of(gpu=4)),
    ], Resources.of(cpu=64000, memory=1 << 20, gpu=16))


def test_charges_and_refunds_move_every_level_by_the_vector() -> None:
    t = _tree()
    one, two = Resources(cpu=1000, memory=512, gpu=1), Resources(cpu=3000, memory=64, gpu=2)
    t.charge("a1", one)
    t.charge("a1", two)
    t.refund("a1", one)
    for name in ("a1", "a"):
        assert t.get(name).usage == two
    assert t.root.usage == two
    assert t.get("a1").unlent == Resources.of(gpu=1)  # min 4 − 2 used, 1 of it lent


def test_refunding_more_than_was_charged_raises_and_changes_nothing() -> None:
    t = _tree()
    t.charge("a1", Resources.of(gpu=1))
    before = [(q.usage, q.reserved, q.unlent) for q in (t.get("a1"), t.get("a"), t.root)]
    with pytest.raises(QuantityError, match="gpu"):
        t.refund("a1", Resources.of(gpu=2))
    assert [(q.usage, q.reserved, q.unlent)
            for q in (t.get("a1"), t.get("a"), t.root)] == before
