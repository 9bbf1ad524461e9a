"""No user ever holds more than `maxPerUser` in any virtual cluster (issue 17,
`shoal.core.user_quota`), through real cycles of random worlds under profiles that allocate,
backfill, preempt, reclaim and grow elastic jobs.

The worlds are `strategies.worlds`' with two things added before any cycle runs: every job
gets one of a few users (or none: those count as one user together), and some virtual
clusters — the declared `default` one included — get a `maxPerUser` in some dimensions. The
running state is then made by real cycles under those limits (`warm_up`), so the statement is
checked from the first cycle on: for every limited virtual cluster and every user, what the
user's running tasks in its subtree hold stays within the limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import DEFAULT_QUEUE, ROOT_QUEUE, Job, ResourceLimit, Resources, VirtualCluster
from shoal.api.resources import CORE_DIMENSIONS, total
from shoal.core.usage import NO_USER

from .strategies import PROFILE_NAMES, World, warm_up, worlds

USERS = ("alice", "bob", "carol", None)
PROFILES = (*PROFILE_NAMES, "elastic", "las")
PER_USER = {"cpu": [0, 1000, 4000, 16000], "memory": [0, 8192, 65536], "gpu": [0, 1, 2, 4]}
CYCLES = 3


@st.composite
def user_worlds(draw: st.DrawFn) -> World:
    base = draw(worlds(max_nodes=8, max_jobs=20, profiles=PROFILES))
    vcs = list(base.virtual_clusters)
    if DEFAULT_QUEUE not in {vc.name for vc in vcs}:
        vcs.append(VirtualCluster(DEFAULT_QUEUE))
    limited = []
    for vc in vcs:
        per_user = ResourceLimit()
        if draw(st.booleans()):
            dims = draw(st.lists(st.sampled_from(CORE_DIMENSIONS), min_size=1, unique=True))
            per_user = ResourceLimit.of({d: draw(st.sampled_from(PER_USER[d])) for d in dims})
        limited.append(replace(vc, max_per_user=per_user))
    # Drop the running state the base world made without the limits, then make it again
    # with them: early jobs placed by real cycles, later ones waiting.
    fresh = [replace(j, user=draw(st.sampled_from(USERS)), tasks=()) for j in base.jobs]
    early = [j for j in fresh if draw(st.booleans())]
    later = [j for j in fresh if j not in early]
    world = replace(base, virtual_clusters=tuple(limited), jobs=tuple(early),
                    nodes=tuple(replace(n, schedulable=True) for n in base.nodes))
    return warm_up(world, later, draw(st.integers(0, 2)), finished=[])


def over_limits(vcs: Sequence[VirtualCluster], jobs: Sequence[Job]) -> list[str]:
    """Every (virtual cluster, user) above its `maxPerUser`, from the jobs' tasks alone."""
    parent = {vc.name: vc.parent for vc in vcs}
    held: dict[tuple[str, str], list[Resources]] = {}
    for job in jobs:
        mine = [job.group(t.group).resources for t in job.tasks if t.state.holds_resources]
        if not mine:
            continue
        vc: str | None = job.queue
        while vc is not None and vc != ROOT_QUEUE:
            held.setdefault((vc, job.user or NO_USER), []).extend(mine)
            vc = parent.get(vc)
    out = []
    for vc_spec in vcs:
        for (vc, user), parts in held.items():
            if vc != vc_spec.name:
                continue
            used = total(parts)
            over = vc_spec.max_per_user.exceeded(used)
            if over:
                out.append(f"user {user!r} holds {used} in {vc}, above maxPerUser "
                           f"{vc_spec.max_per_user} in {over}")
    return out


@settings(max_examples=60, deadline=None)
@given(world=user_worlds())
def test_no_user_ever_exceeds_max_per_user(world: World) -> None:
    assert over_limits(world.virtual_clusters, world.jobs) == []
    for _ in range(CYCLES):
        world = world.step()[2]
        assert over_limits(world.virtual_clusters, world.jobs) == []
