"""`shoal schedule`, `shoal schema` and `shoal version`: the commands that work on files and
need no server. Each imports its work when it runs (the scheduler, the spec's validation),
not when `shoal` starts."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from shoal import __version__
from shoal.cli.option_defaults import BUILTIN_PROFILE_NAMES


class Output(StrEnum):
    JSON = "json"
    TABLE = "table"


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
    from rich.console import Console

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


def schema() -> None:
    """Print the JSON Schema of Shoal's YAML documents."""
    from shoal.spec import schema_text

    sys.stdout.write(schema_text())


def version() -> None:
    """Print Shoal's version."""
    typer.echo(__version__)

