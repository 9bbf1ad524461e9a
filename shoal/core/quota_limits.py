"""A virtual cluster's borrowing and lending limits in the quota tree (issue 16): Kueue's
ClusterQueue `borrowingLimit` and `lendingLimit`, per resource.

- `borrowingLimit`: the VC's subtree uses at most its guarantee plus this much, per named
  dimension; in effect a second ceiling, `min + borrowingLimit`, beside `max`. It bounds
  every request, lent or not (Kueue: how much a queue may borrow from its cohort).
- `lendingLimit`: at most this much of what the VC's subtree is still owed is lent to other
  subtrees, even by the capacity plugin's lending modes (`check(..., lend=True)`); the rest
  stays *unlent*: kept for it, as without lending. What is kept is defined per dimension,
  like `reserved` (`shoal.core.quota`):

      unlent(q) = max( reserved(q) − lendingLimit(q),  Σ unlent(k) over q's children k,  0 )

  with an unnamed dimension of lendingLimit read as +∞ (all of it may be lent). A child's
  unlent part stays unlent to everyone outside the child, so its ancestors keep it too:
  Kueue's hierarchical cohorts, where what a queue does not lend never reaches its cohort's
  pool nor any pool above. Without lending (`reclaimMode: none`, or a non-elastic task under
  `elastic`) the whole `reserved` is kept anyway, and `unlent ≤ reserved`, so a lending limit
  changes nothing there.

Plain functions of values; `shoal.core.quota` keeps the per-VC state and its bookkeeping.
"""

from __future__ import annotations

from shoal.api.resources import CPU, GPU, MEMORY, ResourceLimit, Resources

_NOTHING = Resources()


def borrowing_ceiling(guarantee: Resources, borrowing_limit: ResourceLimit) -> ResourceLimit:
    """`guarantee + borrowingLimit` in every dimension the limit names; unlimited elsewhere."""
    return ResourceLimit(tuple((dim, guarantee.get(dim) + value)
                               for dim, value in borrowing_limit.limits))


def unlendable(owed: Resources, lending_limit: ResourceLimit) -> Resources:
    """What of `owed` the lending limit keeps back: `owed − lendingLimit` in every dimension
    the limit names (not below 0); nothing in the others."""
    if not lending_limit.limits:
        return _NOTHING
    kept = {dim: max(0, owed.get(dim) - value) for dim, value in lending_limit.limits}
    return Resources.of(kept.pop(CPU, 0), kept.pop(MEMORY, 0), kept.pop(GPU, 0), kept)
