"""`shoal mc`: multi-cluster jobs (seed 000) — `validate` a `super-2` or `MultiClusterJob`
file, and `specialise` it into one member's copy. One line per command at the bottom adds a
command to the group.

Both commands work offline, on the file alone: they load the spec layer (when they run, not
when `shoal` starts) and never the server, the store, the control plane or the scheduler.
Every error a user can cause is a message on stderr and exit code 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from shoal.cli import mc_remote
from shoal.cli.mc_admin import cluster_app
from shoal.cli.mc_sim import mc_sim

if TYPE_CHECKING:
    from shoal.spec.multicluster import MultiClusterJob

mc_app = typer.Typer(help="Multi-cluster jobs (seed 000): OpenPAI super-2 and Shoal's "
                          "MultiClusterJob.", no_args_is_help=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

#: Exit code for errors in what the user gave, as the other offline commands use.
USAGE_ERROR = 2
T = TypeVar("T")


class DocFormat(StrEnum):
    YAML = "yaml"
    JSON = "json"


FileArg = Annotated[Path, typer.Argument(
    help="A multi-cluster job: OpenPAI's protocolVersion: super-2, or shoal/v1 "
         "MultiClusterJob (YAML).", show_default=False)]


def specialise(
    file: FileArg,
    cluster: Annotated[str, typer.Option(
        "--cluster", "-c", help="The member's alias, as the job's clusters name it.",
        show_default=False)],
    output: Annotated[DocFormat, typer.Option(
        "--output", "-o", help="yaml or json.")] = DocFormat.YAML,
    show_secrets: Annotated[bool, typer.Option(
        "--show-secrets", help="Print the secrets the copy keeps; by default each is "
                               "<hidden>.")] = False,
) -> None:
    """Print the job as member CLUSTER gets it: every <% $mcc.x %> replaced, renamed
    <name>-<alias>, protocolVersion '2', only that member's token-<alias> kept."""
    def run() -> None:
        from shoal.spec.multicluster_read import read_multicluster_file
        from shoal.spec.specialise import specialise as make_copy
        from shoal.spec.specialise import specialise_document

        job = read_multicluster_file(file)
        make_copy(job, cluster)  # refuses a copy that is no valid job of its format
        data = specialise_document(job, cluster).with_secrets(shown=show_secrets)
        sys.stdout.write(_dump(data, output))
    _user_errors(run)


def validate(file: FileArg) -> None:
    """Check a multi-cluster job and every member's copy of it; print its members, policy,
    times and each parameter's value per member."""
    def run() -> None:
        from shoal.spec import SpecError
        from shoal.spec.multicluster_read import read_multicluster_file
        from shoal.spec.specialise import all_copies_problems

        job = read_multicluster_file(file)
        console = Console(highlight=False, soft_wrap=True)
        if not console.is_terminal:  # a pipe gets whole lines, not a wrapped table
            console.width = 1000
        _show(console, job)
        issues = all_copies_problems(job)
        if issues:
            raise SpecError(issues)
        what = "an OpenPAI protocol v2" if job.form.document_kind == "openpai-v2" else "a Shoal"
        console.print(f"valid: each of the {len(job.members)} members' copies is {what} job")
    _user_errors(run)


def _show(console: Console, job: MultiClusterJob) -> None:
    console.print(f"{job.name} ({job.kind_label}): policy {job.policy.value}, guard time "
                  f"{_seconds(job.guard_time_running_s)}, time scale "
                  f"{_seconds(job.time_scale_s)}")
    members = _table("MEMBER", "URI", "USER", "PRIORITY", "COPY")
    for m in job.members:
        members.add_row(m.alias, m.uri, m.user or "-",
                        "-" if m.priority is None else str(m.priority), job.copy_name(m.alias))
    console.print(members)
    if job.params:
        params = _table("PARAM", *job.aliases)
        for p in job.params:
            params.add_row(p.name, *(json.dumps(p.value(a), ensure_ascii=False)
                                     for a in job.aliases))
        console.print(params)


def _table(*columns: str) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _seconds(seconds: float) -> str:
    whole = int(seconds)
    if whole == seconds and whole % 60 == 0:
        return f"{whole // 60}m ({whole}s)"
    return f"{seconds:g}s"


def _dump(data: Any, output: DocFormat) -> str:
    if output is DocFormat.JSON:
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    import yaml

    text: str = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return text


def _user_errors(action: Callable[[], T]) -> T:
    from shoal.spec import SpecError

    try:
        return action()
    except SpecError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
    except OSError as exc:
        what = f"{exc.strerror or exc}: {exc.filename or ''}"
        err.print(f"[bold red]error:[/] {escape(what)}")
    raise typer.Exit(USAGE_ERROR)


mc_app.command(name="specialise")(specialise)
mc_app.command(name="validate")(validate)
mc_app.command(name="sim")(mc_sim)
mc_remote.register(mc_app)
mc_app.add_typer(cluster_app, name="cluster")
