"""The `shoal` command line: where each command and command group is declared
(`COMMANDS`), the whole app built from them (`app`, on first use), and `main`, which builds
only the one a command line names.

`shoal NAME …` imports the module that declares NAME and no other: a `shoal submit` or
`shoal jobs` must not pay for the other commands' modules, let alone the scheduler, the
spec's validation, the store or the server (tests/cli/test_light_imports.py holds it to
that); commands import what their work needs inside their bodies. Help, usage and errors
read as in the whole app (tests/cli/test_cli.py compares them for every command).

Every error a user can cause — a bad spec, a bad profile, a missing file — is printed as a
clear message on stderr with exit code 2; a traceback is always a bug in Shoal.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from dataclasses import dataclass
from functools import cache

import typer

#: The help panel of the verbs that talk to a server.
SERVER_PANEL = "Talking to a server"
HELP = "Shoal schedules deep-learning jobs: gangs, virtual clusters, fair share, elasticity."


@dataclass(frozen=True)
class Entry:
    """A top-level command (a function) or command group (a `typer.Typer`): the name typed,
    the module that declares it and its attribute there, and its panel in `shoal --help`."""

    name: str
    module: str
    attribute: str
    panel: str | None = None

    def add_to(self, app: typer.Typer, *, listed_only: bool = False) -> None:
        """Add it to `app`; `listed_only`: as `shoal --help` lists it — its name, help and
        panel — without its parameters or sub-commands."""
        found = getattr(importlib.import_module(self.module), self.attribute)
        if isinstance(found, typer.Typer):
            if listed_only:
                shell = typer.Typer()
                shell.info = found.info  # the group's help, and no commands
                found = shell
            # typer's own default where no panel is named (None is not quite its default)
            if self.panel is None:
                app.add_typer(found, name=self.name)
            else:
                app.add_typer(found, name=self.name, rich_help_panel=self.panel)
            return
        # the help typer reads from the docstring, given to a command without parameters
        help_, callback = (inspect.getdoc(found), _listed) if listed_only else (None, found)
        if self.panel is None:
            app.command(name=self.name, help=help_)(callback)
        else:
            app.command(name=self.name, help=help_, rich_help_panel=self.panel)(callback)


def _server(name: str, module: str, attribute: str | None = None) -> Entry:
    return Entry(name, f"shoal.cli.{module}", attribute or name, SERVER_PANEL)


#: Every top-level command and group, in the order `shoal --help` lists them. The `vc`,
#: `pc` and `user` groups are declared in `remote_admin` and given more verbs by
#: `remote_changes`, which is named here so that both load.
COMMANDS = (
    Entry("sim", "shoal.cli.sim", "sim_app"),
    Entry("mc", "shoal.cli.multicluster", "mc_app"),
    Entry("up", "shoal.cli.up", "up"),
    *(_server(name, "remote") for name in ("submit", "jobs", "get", "cancel", "delete",
                                           "logs")),
    *(_server(name, "remote_admin") for name in ("nodes", "login", "whoami")),
    _server("usage", "usage"),
    _server("vc", "remote_changes", "vc_app"),
    _server("pc", "remote_changes", "pc_app"),
    _server("flavors", "remote_admin", "flavors_app"),
    _server("user", "remote_changes", "user_app"),
    _server("node", "remote_changes", "node_app"),
    _server("job", "remote_changes", "job_app"),
    _server("audit", "remote_changes"),
    *(_server(name, "job_controls") for name in ("hold", "release", "requeue")),
    Entry("schedule", "shoal.cli.offline", "schedule"),
    Entry("schema", "shoal.cli.offline", "schema"),
    Entry("version", "shoal.cli.offline", "version"),
)


def _bare() -> typer.Typer:
    light_coercion()
    return typer.Typer(name="shoal", help=HELP, no_args_is_help=True, add_completion=False,
                       pretty_exceptions_enable=False)


@cache
def whole_app() -> typer.Typer:
    """The `shoal` app with every command."""
    whole = _bare()
    for entry in COMMANDS:
        entry.add_to(whole)
    return whole


@cache
def listing() -> typer.Typer:
    """The `shoal` app as `shoal` and `shoal --help` show it: every command and group by
    name, help and panel, without their parameters or sub-commands, which typer would
    otherwise read (the signatures of some 50 commands, half of a `shoal --help`). `main`
    runs it only for a command line that names no command (tests/cli/test_cli.py checks
    that what it prints is what the whole app prints)."""
    listed = _bare()
    for entry in COMMANDS:
        entry.add_to(listed, listed_only=True)
    return listed


def _listed() -> None:
    """Stands for a command in `listing`, which never runs one."""


def only(name: str) -> typer.Typer | None:
    """The `shoal` app with its command or command group `name` alone, or None if it has
    none by that name: click's "lazily loading subcommands", done before typer is asked.
    typer turns every registered command into a click command before running one, and each
    command's module costs its imports; the one named on the command line is the only one
    a run can reach."""
    entries = [entry for entry in COMMANDS if entry.name == name]
    if not entries:
        return None
    narrow = _bare()
    entries[0].add_to(narrow)
    # A group, not a lone command: `shoal jobs` must still read `jobs` as the command.
    narrow.callback()(_group)
    return narrow


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


def __getattr__(name: str) -> typer.Typer:
    # `app`, built on first use (PEP 562): importing this module for `main` loads no command.
    if name == "app":
        return whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def app_for(args: list[str]) -> typer.Typer:
    """The app that runs `shoal ARGS…`: the command or group named first alone; `listing`
    where no argument names one (`shoal`, `shoal --help`, a mistyped name, whose error
    suggests the names close to it); else (`shoal -- jobs`) the whole app."""
    narrow = only(args[0]) if args else None
    if narrow is not None:
        return narrow
    names = {entry.name for entry in COMMANDS}
    return whole_app() if names.intersection(args) else listing()


def skip_attrs() -> None:
    """Keep rich from loading attrs for its pretty-printer (which typer's help imports
    with rich's tracebacks, a twentieth of a `shoal --help`), an import rich does without
    by design where attrs is not installed. Only for `listing`, which prints help or an
    error and exits: other commands may load libraries that need attrs."""
    sys.modules.setdefault("attr", None)  # type: ignore[arg-type]


def main() -> None:  # pragma: no cover - console entry point
    app = app_for(sys.argv[1:])
    if listing.cache_info().currsize and app is listing():  # asked only once it is built
        skip_attrs()
    app()
