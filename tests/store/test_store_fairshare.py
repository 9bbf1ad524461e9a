"""Fair share's job field (seed 002) in the store: kept, read back, part of the job's spec
for idempotent submission; a job stored without it reads back as None (the profile's
default)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from store_helpers import make_job

from shoal.store import IdempotencyConflict, Repository


def test_freezing_window_round_trips_and_is_part_of_the_spec(repo: Repository) -> None:
    job = replace(make_job("calm"), freezing_window=120.0)
    stored, _ = repo.submit_job(job, idempotency_key="k")
    got = repo.get_job("calm")
    assert got is not None and got.freezing_window == 120.0
    assert got == replace(stored, tasks=got.tasks)
    assert repo.submit_job(job, idempotency_key="k")[1] is False
    for changed in (replace(job, freezing_window=None), replace(job, freezing_window=60.0)):
        with pytest.raises(IdempotencyConflict):
            repo.submit_job(changed, idempotency_key="k")


def test_a_job_without_one_reads_back_as_none(repo: Repository) -> None:
    repo.submit_job(make_job("plain"), idempotency_key=None)
    got = repo.get_job("plain")
    assert got is not None and got.freezing_window is None
