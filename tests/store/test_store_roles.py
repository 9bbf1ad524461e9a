"""A task group's `TaskCompleted → CompleteJob` policy is kept in the store with its group
(part of its spec: a replay that changes it is a conflict), and a group stored before the
policy existed reads as without it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from store_helpers import make_job

from shoal.store import IdempotencyConflict, Repository
from shoal.store.convert import group_from_dict, group_to_dict


def test_complete_job_round_trips_and_is_part_of_the_spec(repo: Repository) -> None:
    base = make_job("roles")
    master, worker = base.groups
    job = replace(base, groups=(master, replace(worker, completes_job=True)))
    stored, _ = repo.submit_job(job, idempotency_key="k")
    got = repo.get_job("roles")
    assert got is not None and got == replace(stored, tasks=got.tasks)
    assert [g.completes_job for g in got.groups] == [False, True]
    assert repo.submit_job(job, idempotency_key="k")[1] is False
    with pytest.raises(IdempotencyConflict):
        repo.submit_job(base, idempotency_key="k")


def test_a_group_stored_before_the_policy_has_none() -> None:
    group = make_job("old").groups[1]
    data = group_to_dict(replace(group, completes_job=True))
    del data["completes_job"]
    assert group_from_dict(data).completes_job is False
