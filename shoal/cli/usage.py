"""`shoal usage`: the usage report of a server (`GET /api/v1/usage`) as a table, JSON or
CSV. Client side only: typer and `shoal.client`; the times are checked here first, so a
bad one is named by its option before any request."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from shoal.api.accounting import AccountingError, GroupBy, Outcome, Step, iso, parse_time
from shoal.cli.remote_support import USAGE_ERROR, ServerOption, TokenOption, fail, out, remote

if TYPE_CHECKING:
    from rich.table import Table

    from shoal.api.accounting import UsageReport
    from shoal.client import ShoalClient


class UsageFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    CSV = "csv"


def _time(text: str | None, option: str) -> str | None:
    if text is None:
        return None
    try:
        return iso(parse_time(text, option))
    except AccountingError as exc:
        raise fail(exc.message, USAGE_ERROR) from None


def usage(
    by: Annotated[GroupBy, typer.Option("--by", help="Group rows by this.")] = GroupBy.QUEUE,
    since: Annotated[str | None, typer.Option(
        "--since", help="Start: an ISO 8601 date or time (UTC without an offset), e.g. "
                        "2026-11-01 or 2026-11-01T08:00:00+01:00. Default: a week before "
                        "--until.", show_default=False)] = None,
    until: Annotated[str | None, typer.Option(
        "--until", help="End (excluded), as --since. Default: now.", show_default=False)]
    = None,
    step: Annotated[Step, typer.Option("--step", help="A series per row: none, hour, day.")]
    = Step.NONE,
    output: Annotated[UsageFormat, typer.Option("--output", "-o", help="table, json (the "
                                                "server's answer) or csv.")]
    = UsageFormat.TABLE,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Resource usage (GPU-, CPU- and memory-hours) of ended task attempts, by queue, user,
    GPU type, node or job; preempted and failed attempts' GPU-hours shown apart as wasted."""
    start, end = _time(since, "--since"), _time(until, "--until")

    def action(shoal: ShoalClient) -> None:
        view = shoal.usage(by=by.value, since=start, until=end, step=step.value)
        if output is UsageFormat.JSON:
            import json
            sys.stdout.write(json.dumps(view.raw, indent=2) + "\n")
        elif output is UsageFormat.CSV:
            from shoal.api.accounting_io import report_csv
            sys.stdout.write(report_csv(view.report))
        else:
            out().print(usage_table(view.report))
    remote(server, token, action)


def usage_table(report: UsageReport) -> Table:
    from rich.table import Table

    q = report.query
    table = Table(title=f"usage by {q.by.value}, {iso(q.since)} to {iso(q.until)}",
                  title_justify="left")
    table.add_column(q.by.value.upper())
    for name in ("TASKS", "GPU-H", "CPU-H", "MEM GiB-H", "WASTED PREEMPTED GPU-H",
                 "WASTED FAILED GPU-H"):
        table.add_column(name, justify="right")
    for i, row in enumerate((*report.rows, report.total)):
        table.add_row(row.key or "-", str(row.tasks), _hours(row.gpu_seconds),
                      _hours(row.cpu_seconds), _hours(row.memory_byte_seconds / 2**30),
                      _hours(row.wasted.get(Outcome.PREEMPTED, 0.0)),
                      _hours(row.wasted.get(Outcome.FAILED, 0.0)),
                      end_section=i == len(report.rows) - 1)
    return table


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:,.2f}"
