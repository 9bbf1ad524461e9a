"""A submission's answer and a watch's line are built as `plain` data, not as validated
models (issue 18): their JSON must be byte for byte what the models `job_out` and
`job_summary_out` build (and the model validated from the plain data) write, for every kind
of job the examples hold (imported ones, services, elastic jobs, a job's own virtual
cluster), with ints where the answer declares floats, with a pending reason and events."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pydantic_core import to_json

from shoal.api import PendingKind, PendingReason, TaskRef, TaskState
from shoal.server.job_models import (
    JobOut,
    JobStatusOut,
    JobSummaryOut,
    PendingReasonOut,
    job_document,
    job_json,
    job_out,
    job_summary_json,
    job_summary_out,
    new_job_summary,
)
from shoal.server.shared_models import plain
from shoal.spec import SpecError, load_files
from shoal.store import Event, JobSummary

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example_summaries() -> list[JobSummary]:
    summaries: list[JobSummary] = []
    for path in sorted(EXAMPLES.rglob("*")):
        if path.suffix not in (".yaml", ".json", ".sbatch"):
            continue
        try:
            bundle = load_files([path])
        except SpecError:  # not a job file, or one that needs its cluster
            continue
        for job in bundle.jobs:
            original = bundle.originals.get(job.name)
            summaries.append(new_job_summary(
                dataclasses.replace(job, user="alice", submitted=1_764_280_000.25),
                None if original is None else original.format))
    return summaries


SUMMARIES = _example_summaries()
REASON = PendingReason(PendingKind.UNSCHEDULABLE, "no node has 9 GPUs", resource="gpu",
                       field="spec.taskGroups[0].resources.gpu")
EVENTS = [Event("j", 7, "Submitted", "api"),
          Event("j", 8.5, "Bound", "scheduler", TaskRef("j", "worker", 0), None, "n1", 3)]


def _validated(document: dict[str, object]) -> bytes:
    return JobOut.model_validate(document).model_dump_json(by_alias=True).encode()


def test_the_examples_hold_every_kind_of_job() -> None:
    jobs = [s.job for s in SUMMARIES]
    assert len(jobs) >= 20
    assert any(j.service is not None for j in jobs)
    assert any(j.elastic is not None for j in jobs)
    assert any(j.virtual_cluster is not None for j in jobs)
    assert any(j.time_limit is not None for j in jobs)
    assert any(s.imported is not None for s in SUMMARIES)


@pytest.mark.parametrize("summary", SUMMARIES, ids=lambda s: s.job.name)
def test_a_jobs_plain_answer_is_the_validated_models_json(summary: JobSummary) -> None:
    for reason, events in ((None, None), (REASON, EVENTS)):
        document = job_document(summary, reason, events)
        written = to_json(document)
        assert written == _validated(document)
        assert written == job_out(summary, reason, events).model_dump_json(
            by_alias=True).encode()
    answer = job_json(summary, REASON, [summary.job.name, "other"])
    validated = job_out(summary, REASON)
    validated.jobs = [summary.job.name, "other"]
    assert answer == validated.model_dump_json(by_alias=True).encode()
    for reason in (None, REASON):
        listed = job_summary_out(summary, reason)
        assert isinstance(listed, JobSummaryOut)
        assert job_summary_json(summary, reason) == \
            listed.model_dump_json(by_alias=True).encode()


def test_ints_in_float_fields_are_written_as_validation_writes_them() -> None:
    """Validation makes an int a float (`2.0`); plain data must too, or its bytes differ."""
    base = next(s for s in SUMMARIES if s.job.elastic is not None)
    job = dataclasses.replace(base.job, submitted=1_764_280_000, time_limit=3600,
                              checkpoint_interval=60, freezing_window=5)
    summary = dataclasses.replace(base, job=job, updated=1_764_280_001, ended=1_764_280_002,
                                  task_counts={TaskState.PENDING: 2, TaskState.RUNNING: 1})
    document = job_document(summary, REASON, EVENTS)
    written = to_json(document)
    assert written == _validated(document)
    assert b'"creationTimestamp":1764280000.0' in written
    assert b'"timeLimit":3600.0' in written and b'"time":7.0' in written
    assert written == job_out(summary, REASON, EVENTS).model_dump_json(by_alias=True).encode()
    assert job_summary_json(summary, REASON) == \
        job_summary_out(summary, REASON).model_dump_json(by_alias=True).encode()


def test_plain_keeps_the_models_order_and_defaults_and_refuses_what_it_would() -> None:
    reason = plain(PendingReasonOut, message="m", kind="Unschedulable")
    assert list(reason) == ["kind", "message", "resource", "queue", "predicate", "field"]
    assert PendingReasonOut.model_validate(reason) == PendingReasonOut(kind="Unschedulable",
                                                                       message="m")
    with pytest.raises(TypeError, match="unknown fields"):
        plain(PendingReasonOut, kind="k", message="m", colour="red")
    with pytest.raises(TypeError, match="missing required field 'message'"):
        plain(PendingReasonOut, kind="k")
    status = plain(JobStatusOut, state="Pending", retries=0, task_counts={}, update_time=1,
                   pending_reason=None)
    assert status["updateTime"] == 1.0 and type(status["updateTime"]) is float
    assert status["deleting"] is False and status["events"] is None
