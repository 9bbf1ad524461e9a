"""`spread_matching`, behind the STRICT_SPREAD check, against brute force: it finds an
assignment of virtual nodes to distinct nodes exactly when one exists, and what it returns
is one (distinct nodes, each holding its virtual node)."""

from __future__ import annotations

import itertools

from hypothesis import example, given, settings
from hypothesis import strategies as st

from shoal.api import Resources
from shoal.core.virtual_nodes import spread_matching

sizes = st.builds(lambda c, g: Resources.of(cpu=c * 1000, gpu=g),
                  st.integers(0, 4), st.integers(0, 4))


def exists(wanted: list[Resources], capacities: list[Resources]) -> bool:
    return any(all(w.fits(capacities[c]) for w, c in zip(wanted, chosen, strict=True))
               for chosen in itertools.permutations(range(len(capacities)), len(wanted)))


def cg(cpu: int, gpu: int) -> Resources:
    return Resources.of(cpu=cpu * 1000, gpu=gpu)


@settings(max_examples=300, deadline=None)
@given(st.lists(sizes, max_size=5), st.lists(sizes, max_size=6))
# Taking the first node that fits, even most-constrained first, fails here: the first two
# virtual nodes take nodes 0 and 1, and the third fits only those two.
@example([cg(1, 0), cg(0, 1), cg(1, 0)], [cg(2, 0), cg(2, 2), cg(0, 2)])
def test_spread_matching_is_exact(wanted: list[Resources], capacities: list[Resources]
                                  ) -> None:
    found = spread_matching(wanted, capacities)
    assert (found is not None) == exists(wanted, capacities)
    if found is not None:
        assert len(set(found)) == len(wanted)
        assert all(w.fits(capacities[c]) for w, c in zip(wanted, found, strict=True))
