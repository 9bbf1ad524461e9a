"""Resources: exact arithmetic, per-dimension comparison, Kubernetes quantities."""

import pytest

from shoal.api.resources import (
    QuantityError,
    ResourceLimit,
    Resources,
    parse_cpu,
    parse_memory,
    parse_resources,
    total,
)


def test_parse_kubernetes_quantities() -> None:
    assert parse_cpu("500m") == 500
    assert parse_cpu(2) == 2000
    assert parse_cpu("1.5") == 1500
    assert parse_memory("4Gi") == 4096
    assert parse_memory("512Mi") == 512
    assert parse_memory("1G") == 954  # 10^9 bytes rounded up to whole MiB
    assert parse_memory(1) == 1  # one byte still needs a MiB


def test_gpu_alias_and_extras() -> None:
    r = parse_resources({"cpu": 1, "nvidia.com/gpu": 2, "rdma/hca": 1})
    assert r.gpu == 2
    assert r.get("rdma/hca") == 1
    with pytest.raises(QuantityError, match="given twice"):
        parse_resources({"gpu": 1, "nvidia.com/gpu": 1})


@pytest.mark.parametrize("bad", ["-1", "abc", "1.5m", "2Xi"])
def test_bad_cpu_rejected(bad: str) -> None:
    with pytest.raises(QuantityError):
        parse_cpu(bad)


def test_negative_vectors_cannot_exist() -> None:
    with pytest.raises(QuantityError, match="negative"):
        Resources(cpu=-1)
    with pytest.raises(QuantityError):
        _ = Resources.of(cpu=1) - Resources.of(cpu=2)


def test_per_dimension_comparison_is_partial() -> None:
    a = Resources.of(cpu=2000, gpu=1)
    b = Resources.of(cpu=1000, gpu=2)
    assert not a <= b and not b <= a  # incomparable
    assert Resources.of(cpu=1000) <= a
    same = Resources.of(cpu=2000, gpu=1)
    assert a.fits(same) and not a < same and a <= same


def test_arithmetic_with_extras() -> None:
    a = Resources.of(cpu=1000, extras={"x": 2})
    b = Resources.of(gpu=1, extras={"x": 1, "y": 3})
    s = a + b
    assert s.get("x") == 3 and s.get("y") == 3
    assert s - b == a
    assert b.saturating_sub(a) == Resources.of(gpu=1, extras={"x": 0, "y": 3})
    assert total([a, b, a]) == a + b + a
    assert a.scale(3).get("x") == 6


def test_shortfall_names_dimensions() -> None:
    need = Resources.of(cpu=4000, gpu=2)
    assert need.shortfall(Resources.of(cpu=8000, gpu=1)) == ["gpu"]


def test_limits_absent_means_unlimited() -> None:
    limit = ResourceLimit.of({"gpu": 8})
    assert limit.admits(Resources.of(cpu=10**9, gpu=8))
    assert limit.exceeded(Resources.of(gpu=9)) == ["gpu"]
    assert ResourceLimit.unlimited().admits(Resources.of(gpu=10**6))


def test_quantities_round_trip() -> None:
    r = Resources.of(cpu=1500, memory=131072, gpu=8, extras={"rdma/hca": 1})
    assert r.to_quantities() == {"cpu": "1500m", "memory": "128Gi", "gpu": 8, "rdma/hca": 1}
    assert parse_resources(r.to_quantities()) == r
