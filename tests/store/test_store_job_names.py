"""Reusable job names in the store, on both backends: the name of an ended job is taken and
the ended job kept in history as `NAME.N` with its tasks and events; a live job's name, a
job being deleted, a generated name and `submit_job` stay clashes; idempotency keys keep
working, generated names included; a history name may be longer than a job name."""

from __future__ import annotations

from dataclasses import replace

import pytest
from store_helpers import make_job

from shoal.api import JobState
from shoal.store import AlreadyExistsError, IdempotencyConflict, Repository
from shoal.store.job_names import KEPT_IN_HISTORY, history_run


def end(repo: Repository, name: str, state: JobState = JobState.FAILED) -> None:
    """End a job that runs nothing (its pending tasks are cancelled with it)."""
    repo.stop_job(name, state, "done")


def test_an_ended_jobs_name_is_taken_and_the_job_kept_in_history(repo: Repository) -> None:
    repo.submit(make_job("train"))
    end(repo, "train")
    second = repo.submit(replace(make_job("train"), queue="default", priority_class="high"))
    assert second.created and second.retired == "train.1"
    newest = repo.get_job("train")
    assert newest is not None and newest.state is JobState.PENDING
    assert newest.priority_class == "high"
    old = repo.get_job("train.1")
    assert old is not None and old.state is JobState.FAILED
    assert {t.job for t in old.tasks} == {"train.1"} and len(old.tasks) == 3
    kept = [e for e in repo.event_page("train.1", limit=100) if e.kind == KEPT_IN_HISTORY]
    assert [e.cause for e in kept] == [
        "kept in history as train.1: a new job was submitted as train"]
    assert [e.kind for e in repo.event_page("train", limit=100)] == ["Submitted"]
    assert repo.retired_files() == [("train", "train.1")]
    repo.files_moved("train.1")
    assert repo.retired_files() == []

    end(repo, "train", JobState.CANCELLED)
    assert repo.submit(make_job("train")).retired == "train.2"
    assert repo.get_job("train.2").state is JobState.CANCELLED  # type: ignore[union-attr]
    names = [s.job.name for s in repo.list_job_summaries(limit=10)]
    assert sorted(names) == ["train", "train.1", "train.2"]


def test_a_live_jobs_name_stays_taken(repo: Repository) -> None:
    repo.submit(make_job("train"))
    with pytest.raises(AlreadyExistsError, match="has not ended"):
        repo.submit(make_job("train"))
    repo.stop_job("train", JobState.CANCELLED, "stop")  # nothing ran: it ends at once
    repo.request_delete("train")
    with pytest.raises(AlreadyExistsError, match="being deleted"):
        repo.submit(make_job("train"))


def test_submit_job_and_generated_names_never_reuse(repo: Repository) -> None:
    repo.submit(make_job("train-bbbbb"))
    end(repo, "train-bbbbb")
    with pytest.raises(AlreadyExistsError):
        repo.submit_job(make_job("train-bbbbb"))
    with pytest.raises(AlreadyExistsError):
        repo.submit(make_job("train-bbbbb"), generated_from="train-")
    assert repo.get_job("train-bbbbb.1") is None


def test_idempotency_keys_keep_working(repo: Repository) -> None:
    first = repo.submit(make_job("train"), idempotency_key="k1")
    end(repo, "train")
    replay = repo.submit(make_job("train"), idempotency_key="k1")  # the same request again
    assert not replay.created and replay.job.name == "train"
    assert repo.get_job("train.1") is None
    with pytest.raises(IdempotencyConflict):
        repo.submit(replace(make_job("train"), priority_class="high"), idempotency_key="k1")
    rerun = repo.submit(make_job("train"), idempotency_key="k2")
    assert rerun.created and rerun.retired == "train.1" and first.created
    # The first key still names the first run, now in history.
    again = repo.submit(make_job("train"), idempotency_key="k1")
    assert not again.created and again.job.name == "train.1"


def test_a_retry_with_a_generated_name_finds_the_first_draw(repo: Repository) -> None:
    first = repo.submit(make_job("gen-bcdfg"), idempotency_key="k", generated_from="gen-")
    retry = repo.submit(make_job("gen-zzzzz"), idempotency_key="k", generated_from="gen-")
    assert first.created and not retry.created and retry.job.name == "gen-bcdfg"
    assert repo.get_job("gen-zzzzz") is None


def test_the_longest_name_can_be_kept_in_history(repo: Repository) -> None:
    name = "x" * 253
    for run in range(1, 12):
        repo.submit(make_job(name))
        end(repo, name)
        if run > 1:
            assert repo.get_job(f"{name}.{run - 1}") is not None
    assert repo.submit(make_job(name)).retired == f"{name}.11"


def test_history_names_are_told_apart() -> None:
    assert history_run("a", "a.3") == 3
    assert history_run("a", "a-b.3") is None
    assert history_run("a", "ab.3") is None
    assert history_run("a.1", "a.1.2") == 2
    assert history_run("a", "a.x") is None


def test_racing_retries_of_one_key_make_one_new_run(repo: Repository) -> None:
    from concurrent.futures import ThreadPoolExecutor

    repo.submit(make_job("train"))
    for run in range(1, 4):
        end(repo, "train")
        with ThreadPoolExecutor(4) as pool:
            done = list(pool.map(lambda key: repo.submit(make_job("train"),
                                                         idempotency_key=key), [f"k{run}"] * 4))
        assert sum(d.created for d in done) == 1
        assert {d.job.name for d in done} == {"train"}
        assert [d.retired for d in done if d.created] == [f"train.{run}"]


def test_a_keyed_submission_of_a_live_name_says_why(repo: Repository) -> None:
    repo.submit(make_job("train"), idempotency_key="first")
    with pytest.raises(AlreadyExistsError, match="has not ended"):
        repo.submit(make_job("train"), idempotency_key="second")
