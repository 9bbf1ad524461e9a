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
from typer.models import CommandInfo

from shoal import __version__
from shoal.cli.job_controls import register as register_controls
from shoal.cli.multicluster import mc_app
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
app.add_typer(mc_app, name="mc")
app.command(name="up")(up)
register_remote(app)
register_controls(app)


class Output(StrEnum):
    JSON = "json"
    TABLE = "table"


@app.command()
def schedule(
    files: Annotated[list[Path], typer.Argument(
        help="YAML files with Node, VirtualCluster, PriorityClass and Job documents, and "
             "job files Shoal imports (Slurm batch scripts, OpenPAI and Ray jobs).",
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


def only(name: str) -> typer.Typer | None:
    """`app` with its command or command group `name` alone, or None if it has none by that
    name. typer turns every registered command into a click command before running one, and
    reading the 30-odd signatures costs a `shoal jobs` an eighth of its CPU; the one named
    on the command line is the only one a run can reach (click's "lazily loading
    subcommands", done before typer is asked). Help, usage and errors read the same."""
    commands = [c for c in app.registered_commands if _name(c) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if not commands and not groups:
        return None
    narrow = typer.Typer(name=app.info.name, help=app.info.help, no_args_is_help=True,
                         add_completion=False, pretty_exceptions_enable=False)
    narrow.registered_commands = commands
    narrow.registered_groups = groups
    # A group, not a lone command: `shoal jobs` must still read `jobs` as the command.
    narrow.callback()(_group)
    return narrow


def _name(command: CommandInfo) -> str:
    callback = command.callback
    named = command.name or (callback.__name__ if callback is not None else "")
    return named.lower().replace("_", "-")  # typer's own rule for a command's name


def _group() -> None:
    """Nothing to do before the command: the group's help is the app's (`help=`)."""


def light_coercion() -> bool:
    """Coerce parameters without pydantic where typer allows it (`shoal.cli.coercion`);
    False where this typer does not (its own path then, slower, never wrong)."""
    try:
        from shoal.cli.coercion import install
    except ImportError:  # a typer without the private names the hook reads
        return False
    return install()


def main() -> None:  # pragma: no cover - console entry point
    light_coercion()
    narrow = only(sys.argv[1]) if len(sys.argv) > 1 else None
    (narrow or app)()
