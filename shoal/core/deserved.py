"""Deserved shares: the weight-proportional water-filling of the quota tree (Volcano's
`proportion` plugin), for the capacity plugin's `share: proportional`.

Each virtual cluster (VC) *deserves* a part of what its parent deserves (the root: the
cluster's capacity), split among siblings in proportion to their `weight`, per resource
dimension, with each sibling

- capped by its `max` and by its *demand* — what its subtree uses plus what its waiting
  jobs ask (a closed VC asks nothing more: it admits nothing new) — since what a VC cannot
  use is better deserved by its siblings;
- floored by its `min`: a guarantee is deserved whatever the weights say.

Volcano computes it by rounds: every unsatisfied queue gets its weight's part of what is
left, clamped; the rounds stop when nothing is left or nothing changes. Shoal solves for the
round's fixed point directly — the *water level* L at which Σ clamp(weight·L, floor, cap)
over the siblings equals what the parent deserves (`water_fill`) — which is the same split
whenever Volcano's rounds converge, needs no round limit, and never hands out more than the
parent has when minimums bind (Volcano's rounds can: a floor raised after a round is not
taken back from the others).

Values are floats (a deserved share is a fraction of a GPU as often as not); plain data,
computed once per cycle (`deserved_shares`), no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from shoal.api.resources import Resources
from shoal.core.quota import QueueState, QuotaTree


@dataclass(frozen=True, slots=True)
class Claim:
    """One sibling's terms in a split of one dimension."""

    weight: int
    floor: float
    """Its guaranteed minimum."""
    cap: float
    """The most it may deserve: its max and its demand, whichever is lower, but never below
    `floor` (math.inf: unbounded)."""


def water_fill(amount: float, claims: Sequence[Claim]) -> list[float]:
    """Split `amount` among `claims`: each gets clamp(weight·L, floor, cap) for the level L
    at which the parts add up to `amount`. Every cap when even they fit; every floor when
    the floors alone do not (the guarantees overcommit what there is: nothing is left to
    share out, and the floors are kept, as the quota tree keeps them)."""
    if not claims:
        return []
    if sum(c.cap for c in claims) <= amount:
        return [c.cap for c in claims]
    if sum(c.floor for c in claims) >= amount:
        return [c.floor for c in claims]

    def filled(level: float) -> float:
        return sum(_clamp(c.weight * level, c) for c in claims)

    # f(L) is piecewise linear and non-decreasing, bent where a part meets its floor or cap:
    # find the bend past which f reaches `amount`, then solve the straight piece before it.
    bends = sorted({c.floor / c.weight for c in claims} |
                   {c.cap / c.weight for c in claims if c.cap != math.inf})
    low = 0.0
    high = math.inf
    for bend in bends:
        if filled(bend) >= amount:
            high = bend
            break
        low = bend
    slope = sum(c.weight for c in claims
                if c.floor <= c.weight * low and c.weight * high <= c.cap)
    level = low + (amount - filled(low)) / slope
    return [_clamp(c.weight * level, c) for c in claims]


def _clamp(value: float, claim: Claim) -> float:
    return min(max(value, claim.floor), claim.cap)


@dataclass(frozen=True, slots=True)
class DeservedShares:
    """What every VC deserves now, per dimension (dimensions not listed: 0)."""

    by_queue: Mapping[str, Mapping[str, float]]

    def of(self, queue: str, dimension: str) -> float:
        return self.by_queue.get(queue, {}).get(dimension, 0.0)

    def share(self, queue: QueueState) -> float:
        """How far the VC is into what it deserves: its largest usage ÷ deserved over the
        dimensions (Volcano's share; a dimension it deserves none of counts 1 when it uses
        some, 0 when it uses none, as Volcano counts it)."""
        deserved = self.by_queue.get(queue.name, {})
        out = 0.0
        for dim, used in queue.usage.items():
            want = deserved.get(dim, 0.0)
            out = max(out, used / want if want > 0 else 1.0 if used > 0 else 0.0)
        return out

    def room(self, queue: QueueState, dimension: str) -> float:
        """How much more the VC may use in `dimension` and stay within what it deserves
        (negative: by how much it is over)."""
        return self.of(queue.name, dimension) - queue.usage.get(dimension)


def deserved_shares(quota: QuotaTree, asked: Iterable[tuple[str, Resources]],
                    closed: Iterable[str] = ()) -> DeservedShares:
    """Deserved shares over the whole tree. `asked`: (VC, what a waiting job of it asks)
    pairs; `closed`: VCs whose jobs ask nothing (their waiting jobs are not admitted)."""
    shut = set(closed)
    demand: dict[str, Resources] = {q.name: q.usage for q in quota}
    for name, request in asked:
        if name in shut or request.is_zero():
            continue
        for queue in quota.get(name).path():
            demand[queue.name] = demand[queue.name] + request
    dims = {d for d, _ in quota.capacity.items()}
    for request in demand.values():
        dims.update(request.dimensions())
    out: dict[str, dict[str, float]] = {
        quota.root.name: {d: float(quota.capacity.get(d)) for d in dims}}
    stack = [quota.root]
    while stack:
        parent = stack.pop()
        children = parent.children
        if not children:
            continue
        shares: dict[str, dict[str, float]] = {c.name: {} for c in children}
        for dim in dims:
            claims = [_claim(child, dim, demand[child.name]) for child in children]
            for child, part in zip(children, water_fill(out[parent.name][dim], claims),
                                   strict=True):
                shares[child.name][dim] = part
        out.update(shares)
        stack.extend(children)
    return DeservedShares(out)


def _claim(queue: QueueState, dim: str, demand: Resources) -> Claim:
    floor = float(queue.min.get(dim))
    limit = queue.max.get(dim)
    cap = float(demand.get(dim)) if limit is None else float(min(limit, demand.get(dim)))
    return Claim(queue.weight, floor, max(floor, cap))
