"""`AdmissionCheck`, the admission check the API runs on every submission, keeps one idle
model, its plugins and its per-shape bounds between jobs. Over random worlds, a kept check
must answer every job — in any order, each more than once — exactly as a check built afresh
for that job alone."""

from __future__ import annotations

import random
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Job, JobState
from shoal.scheduler.actions.enqueue import AdmissionCheck, admission_check

from .strategies import World, worlds


def _kept_answers_as_fresh(world: World, order: list[Job]) -> None:
    """One kept check, asked in `order`, answers each job as a fresh check does."""
    kept = AdmissionCheck(world.nodes, world.virtual_clusters, world.priority_classes,
                          world.profile)
    for job in order:
        fresh = admission_check(job, world.nodes, world.virtual_clusters,
                                world.priority_classes, world.profile)
        assert kept(job) == fresh, job.name


@settings(max_examples=150, deadline=None)
@given(worlds(max_jobs=15), st.randoms(use_true_random=False))
def test_a_kept_admission_check_answers_as_a_fresh_one(world: World, rng: random.Random) -> None:
    submissions = [replace(j, state=JobState.PENDING, tasks=()) for j in world.jobs]
    order = [*submissions, *reversed(submissions)]
    rng.shuffle(order)
    _kept_answers_as_fresh(world, order)


@settings(max_examples=30, deadline=None)
@given(worlds(max_jobs=10), st.randoms(use_true_random=False))
def test_a_job_of_a_shape_already_checked_is_answered_as_a_fresh_check_would(
        world: World, rng: random.Random) -> None:
    """The kept check remembers the shapes it found feasible: a job of the same shape under
    another name and submission time (a burst's next job) gets a fresh check's answer."""
    submissions = [replace(j, state=JobState.PENDING, tasks=()) for j in world.jobs]
    copies = [replace(j, name=f"{j.name}-again", submitted=j.submitted + 1.0)
              for j in submissions]
    order = [*submissions, *copies]
    rng.shuffle(order)
    _kept_answers_as_fresh(world, order)
