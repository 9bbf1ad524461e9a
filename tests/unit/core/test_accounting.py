"""Usage accounting's pure half (`shoal.api.accounting`, issue 21): an attempt is cut at
hour boundaries without losing or adding a second, counted as one task in the hour it
ended; a report sums buckets per key with wasted work apart, sorted by GPU-seconds; a
query's bad parameters are refused naming them; and the report's JSON is exactly what the
server's models answer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api.accounting import (
    DAY,
    HOUR,
    MIB,
    AccountingError,
    Attempt,
    GroupBy,
    Outcome,
    Step,
    UsageQuery,
    aggregate,
    hour_pieces,
    parse_time,
    usage_report,
)
from shoal.api.accounting_io import report_csv, report_from_json, report_to_json
from shoal.server.usage_models import usage_out

NOV_1 = parse_time("2026-11-01", "t")


def attempt(start: float, end: float, *, gpus: int = 1, queue: str = "q", node: str = "n",
            outcome: Outcome = Outcome.USEFUL, job: str = "j") -> Attempt:
    return Attempt(job, queue, "u", "a100", node, outcome, start, end, gpus, 2000, 1024)


def test_an_interval_is_cut_at_hour_boundaries() -> None:
    assert list(hour_pieces(NOV_1 + 3000, NOV_1 + 7500)) == [
        (NOV_1, 600.0), (NOV_1 + HOUR, 3600.0), (NOV_1 + 2 * HOUR, 300.0)]
    assert list(hour_pieces(NOV_1 + 10, NOV_1 + 10)) == [(NOV_1, 0.0)]
    assert list(hour_pieces(NOV_1, NOV_1 + HOUR)) == [(NOV_1, 3600.0)]


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 10 * DAY), st.floats(0, 3 * DAY), st.integers(0, 8))
def test_buckets_keep_every_second_and_count_the_task_once(start: float, length: float,
                                                           gpus: int) -> None:
    a = attempt(NOV_1 + start, NOV_1 + start + length, gpus=gpus)
    buckets = aggregate([a])
    assert sum(b.tasks for b in buckets.values()) == 1
    assert sum(b.gpu_seconds for b in buckets.values()) == pytest.approx(gpus * (a.end - a.start))
    assert sum(b.cpu_seconds for b in buckets.values()) == pytest.approx(2 * (a.end - a.start))
    assert sum(b.memory_byte_seconds for b in buckets.values()) == \
        pytest.approx(1024 * MIB * (a.end - a.start))
    for key, amounts in buckets.items():
        assert key.hour % HOUR == 0 and 0 <= amounts.gpu_seconds <= gpus * HOUR
    [last] = [k for k, b in buckets.items() if b.tasks]
    assert last.hour <= a.end < last.hour + HOUR or a.end == last.hour + HOUR


def test_a_report_sums_per_key_with_wasted_work_apart() -> None:
    attempts = [attempt(NOV_1, NOV_1 + 7200, gpus=2, queue="a"),
                attempt(NOV_1, NOV_1 + 1800, gpus=4, queue="b", outcome=Outcome.PREEMPTED),
                attempt(NOV_1 + DAY, NOV_1 + DAY + 600, gpus=1, queue="b",
                        outcome=Outcome.FAILED),
                attempt(NOV_1 - 2 * DAY, NOV_1 - DAY, gpus=8, queue="c")]  # outside
    query = UsageQuery(GroupBy.QUEUE, NOV_1, NOV_1 + 7 * DAY, Step.DAY)
    report = usage_report(query, attempts)
    assert [(r.key, r.tasks, r.gpu_seconds) for r in report.rows] == [
        ("a", 1, 14400.0), ("b", 2, 7800.0)]
    b = report.rows[1]
    assert b.wasted == {Outcome.PREEMPTED: 7200.0, Outcome.FAILED: 600.0}
    assert [(p.start, p.gpu_seconds) for p in b.series] == [(NOV_1, 7200.0),
                                                            (NOV_1 + DAY, 600.0)]
    assert (report.total.tasks, report.total.gpu_seconds) == (3, 22200.0)
    by_job = usage_report(UsageQuery(GroupBy.JOB, NOV_1, NOV_1 + DAY, Step.NONE), attempts)
    assert [r.key for r in by_job.rows] == ["j"] and by_job.rows[0].series == ()


def test_the_json_is_the_servers_and_reads_back() -> None:
    attempts = [attempt(NOV_1, NOV_1 + 5000, queue="a", outcome=Outcome.FAILED),
                attempt(NOV_1 + 100, NOV_1 + 200, queue="")]
    for step in Step:
        report = usage_report(UsageQuery(GroupBy.QUEUE, NOV_1, NOV_1 + DAY, step), attempts)
        as_json = report_to_json(report)
        assert as_json == usage_out(report).model_dump(by_alias=True, exclude_none=True)
        assert report_from_json(as_json) == report
        assert ("series" in as_json["total"]) is (step is not Step.NONE)
    lines = report_csv(usage_report(UsageQuery(GroupBy.QUEUE, NOV_1, NOV_1 + DAY,
                                               Step.NONE), attempts)).splitlines()
    assert lines[0].startswith("key,tasks,gpu_seconds")
    assert lines[1].startswith("a,1,5000.0,") and lines[-1].startswith("total,2,")


@pytest.mark.parametrize(("args", "path", "words"), [
    (("everything", None, None, None), "by", "must be one of"),
    (("queue", "yesterday", None, None), "since", "ISO 8601"),
    (("queue", None, "2026-11-01T25:00", None), "until", "ISO 8601"),
    (("queue", "2026-11-02", "2026-11-01", None), "since", "before until"),
    (("queue", "2025-01-01", "2026-11-01", None), "since", "at most 400 days"),
    (("queue", "2026-09-01", "2026-11-01", "hour"), "step", "at most 31 days"),
    (("queue", None, None, "week"), "step", "must be one of"),
    (("queue", "x" * 100, None, None), "since", "too long"),
    (("queue", "0001-01-01T00:00:00+01:00", None, None), "since", "between 1970 and 3000"),
    (("queue", "2026-01-01", "9999-12-31T23:59:59-14:00", None), "until", "between"),
])
def test_bad_parameters_are_named(args: tuple[str | None, ...], path: str, words: str
                                  ) -> None:
    with pytest.raises(AccountingError) as caught:
        UsageQuery.of(*args, now=NOV_1)
    assert caught.value.path == path and words in caught.value.message


def test_defaults_are_the_last_week_by_queue() -> None:
    query = UsageQuery.of(None, None, None, None, now=NOV_1)
    assert query == UsageQuery(GroupBy.QUEUE, NOV_1 - 7 * DAY, NOV_1, Step.NONE)
    assert parse_time("2026-11-01T01:00:00+01:00", "t") == NOV_1
    assert parse_time("2026-11-01T00:00:00Z", "t") == NOV_1
