"""`shoal mc clusters|submit|get|stop|logs` (issue 19): the super scheduler's verbs, against
a `shoal up` (its members from `--clusters`, or declared by admins: `shoal.cli.mc_admin`).
Client verbs: they load the client and httpx only when they run, never the server, the
store, the spec or the scheduler — the server checks a submitted job (and answers with field
paths).

`shoal mc get NAME` prints the job's state, round and kept member, then one row per copy:
its cluster, remote id, state (and the member's own word for it), when it ran and ended,
and why it was kept or cancelled.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from shoal.cli.remote_support import (
    Format,
    OutputOption,
    ServerOption,
    TokenOption,
    emit,
    out,
    remote,
)

if TYPE_CHECKING:
    from shoal.client import ShoalClient
    from shoal.client.multicluster import McJobView

NameArg = Annotated[str, typer.Argument(help="The multi-cluster job's name.",
                                        show_default=False)]


def _when(t: float | None) -> str:
    return "-" if t is None else time.strftime("%H:%M:%S", time.localtime(t))


def _table(*columns: str) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def print_job(fmt: Format, job: McJobView) -> None:
    if not fmt.tabular:
        emit(fmt, job.raw)
        return
    console = out(fmt)
    console.print(f"{job.name} ({job.policy}): {job.state}, round {job.round}, kept "
                  f"{job.kept or '-'}{' (stop requested)' if job.stop_requested else ''}")
    console.print(f"  {job.reason}")
    table = _table("CLUSTER", "ROUND", "REMOTE ID", "STATE", "MEMBER STATE", "RUNNING SINCE",
                   "ENDED", "VERDICT", "WHY")
    for c in job.copies:
        why = c.why or (f"error: {c.last_error}" if c.last_error else "")
        table.add_row(c.cluster, str(c.round), c.remote_id or "-", c.state,
                      c.member_state or "-", _when(c.running_since), _when(c.ended_at),
                      c.verdict or "-", why)
    console.print(table)


def clusters(output: OutputOption = Format.TABLE, server: ServerOption = None,
             token: TokenOption = None) -> None:
    """The super scheduler's member clusters, and whether each answered lately."""
    def action(shoal: ShoalClient) -> None:
        members = shoal.member_clusters()
        if not output.tabular:
            emit(output, [m.raw for m in members])
            return
        table = _table("ALIAS", "KIND", "URI", "GPU TYPE", "PRIORITY", "DECLARED", "REACHABLE",
                       "LAST ERROR")
        for m in members:
            reachable = "?" if m.reachable is None else ("yes" if m.reachable else "DOWN")
            table.add_row(m.alias, m.kind, m.uri, m.gpu_type or "-", str(m.priority),
                          m.declared, reachable, m.last_error or "")
        out(output).print(table)
    remote(server, token, action)


def submit(
    file: Annotated[Path, typer.Argument(
        help="A multi-cluster job: OpenPAI's protocolVersion: super-2, or shoal/v1 "
             "MultiClusterJob (YAML or JSON).", show_default=False)],
    output: OutputOption = Format.TABLE,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Submit a multi-cluster job to the super scheduler; prints its name."""
    def action(shoal: ShoalClient) -> None:
        job = shoal.submit_multicluster(file)
        if output.tabular:
            out(output).print(job.name)
        else:
            emit(output, job.raw)
    remote(server, token, action)


def get(name: NameArg, output: OutputOption = Format.TABLE, server: ServerOption = None,
        token: TokenOption = None) -> None:
    """A multi-cluster job: its state, kept member and each copy, with why it was kept or
    cancelled."""
    def action(shoal: ShoalClient) -> None:
        print_job(output, shoal.multicluster_job(name))
    remote(server, token, action)


def jobs(output: OutputOption = Format.TABLE, server: ServerOption = None,
         token: TokenOption = None) -> None:
    """Your multi-cluster jobs (an admin: everyone's)."""
    def action(shoal: ShoalClient) -> None:
        found = shoal.multicluster_jobs()
        if not output.tabular:
            emit(output, [j.raw for j in found])
            return
        table = _table("NAME", "OWNER", "POLICY", "STATE", "ROUND", "KEPT", "REASON")
        for j in found:
            table.add_row(j.name, j.owner, j.policy, j.state, str(j.round), j.kept or "-",
                          j.reason)
        out(output).print(table)
    remote(server, token, action)


def stop(name: NameArg, output: OutputOption = Format.TABLE, server: ServerOption = None,
         token: TokenOption = None) -> None:
    """Stop a multi-cluster job: every copy is cancelled on its member."""
    def action(shoal: ShoalClient) -> None:
        job = shoal.stop_multicluster(name)
        if output.tabular:
            out(output).print(f"multi-cluster job {job.name}: stop requested; each copy is "
                              "cancelled on its member")
        else:
            emit(output, job.raw)
    remote(server, token, action)


def logs(name: NameArg, limit: Annotated[int, typer.Option(
        "--limit", min=1, max=1 << 20, help="The most bytes of the tail shown.")] = 64 * 1024,
         server: ServerOption = None, token: TokenOption = None) -> None:
    """The tail of the kept copy's log, read through its member."""
    def action(shoal: ShoalClient) -> None:
        text = shoal.multicluster_logs(name, limit)
        out().print(text, end="" if text.endswith("\n") else "\n", markup=False)
    remote(server, token, action)


def register(app: typer.Typer) -> None:
    for name, command in (("clusters", clusters), ("submit", submit), ("get", get),
                          ("jobs", jobs), ("stop", stop), ("cancel", stop), ("logs", logs)):
        app.command(name=name)(command)
