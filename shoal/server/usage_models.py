"""The JSON of `GET /api/v1/usage` (issue 21's usage accounting), as pydantic models, and
the conversion from `shoal.api.accounting`'s report. camelCase like `shoal.server.models`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from shoal.api.accounting import Outcome, ReportRow, UsageReport, iso


class _Out(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class WastedOut(_Out):
    """GPU-seconds of attempts whose work was lost, by why (also in `gpuSeconds`)."""

    preempted: float
    failed: float


class SeriesPointOut(_Out):
    start: str
    """The period's first instant (UTC)."""
    gpu_seconds: float = Field(alias="gpuSeconds")
    cpu_seconds: float = Field(alias="cpuSeconds")


class UsageRowOut(_Out):
    key: str
    """The queue, user, GPU type ('' for nodes without a `gpu-type` label), node or job;
    `total` for the total."""
    tasks: int
    """Task attempts that ended in the span."""
    gpu_seconds: float = Field(alias="gpuSeconds")
    cpu_seconds: float = Field(alias="cpuSeconds")
    """Core-seconds."""
    memory_byte_seconds: float = Field(alias="memoryByteSeconds")
    wasted_gpu_seconds: WastedOut = Field(alias="wastedGpuSeconds")
    series: list[SeriesPointOut] | None = None
    """Per hour or day (`step`), only the periods with usage; absent with `step=none`."""


class UsageOut(_Out):
    by: str
    since: str
    until: str
    step: str
    rows: list[UsageRowOut]
    total: UsageRowOut


def usage_out(report: UsageReport) -> UsageOut:
    q = report.query
    series = q.step.value != "none"
    return UsageOut(by=q.by.value, since=iso(q.since), until=iso(q.until), step=q.step.value,
                    rows=[_row(r, series) for r in report.rows],
                    total=_row(report.total, series))


def _row(row: ReportRow, series: bool) -> UsageRowOut:
    return UsageRowOut(
        key=row.key, tasks=row.tasks, gpu_seconds=row.gpu_seconds, cpu_seconds=row.cpu_seconds,
        memory_byte_seconds=row.memory_byte_seconds,
        wasted_gpu_seconds=WastedOut(preempted=row.wasted.get(Outcome.PREEMPTED, 0.0),
                                     failed=row.wasted.get(Outcome.FAILED, 0.0)),
        series=[SeriesPointOut(start=iso(p.start), gpu_seconds=p.gpu_seconds,
                               cpu_seconds=p.cpu_seconds) for p in row.series]
        if series else None)
