"""The algebra of resource vectors: sums, differences, the `fits` partial order, and the
quantity parser and formatter."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from shoal.api import ZERO, QuantityError, Resources, parse_resources
from shoal.api.resources import parse_memory

EXTRAS = ["rdma", "example.com/fpga", "licence_a", "milli-gpu"]

vectors = st.builds(
    Resources.of,
    cpu=st.integers(0, 10**6), memory=st.integers(0, 10**8), gpu=st.integers(0, 64),
    extras=st.dictionaries(st.sampled_from(EXTRAS), st.integers(0, 1000), max_size=3))

FAST = settings(max_examples=200, deadline=None)


def dims(*rs: Resources) -> set[str]:
    out = {"cpu", "memory", "gpu"}
    for r in rs:
        out |= r.dimensions()
    return out


@FAST
@given(a=vectors, b=vectors, c=vectors)
def test_addition_is_a_commutative_monoid_and_subtraction_undoes_it(
        a: Resources, b: Resources, c: Resources) -> None:
    """a + b − b == a; a + b == b + a; (a + b) + c == a + (b + c); a + 0 == a."""
    assert (a + b) - b == a
    assert a + b == b + a
    assert (a + b) + c == a + (b + c)
    assert a + ZERO == a == ZERO + a
    for d in dims(a, b):
        assert (a + b).get(d) == a.get(d) + b.get(d)


@FAST
@given(a=vectors, b=vectors)
def test_fits_is_per_dimension_at_most(a: Resources, b: Resources) -> None:
    """`a.fits(b)` (and `a <= b`) exactly when every dimension of a is ≤ b's; `a - b` is
    defined (does not raise) exactly when b fits a; `saturating_sub` is per-dimension
    max(0, a − b); minimum and maximum are per dimension."""
    expected = all(a.get(d) <= b.get(d) for d in dims(a, b))
    assert a.fits(b) is expected
    assert (a <= b) is expected
    assert (b >= a) is expected
    assert a.shortfall(b) == [d for d, v in a.items() if v > b.get(d)]
    try:
        difference = a - b
    except QuantityError:
        assert not b.fits(a)
    else:
        assert b.fits(a)
        assert difference + b == a
    for d in dims(a, b):
        assert a.saturating_sub(b).get(d) == max(0, a.get(d) - b.get(d))
        assert a.minimum(b).get(d) == min(a.get(d), b.get(d))
        assert a.maximum(b).get(d) == max(a.get(d), b.get(d))


@FAST
@given(a=vectors, x=vectors, y=vectors, b=vectors)
def test_fits_is_a_partial_order(a: Resources, x: Resources, y: Resources, b: Resources
                                 ) -> None:
    """Reflexive, antisymmetric, transitive; `<` is `<=` without equality."""
    same = Resources.of(a.cpu, a.memory, a.gpu, dict(a.extras))
    assert a.fits(same) and a <= same and a >= same
    assert not a < same and not a > same
    if a.fits(b) and b.fits(a):
        assert a == b
    bigger = a + x
    biggest = bigger + y
    assert a.fits(bigger) and bigger.fits(biggest) and a.fits(biggest)
    assert (a < bigger) is (not x.is_zero())
    assert (a < b) is (a.fits(b) and a != b)


@FAST
@given(a=vectors)
def test_quantities_round_trip(a: Resources) -> None:
    """`parse_resources(r.to_quantities()) == r`: the spec reads back what is written."""
    assert parse_resources(a.to_quantities()) == a


MIB = 2**20

byte_counts = st.one_of(
    st.integers(0, 2**63 - 1),
    st.builds(lambda mib, rest: mib * MIB + rest, st.integers(0, 2**43), st.integers(0, MIB - 1)),
)
"""Byte counts, including ones just above a whole number of MiB."""


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(count=byte_counts, unit=st.sampled_from([("", 1), ("Ki", 2**10), ("k", 10**3)]))
@example(count=2**53 + 1, unit=("", 1))  # 8 PiB + 1 byte: hypothesis's minimal counterexample
def test_memory_is_rounded_up_never_under_counted(count: int, unit: tuple[str, int]) -> None:
    """The module docstring: memory that is not a whole number of MiB is rounded *up*, so a
    request is never under-counted. Exact for every quantity: ⌈count × unit / 2²⁰⌉."""
    suffix, scale = unit
    exact = -(-(count * scale) // MIB)
    assert parse_memory(f"{count}{suffix}") == exact
