"""Human-readable tables (rich) for the CLI's `--output table`."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from shoal.scenario import ScenarioResult


def render_schedule(console: Console, result: ScenarioResult) -> None:
    binds = Table(title="Binds", title_justify="left")
    for column in ("cycle", "task", "node", "gpus", "resources"):
        binds.add_column(column, overflow="fold", no_wrap=column == "task")
    for record in result.cycles:
        for b in record.binds:
            where = b.node if b.virtual_node is None else f"{b.node} ({b.virtual_node})"
            binds.add_row(str(record.cycle), str(b.task), where,
                          ",".join(map(str, b.gpus)) or "-", str(b.resources))
    if binds.row_count:
        console.print(binds)

    evictions = Table(title="Evictions", title_justify="left")
    for column in ("cycle", "task", "node", "reason"):
        evictions.add_column(column, overflow="fold", no_wrap=column == "task")
    for record in result.cycles:
        for e in record.evictions:
            evictions.add_row(str(record.cycle), str(e.task), e.node, e.reason)
    if evictions.row_count:
        console.print(evictions)

    resizes = Table(title="Resizes (elastic jobs, partial admissions)", title_justify="left")
    for column in ("cycle", "job", "group", "size", "reason"):
        resizes.add_column(column, overflow="fold", no_wrap=column == "job")
    for record in result.cycles:
        for r in record.resizes:
            resizes.add_row(str(record.cycle), r.job, r.group, str(r.replicas), r.reason)
    if resizes.row_count:
        console.print(resizes)

    if result.pending:
        pending = Table(title="Waiting jobs", title_justify="left")
        for column in ("job", "kind", "reason"):
            pending.add_column(column, overflow="fold", no_wrap=column == "job")
        for p in result.pending:
            pending.add_row(p.job, p.reason.kind.value, p.reason.message)
        console.print(pending)

    runs = sum(1 for j in result.jobs if j.state.value == "Running")
    state = "converged" if result.converged else "stopped at the cycle limit"
    console.print(f"{len(result.cycles)} cycle(s), {state}: {len(result.binds)} bind(s), "
                  f"{len(result.evictions)} eviction(s), {runs} job(s) running, "
                  f"{len(result.pending)} waiting.  Profile: {result.profile}.")
