"""The usage report (`shoal.api.accounting`) as text: the JSON `GET /api/v1/usage` answers
(its shape is `shoal.server.usage_models`'; a test holds the two equal), read back by the
client, and CSV. The simulator writes its report with these too (`shoal sim run
--usage-report`), so a what-if and production read the same way."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from shoal.api.accounting import (
    GroupBy,
    Outcome,
    ReportRow,
    SeriesPoint,
    Step,
    UsageQuery,
    UsageReport,
    iso,
    parse_time,
)

Json = dict[str, Any]


def report_to_json(report: UsageReport) -> Json:
    q = report.query
    series = q.step is not Step.NONE
    return {"by": q.by.value, "since": iso(q.since), "until": iso(q.until),
            "step": q.step.value, "rows": [_row_json(r, series) for r in report.rows],
            "total": _row_json(report.total, series)}


def _row_json(row: ReportRow, series: bool) -> Json:
    out: Json = {"key": row.key, "tasks": row.tasks, "gpuSeconds": row.gpu_seconds,
                 "cpuSeconds": row.cpu_seconds, "memoryByteSeconds": row.memory_byte_seconds,
                 "wastedGpuSeconds": {"preempted": row.wasted.get(Outcome.PREEMPTED, 0.0),
                                      "failed": row.wasted.get(Outcome.FAILED, 0.0)}}
    if series:
        out["series"] = [{"start": iso(p.start), "gpuSeconds": p.gpu_seconds,
                          "cpuSeconds": p.cpu_seconds} for p in row.series]
    return out


def report_from_json(data: Mapping[str, Any]) -> UsageReport:
    """The report a server answered. Raises ValueError (or KeyError, TypeError) on JSON of
    another shape."""
    query = UsageQuery(GroupBy(data["by"]), parse_time(data["since"], "since"),
                       parse_time(data["until"], "until"), Step(data["step"]))
    return UsageReport(query, tuple(_row_of(r) for r in data["rows"]), _row_of(data["total"]))


def _row_of(data: Mapping[str, Any]) -> ReportRow:
    wasted = data.get("wastedGpuSeconds") or {}
    return ReportRow(
        str(data["key"]), int(data["tasks"]), float(data["gpuSeconds"]),
        float(data["cpuSeconds"]), float(data["memoryByteSeconds"]),
        {Outcome.PREEMPTED: float(wasted.get("preempted", 0.0)),
         Outcome.FAILED: float(wasted.get("failed", 0.0))},
        tuple(SeriesPoint(parse_time(p["start"], "start"), float(p["gpuSeconds"]),
                          float(p["cpuSeconds"])) for p in data.get("series") or ()))


CSV_COLUMNS = ("key", "tasks", "gpu_seconds", "cpu_seconds", "memory_byte_seconds",
               "wasted_preempted_gpu_seconds", "wasted_failed_gpu_seconds")
CSV_SERIES_COLUMNS = ("key", "start", "gpu_seconds", "cpu_seconds")


def report_csv(report: UsageReport) -> str:
    """One line per key and the total; with a step, one line per key and period instead
    (periods without usage left out)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    rows = (*report.rows, report.total)
    if report.query.step is Step.NONE:
        writer.writerow(CSV_COLUMNS)
        for r in rows:
            writer.writerow((r.key, r.tasks, r.gpu_seconds, r.cpu_seconds,
                             r.memory_byte_seconds, r.wasted.get(Outcome.PREEMPTED, 0.0),
                             r.wasted.get(Outcome.FAILED, 0.0)))
    else:
        writer.writerow(CSV_SERIES_COLUMNS)
        for r in rows:
            for p in r.series:
                writer.writerow((r.key, iso(p.start), p.gpu_seconds, p.cpu_seconds))
    return buffer.getvalue()
