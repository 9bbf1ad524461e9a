"""Per-group minimums and partial admission over random worlds, cycle after cycle.

Each example draws a `World` (tests/property/strategies.py), with every profile that places,
preempts and reclaims, and gives its waiting jobs issue 16's task-group fields as a document
may: a gang's groups a `minAvailable` of their own (the job's `minAvailable` raised to their
sum where it was lower), any job's groups a `minCount` at least that minimum. Jobs that hold
tasks already keep their groups as they are: they started without the fields. The
invariants are checked against the api objects after every cycle, with oracles written here
(not the scheduler's own helpers).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Decisions, Job, TaskGroup

from .strategies import LENDING_PROFILES, PROFILE_NAMES, World, worlds
from .test_scheduling_invariants import evolve, finishing

CHECKS = settings(max_examples=60, deadline=None)
PROFILES = (*PROFILE_NAMES, *LENDING_PROFILES)


@st.composite
def group_fields(draw: st.DrawFn, job: Job) -> Job:
    """`job` with task-group minimums (gangs only) and minCounts, as the spec allows them."""
    groups: list[TaskGroup] = []
    for group in job.groups:
        floor = draw(st.one_of(st.none(), st.integers(1, group.replicas))) \
            if job.gang else None
        count = draw(st.one_of(st.none(), st.integers(floor or 1, group.replicas)))
        groups.append(replace(group, min_available=floor, min_count=count))
    floors = sum(g.min_available or 0 for g in groups)
    least = job.min_available
    if least is not None and least < floors:
        least = floors
    return replace(job, groups=tuple(groups), min_available=least)


@st.composite
def group_worlds(draw: st.DrawFn) -> World:
    world = draw(worlds(profiles=PROFILES))
    return world.with_jobs(
        draw(group_fields(j)) if not any(t.state.holds_resources for t in j.tasks) else j
        for j in world.jobs)


def held_per_group(job: Job) -> dict[str, int]:
    out: dict[str, int] = {}
    for task in job.tasks:
        if task.state.holds_resources:
            out[task.group] = out.get(task.group, 0) + 1
    return out


def bound_per_group(decisions: Decisions, job: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for bind in decisions.binds:
        if bind.task.job == job:
            out[bind.task.group] = out.get(bind.task.group, 0) + 1
    return out


@pytest.mark.slow
@CHECKS
@given(world=group_worlds(), finish=finishing)
def test_no_gang_runs_below_a_groups_minimum(world: World, finish: list[list[int]]) -> None:
    """After every cycle, a gang that holds any task holds at least its minAvailable (within
    its replicas, which a partial admission may have lowered) and each group's own minimum
    of that group (within the group's replicas, lowered to no less than that minimum)."""
    for _, _, after in evolve(world, finish):
        for job in after.jobs:
            held = held_per_group(job)
            if not job.gang or not held:
                continue
            replicas = sum(g.replicas for g in job.groups)
            least = replicas if job.min_available is None else min(job.min_available, replicas)
            assert sum(held.values()) >= least, \
                f"gang {job.name} holds {held}, below its minimum {least}"
            for group in job.groups:
                if group.min_available is not None:
                    assert held.get(group.name, 0) >= min(group.min_available,
                                                          group.replicas), \
                        f"gang {job.name} holds {held} below group {group.name}'s minimum " \
                        f"{group.min_available}"


@pytest.mark.slow
@CHECKS
@given(world=group_worlds(), finish=finishing)
def test_a_partial_admission_keeps_within_its_count(world: World,
                                                    finish: list[list[int]]) -> None:
    """A job admitted in part never runs more of a group than it was admitted with, nor
    fewer than the group's minCount when it starts; a partial admission is said (a Resize
    marked partial), lowers the stored size to what it bound, and happens only to a group
    with a minCount below its replicas."""
    asked = {j.name: j for j in world.jobs}
    for before, decisions, after in evolve(world, finish):
        was = {j.name: j for j in before.jobs}
        now = {j.name: j for j in after.jobs}
        for resize in decisions.resizes:
            if not resize.partial_admission:
                continue
            group = was[resize.job].group(resize.group)
            assert group.min_count is not None
            assert group.min_count <= resize.replicas < group.replicas
            assert bound_per_group(decisions, resize.job).get(resize.group) == resize.replicas
            assert now[resize.job].group(resize.group).replicas == resize.replicas
        for name, job in now.items():
            held = held_per_group(job)
            started = not held_per_group(was[name]) and held
            for group in job.groups:
                first = asked[name].group(group.name) if name in asked else group
                assert held.get(group.name, 0) <= group.replicas
                if first.min_count is None:
                    assert group.replicas == first.replicas, f"{name} resized without minCount"
                    continue
                assert group.replicas >= first.min_count
                if started:
                    least = max(first.min_count, first.min_available or 0)
                    assert bound_per_group(decisions, name).get(group.name, 0) >= \
                        min(least, group.replicas), \
                        f"{name} started {group.name} below its minCount {first.min_count}"
