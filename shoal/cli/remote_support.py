"""What the client verbs share: the `--server`/`--token`/`--output` options, running a verb
against the resolved server with every failure turned into a one-line message and an exit
code (documented in `shoal.cli.remote`), and printing data as tables, JSON or YAML.

`shoal.client` (and httpx under it) is imported when a verb runs, not with these modules:
`shoal --help` and the offline commands read every verb's signature and need neither; rich
is imported when something is printed with it (a table, an error), so `shoal submit` loads
none of it.

Tables fit the terminal they are shown on; written to a pipe or a file, or with `-o wide`,
they are laid out at their full width, never folded at 80 columns, so that `grep`, `awk`
and a pager see whole rows.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from enum import StrEnum
from functools import cache, cached_property
from typing import TYPE_CHECKING, Annotated, Any

import typer

from shoal.cli.config import ConfigError, Settings, resolve

if TYPE_CHECKING:
    from rich.console import Console

    from shoal.client import ShoalApiError, ShoalClient

#: Exit codes (see `shoal.cli.remote`).
JOB_FAILED = 1
USAGE_ERROR = 2
UNREACHABLE = 3
TIMED_OUT = 4
INTERRUPTED = 130

SERVER_HELP = ("Shoal server URL. Default: $SHOAL_SERVER, the config file written by "
               "`shoal login`, else http://127.0.0.1:8765.")
TOKEN_HELP = ("Bearer token. Default: $SHOAL_TOKEN, the config file written by `shoal login`, "
              "else ./.shoal/admin.token (written by `shoal up`; used for a local server only, "
              "so no login is needed where `shoal up` runs).")

ServerOption = Annotated[str | None, typer.Option(
    "--server", "-s", help=SERVER_HELP, show_default=False)]
TokenOption = Annotated[str | None, typer.Option(
    "--token", help=TOKEN_HELP, show_default=False)]


class Format(StrEnum):
    TABLE = "table"
    WIDE = "wide"
    JSON = "json"
    YAML = "yaml"

    @property
    def tabular(self) -> bool:
        """A table for people (`table` or `wide`), not the server's data."""
        return self in (Format.TABLE, Format.WIDE)


OutputOption = Annotated[Format, typer.Option(
    "--output", "-o", help="table (fitted to the terminal; full width in a pipe), wide (full "
                           "width always), or the server's JSON as json or yaml.")]

#: The width a table is laid out at when nothing should fold it: rich sizes a table to its
#: content up to the console's width, so this is "as wide as the rows are".
FULL_WIDTH = 1_000_000


class _Stderr:
    """Where messages and errors go: rich's console on stderr, made at the first message
    (rich is loaded by the commands that print with it, not by a `submit` that succeeds)."""

    @cached_property
    def console(self) -> Console:
        from rich.console import Console

        # Emoji codes are not replaced: what is printed is the server's data (names, reasons,
        # a task's `cause`), shown as it is — and rich's table of codes costs 5-10 ms.
        return Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

    def print(self, *objects: Any, **options: Any) -> None:
        self.console.print(*objects, **options)


err = _Stderr()


@cache
def _out_console() -> type[Console]:
    from rich.console import Console

    class Out(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            reader_left()

    return Out


def reader_left() -> None:
    """The reader of our pipe went away (`shoal jobs --watch | head`): stop, with exit code
    0, pointing stdout at /dev/null first so that the interpreter's last flush does not fail
    on the closed pipe (the recipe of Python's `signal` documentation)."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # not a real file (a test's capture)
        descriptor = None
    if descriptor is not None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, descriptor)
        os.close(devnull)
    raise typer.Exit(0)


def out(fmt: Format = Format.TABLE) -> Console:
    """A console on the current stdout (made per call: tests swap stdout): the terminal's
    width on a terminal, full width in a pipe or with `-o wide`."""
    console = _out_console()(highlight=False, soft_wrap=True, emoji=False)
    if fmt is Format.WIDE or not on_terminal(console):
        console.width = FULL_WIDTH
    return console


def say(text: str) -> None:
    """`text` as a line of stdout, as it is (a job's name): no console to load for it."""
    sys.stdout.write(f"{text}\n")


def on_terminal(console: Console) -> bool:
    """Whether the console writes to a terminal itself. Not rich's `is_terminal`, which
    `FORCE_COLOR` turns on: colours asked for in a CI log must not fold its tables at 80
    columns or redraw them in place."""
    isatty = getattr(console.file, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed file
        return False


def emit(fmt: Format, data: Any) -> None:
    """Print JSON-shaped data as JSON or YAML."""
    if fmt is Format.YAML:
        import yaml  # only here: loading it costs every command's start

        sys.stdout.write(yaml.safe_dump(data, sort_keys=False))
    else:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")


def fail(message: str, code: int) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", markup=True)
    return typer.Exit(code)


def settings_of(server: str | None, token: str | None) -> Settings:
    """The resolved server and token; a bad config file is a user error."""
    try:
        return resolve(server, token)
    except ConfigError as exc:
        raise fail(str(exc), USAGE_ERROR) from None


def skip_httpx_command_line() -> None:
    """Keep httpx from loading its own command line (`httpx._main`: click, pygments and
    rich's progress bars and syntax highlighting, a tenth of a `shoal jobs`' CPU), which
    its package imports unless that import fails — a failure it handles by design, for
    installs without its `cli` extra. This process is `shoal`'s, which never runs httpx's
    command line; a library user of `shoal.client` gets httpx untouched."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def remote(server: str | None, token: str | None,
           action: Callable[[ShoalClient], int | None]) -> None:
    """Run `action` with a client of the resolved server; exit with its code (0 if None)."""
    skip_httpx_command_line()
    from shoal.client import ShoalClient
    from shoal.client.plain_http import for_url

    settings = settings_of(server, token)
    # A command makes a few requests and exits: no connection pool (httpcore) to load for
    # a plain-HTTP server (`shoal.client.plain_http`).
    with ShoalClient(settings.server, settings.token, timeout=settings.timeout,
                     transport=for_url(settings.server)) as client:
        code = _guarded(settings, lambda: action(client))
    if code:
        raise typer.Exit(code)


def _guarded(settings: Settings, action: Callable[[], int | None]) -> int | None:
    from shoal.client import (
        ShoalApiError,
        ShoalConnectionError,
        ShoalError,
        ShoalServerTimeoutError,
        ShoalTimeoutError,
    )

    try:
        return action()
    except ShoalServerTimeoutError as exc:
        raise fail(f"{exc} (is it overloaded? SHOAL_TIMEOUT sets how long to wait)",
                   UNREACHABLE) from None
    except ShoalConnectionError as exc:
        raise fail(f"{exc} (is `shoal up` running there?)", UNREACHABLE) from None
    except ShoalApiError as exc:
        raise _api_failure(settings, exc) from None
    except ShoalTimeoutError as exc:
        raise fail(str(exc), TIMED_OUT) from None
    except (ShoalError, ConfigError) as exc:
        raise fail(str(exc), USAGE_ERROR) from None
    except BrokenPipeError:  # `shoal jobs -o json | head`; a table's console does the same
        reader_left()
        raise
    except OSError as exc:
        raise fail(f"{exc.strerror or exc}: {exc.filename or ''}", USAGE_ERROR) from None
    except KeyboardInterrupt:
        raise typer.Exit(INTERRUPTED) from None


def _api_failure(settings: Settings, exc: ShoalApiError) -> typer.Exit:
    if exc.status == 401:
        hint = ("no token found" if settings.token is None
                else f"the token (from the {settings.token_from}) was refused")
        return fail(f"{hint} by {settings.server}: run `shoal login`, set SHOAL_TOKEN or "
                    "pass --token", USAGE_ERROR)
    more = f" ({len(exc.errors)} errors)" if len(exc.errors) > 1 else ""
    code = USAGE_ERROR if exc.is_client_error else JOB_FAILED
    exit_ = fail(f"{exc.errors[0]}{more}", code)
    for item in exc.errors[1:]:
        err.print(f"[bold red]error:[/] {item}", markup=True)
    return exit_
