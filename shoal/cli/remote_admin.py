"""The client verbs about the cluster and accounts: `nodes`, `vc list|tree|create`, `pc list`,
`flavors list|create`, `user add`, `login` and `whoami` (listed in `shoal.cli.main.COMMANDS`;
`shoal.cli.remote`'s docstring lists the exit codes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypeVar

import typer
from rich.table import Table

from shoal.api.defaults import DEFAULT_QUEUE
from shoal.cli.config import (
    ConfigError,
    ConfigFile,
    config_path,
    read_config,
    read_token_file,
    write_config,
)
from shoal.cli.remote_render import (
    nodes_table,
    priority_classes_table,
    resource_flavors_table,
    virtual_clusters_table,
)
from shoal.cli.remote_support import (
    USAGE_ERROR,
    Format,
    OutputOption,
    ServerOption,
    TokenOption,
    emit,
    err,
    fail,
    out,
    remote,
    settings_of,
)

if TYPE_CHECKING:
    from shoal.client import ShoalClient, UserView

vc_app = typer.Typer(help="Virtual clusters (queues): list, tree, create, update, delete.",
                     no_args_is_help=True)
pc_app = typer.Typer(help="Priority classes: list, create, update, delete.",
                     no_args_is_help=True)
flavors_app = typer.Typer(help="Resource flavors (node pools by label): list, create.",
                          no_args_is_help=True)
user_app = typer.Typer(help="Users: add, list, update, delete, token, revoke (admins only).",
                       no_args_is_help=True)

View = TypeVar("View", bound="Listed")


class Listed(Protocol):
    """A view the API sent: `raw` is its JSON, what `-o json|yaml` prints."""

    @property
    def raw(self) -> Any: ...


def show(server: str | None, token: str | None, output: Format,
         fetch: Callable[[ShoalClient], Sequence[View]],
         table: Callable[[Sequence[View]], Table]) -> None:
    """Ask the server for views and print them as a table, or their JSON as JSON or YAML."""
    def action(shoal: ShoalClient) -> None:
        found = fetch(shoal)
        if output.tabular:
            out(output).print(table(found))
        else:
            emit(output, [view.raw for view in found])
    remote(server, token, action)


def nodes(output: OutputOption = Format.TABLE, server: ServerOption = None,
          token: TokenOption = None) -> None:
    """List the cluster's nodes: state (Ready, NotReady and why, Cordoned), labels,
    capacity, what is allocatable."""
    show(server, token, output, lambda shoal: shoal.nodes(), nodes_table)


@vc_app.command("list")
def vc_list(output: OutputOption = Format.TABLE, server: ServerOption = None,
            token: TokenOption = None) -> None:
    """List the virtual clusters with their min, max, weight and policy."""
    show(server, token, output, lambda shoal: shoal.virtual_clusters(),
         virtual_clusters_table)


@vc_app.command("tree")
def vc_tree_command(output: OutputOption = Format.TABLE, server: ServerOption = None,
                    token: TokenOption = None) -> None:
    """Draw the virtual-cluster tree: per virtual cluster what it uses, is guaranteed,
    borrows and could still take, and its jobs."""
    def action(shoal: ShoalClient) -> None:
        root, found = shoal.cluster(), shoal.virtual_clusters()
        if DEFAULT_QUEUE not in {vc.name for vc in found}:  # implicit, so not listed
            found.append(shoal.virtual_cluster(DEFAULT_QUEUE))
        if output.tabular:
            from shoal.cli.vc_tree import vc_tree  # and the quantities' parsing: here only

            out(output).print(vc_tree(root, found))
        else:
            emit(output, {"cluster": root.raw, "virtualClusters": [v.raw for v in found]})
    remote(server, token, action)


@vc_app.command("create")
def vc_create(
    file: Annotated[Path, typer.Argument(help="shoal/v1 VirtualCluster documents (YAML).",
                                         show_default=False)],
    output: OutputOption = Format.TABLE, server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Create virtual clusters (admins only)."""
    show(server, token, output, lambda shoal: shoal.create_virtual_clusters(file),
         virtual_clusters_table)


@pc_app.command("list")
def pc_list(output: OutputOption = Format.TABLE, server: ServerOption = None,
            token: TokenOption = None) -> None:
    """List the priority classes in effect (stored and built-in), lowest first."""
    show(server, token, output, lambda shoal: shoal.priority_classes(),
         priority_classes_table)


@flavors_app.command("list")
def flavors_list(output: OutputOption = Format.TABLE, server: ServerOption = None,
                 token: TokenOption = None) -> None:
    """List the resource flavors: the node labels that make a node one of them, and how
    many nodes they match now."""
    show(server, token, output, lambda shoal: shoal.resource_flavors(),
         resource_flavors_table)


@flavors_app.command("create")
def flavors_create(
    file: Annotated[Path, typer.Argument(help="shoal/v1 ResourceFlavor documents (YAML).",
                                         show_default=False)],
    output: OutputOption = Format.TABLE, server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Create resource flavors (admins only); virtual clusters may then give quota on them."""
    show(server, token, output, lambda shoal: shoal.create_resource_flavors(file),
         resource_flavors_table)


@user_app.command("add")
def user_add(
    name: Annotated[str, typer.Argument(help="The new user's name.", show_default=False)],
    queue: Annotated[list[str] | None, typer.Option(
        "--queue", "-q", help="A queue the user may submit to (repeat for more).",
        show_default=False)] = None,
    admin: Annotated[bool, typer.Option("--admin", help="Make the user an admin.")] = False,
    output: OutputOption = Format.TABLE, server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Create a user (admins only) and print their token: the only time it is shown."""
    def action(shoal: ShoalClient) -> None:
        created = shoal.create_user(name, queue or [], admin)
        if not output.tabular:
            emit(output, created.raw)
            return
        # The token alone on stdout, so that `TOKEN=$(shoal user add …)` works.
        err.print(f"created {_describe(created)}; their token (shown only now):")
        out().print(created.token or "")
    remote(server, token, action)


def _describe(user: UserView) -> str:
    role = "admin" if user.admin else "user"
    queues = ", ".join(user.queues) or "none"
    return f"{role} {user.name!r} (queues: {queues})"


def login(
    server: ServerOption = None,
    token: TokenOption = None,
    token_file: Annotated[Path | None, typer.Option(
        "--token-file", help="Read the token from this file (e.g. .shoal/admin.token).",
        show_default=False)] = None,
) -> None:
    """Check a token against the server and save both for later commands.

    The config file (mode 0600) is $SHOAL_CONFIG, else $XDG_CONFIG_HOME/shoal/config.yaml,
    else ~/.config/shoal/config.yaml. Without --token or --token-file, asks for the token.
    No login is needed on the machine where `shoal up` runs: commands run from its
    directory use ./.shoal/admin.token for a local server.
    """
    if token is not None and token_file is not None:
        raise fail("give --token or --token-file, not both", USAGE_ERROR)
    if token_file is not None:
        try:
            token = read_token_file(token_file)
        except ConfigError as exc:
            raise fail(str(exc), USAGE_ERROR) from None
    if token is None:
        token = str(typer.prompt("Token", hide_input=True)).strip()

    def action(shoal: ShoalClient) -> None:
        user = shoal.me()
        path = config_path()
        # A timeout saved in the file stays: login changes the server and token only.
        kept = read_config(path).timeout
        write_config(path, ConfigFile(shoal.url, shoal.token, kept))
        out().print(f"logged in to {shoal.url} as {_describe(user)}; saved to {path}")
    remote(server, token, action)


def whoami(output: OutputOption = Format.TABLE, server: ServerOption = None,
           token: TokenOption = None) -> None:
    """Who the server takes you for, and where the server URL and token came from."""
    settings = settings_of(server, token)

    def action(shoal: ShoalClient) -> None:
        user = shoal.me()
        if not output.tabular:
            emit(output, {**user.raw, "server": shoal.url,
                          "tokenFrom": settings.token_from.value})
            return
        out().print(f"{_describe(user)} on {shoal.url} "
                    f"(token from the {settings.token_from})")
    remote(server, token, action)
