"""The `shoal` command line.

Commands import what their work needs inside their bodies (`schedule`, `schema`; `up` and
`sim` in their modules): typer reads every command's signature to run any one of them, and
a `shoal submit` or `shoal jobs` must not pay for the scheduler, the spec's validation, the
store or the server (tests/cli/test_light_imports.py holds it to that).

Every error a user can cause — a bad spec, a bad profile, a missing file — is printed as a
clear message on stderr with exit code 2; a traceback is always a bug in Shoal.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from shoal import __version__
from shoal.cli.option_defaults import BUILTIN_PROFILE_NAMES
from shoal.cli.remote import register as register_remote
from shoal.cli.sim import sim_app
from shoal.cli.up import up

app = typer.Typer(
    name="shoal",
    help="Shoal schedules deep-learning jobs: gangs, virtual clusters, fair share, elasticity.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(sim_app, name="sim")
app.command(name="up")(up)
register_remote(app)


class Output(StrEnum):
    JSON = "json"
    TABLE = "table"


@app.command()
def schedule(
    files: Annotated[list[Path], typer.Argument(
        help="YAML files with Node, VirtualCluster, PriorityClass and Job documents.",
        show_default=False)],
    cycles: Annotated[int, typer.Option(
        "--cycles", "-n", min=1, help="Run at most this many cycles.")] = 10,
    output: Annotated[Output, typer.Option(
        "--output", "-o", help="json (stable, documented) or table.")] = Output.TABLE,
    profile: Annotated[str | None, typer.Option(
        "--profile", "-p",
        help=f"Built-in profile ({', '.join(sorted(BUILTIN_PROFILE_NAMES))}) or a profile file; "
             "default: the file's SchedulerProfile, else 'default'.")] = None,
) -> None:
    """Run scheduling cycles over a scenario and print binds, evictions and why jobs wait."""
    from shoal.cli.errors import user_errors
    from shoal.cli.profiles import load_profile
    from shoal.cli.render import render_schedule
    from shoal.scenario import run_scenario
    from shoal.spec import load_files
    from shoal.spec.limits import FILE_LIMITS

    def run() -> None:
        bundle = load_files(files, limits=FILE_LIMITS)
        chosen = load_profile(profile) if profile else None
        result = run_scenario(bundle, chosen, cycles)
        if output is Output.JSON:
            sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
        else:
            render_schedule(Console(), result)
    user_errors(run)


@app.command()
def schema() -> None:
    """Print the JSON Schema of Shoal's YAML documents."""
    from shoal.spec import schema_text

    sys.stdout.write(schema_text())


@app.command()
def version() -> None:
    """Print Shoal's version."""
    typer.echo(__version__)


def main() -> None:  # pragma: no cover - console entry point
    app()
