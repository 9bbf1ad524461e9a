"""Issue 19's durable dispatcher state in the store, on SQLite and PostgreSQL: a job, its
copies' intents before their remote ids, observations stamped once, decisions stored before
they are acted on, and secrets sealed — what a restarted dispatcher reads back."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from sqlalchemy import select

from shoal.api.federation import CopyState, DispatchPolicy
from shoal.store import AlreadyExistsError, Store
from shoal.store.federation import (
    CopyVerdictRecord,
    Decision,
    FederationRecords,
    NewMcJob,
    Observation,
    Verdict,
)
from shoal.store.federation_secrets import KEY_FILE, SealError, key_box
from shoal.store.models import MultiClusterSecretRow

TOKEN = "tok-SECRET-4242-never-in-plain"


def _new(name: str = "mc", sealed: str | None = None, owner: str = "alice") -> NewMcJob:
    return NewMcJob(name=name, owner=owner, document='{"name": "mc"}',
                    policy=DispatchPolicy.FAC_PRIORITY, guard_time_s=2.0, time_scale_s=0.5,
                    retries=1, sealed_secrets=sealed, submitted=10.0)


def test_a_job_and_its_copies_survive_a_new_records_object(store: Store) -> None:
    FederationRecords(store).create_job(_new())
    records = FederationRecords(store)  # a restart: nothing kept in memory
    records.add_intent("mc", 0, "big", "mc-big", 11.0)
    records.add_intent("mc", 0, "small", "mc-small", 11.0)
    records.set_remote_id("mc", 0, "big", "mc-big", 12.0)
    job = FederationRecords(store).get_job("mc")
    assert job is not None and job.state is CopyState.WAITING and job.round == 0
    big, small = job.copy(0, "big"), job.copy(0, "small")
    assert big is not None and big.remote_id == "mc-big" and big.submitted_at == 12.0
    assert small is not None and small.remote_id is None and small.intended_at == 11.0
    assert [j.name for j in FederationRecords(store).active_jobs()] == ["mc"]


def test_an_intent_is_stored_once(store: Store) -> None:
    records = FederationRecords(store)
    records.create_job(_new())
    first = records.add_intent("mc", 0, "big", "mc-big", 1.0)
    again = records.add_intent("mc", 0, "big", "mc-big", 5.0)
    assert again.intended_at == first.intended_at == 1.0
    job = records.get_job("mc")
    assert job is not None and len(job.copies) == 1


def test_a_name_is_unique(store: Store) -> None:
    records = FederationRecords(store)
    records.create_job(_new())
    with pytest.raises(AlreadyExistsError, match="'mc' already exists"):
        records.create_job(_new())


def test_observations_stamp_times_once_and_a_final_state_stays(store: Store) -> None:
    records = FederationRecords(store)
    records.create_job(_new())
    records.add_intent("mc", 0, "big", "mc-big", 1.0)
    records.observe("mc", 0, "big", Observation(CopyState.RUNNING, "Running", at=5.0,
                                                started_at=4.0))
    records.observe("mc", 0, "big", Observation(CopyState.RUNNING, "Running", at=9.0))
    records.observe("mc", 0, "big", Observation(CopyState.FAILED, "NotFound", at=12.0,
                                                lost=True))
    records.observe("mc", 0, "big", Observation(CopyState.RUNNING, "Running", at=13.0))
    job = records.get_job("mc")
    assert job is not None
    copy = job.copy(0, "big")
    assert copy is not None
    assert (copy.state, copy.running_since, copy.ended_at, copy.lost) == (
        CopyState.FAILED, 4.0, 12.0, True)


def test_a_decision_is_stored_with_its_cancels_and_verdicts(store: Store) -> None:
    records = FederationRecords(store)
    records.create_job(_new())
    records.add_intent("mc", 0, "big", "mc-big", 1.0)
    records.add_intent("mc", 0, "small", "mc-small", 1.0)
    records.record_decision("mc", Decision(
        CopyState.RUNNING, "big", "big runs", 0, at=7.0,
        verdicts=(CopyVerdictRecord(0, "big", True, "ran first"),
                  CopyVerdictRecord(0, "small", False, "lower priority")),
        cancels=((0, "small"),)))
    records.record_decision("mc", Decision(CopyState.RUNNING, "big", "big runs", 0, at=9.0,
                                           cancels=((0, "small"),)))
    records.count_cancel("mc", 0, "small")
    records.count_cancel("mc", 0, "small")
    job = records.get_job("mc")
    assert job is not None and job.kept == "big" and job.state is CopyState.RUNNING
    small = job.copy(0, "small")
    assert small is not None
    # The first ask is kept: a cancel re-issued is not a new decision.
    assert (small.verdict, small.cancel_requested_at, small.cancels_issued) == (
        Verdict.CANCELLED, 7.0, 2)
    assert job.ended is None


def test_a_job_ends_once_final_and_no_copy_lives(store: Store) -> None:
    records = FederationRecords(store)
    records.create_job(_new())
    records.add_intent("mc", 0, "big", "mc-big", 1.0)
    records.add_intent("mc", 0, "small", "mc-small", 1.0)
    records.observe("mc", 0, "big", Observation(CopyState.SUCCEEDED, "Succeeded", at=5.0))
    records.record_decision("mc", Decision(CopyState.SUCCEEDED, "big", "done", 0, at=6.0,
                                           cancels=((0, "small"),)))
    job = records.get_job("mc")
    assert job is not None and job.ended is None  # small still lives
    records.observe("mc", 0, "small", Observation(CopyState.STOPPED, "Cancelled", at=7.0))
    records.record_decision("mc", Decision(CopyState.SUCCEEDED, "big", "done", 0, at=8.0))
    job = records.get_job("mc")
    assert job is not None and job.ended == 8.0
    assert records.active_jobs() == []


def test_stop_and_owner_filter(store: Store) -> None:
    records = FederationRecords(store)
    records.create_job(_new("a", owner="alice"))
    records.create_job(_new("b", owner="bob"))
    assert [j.name for j in records.list_jobs("bob")] == ["b"]
    assert records.request_stop("a", 3.0).stop_requested


def test_secrets_are_sealed_at_rest(store: Store, tmp_path: Path) -> None:
    box = key_box(tmp_path)
    key = tmp_path / KEY_FILE
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    records = FederationRecords(store)
    records.create_job(_new(sealed=box.seal((("token-big", TOKEN),))))
    with store.reads.begin() as s:
        raw = s.scalars(select(MultiClusterSecretRow.sealed)).one()
    assert TOKEN not in raw
    sealed = records.sealed_secrets("mc")
    assert sealed is not None
    # The key file is read back by the next start.
    assert key_box(tmp_path).open(sealed) == (("token-big", TOKEN),)
    assert TOKEN not in repr(box)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(SealError) as caught:
        key_box(other).open(sealed)
    assert TOKEN not in str(caught.value)
