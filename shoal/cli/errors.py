"""How the offline commands (`schedule`, `up`) report what the user got wrong: a clear
message on stderr and exit code 2, never a traceback (a traceback is always a bug in Shoal).

It catches the spec's, the scheduler's and the snapshot's errors, so it loads those modules:
only those commands import it, when they run (the client verbs have `remote_support`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import typer
from rich.console import Console

from shoal.core.snapshot import SnapshotError
from shoal.scheduler.profile import ProfileError
from shoal.spec import SpecError

#: Exit code for errors in what the user gave (spec, profile, files).
USAGE_ERROR = 2

T = TypeVar("T")
# An error is never folded at the terminal's width: a path or a field in it is copied whole,
# and piped (no terminal) rich would fold it at 80 columns.
err = Console(stderr=True, soft_wrap=True)


def user_errors(action: Callable[[], T]) -> T:
    """Run `action`; turn user errors into a message and exit code 2."""
    try:
        return action()
    except (SpecError, ProfileError) as exc:
        err.print(f"[bold red]error:[/] {exc}", markup=True, highlight=False, soft_wrap=True)
    except SnapshotError as exc:
        err.print(f"[bold red]error:[/] inconsistent cluster state: {exc}", highlight=False)
    except OSError as exc:
        err.print(f"[bold red]error:[/] {exc.strerror or exc}: {exc.filename or ''}",
                  highlight=False)
    raise typer.Exit(USAGE_ERROR)
