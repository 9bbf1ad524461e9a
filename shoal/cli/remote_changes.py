"""The client verbs that change or delete what exists (issue 21, admins only): `vc update|
delete`, `pc create|update|delete`, `user list|update|delete|token|revoke`, `node cordon|
uncordon|drain`, `job set-priority` and `audit` (listed in `shoal.cli.main.COMMANDS`;
`shoal.cli.remote`'s docstring lists the exit codes). Importing it adds its verbs to the
`vc`, `pc` and `user` groups of `remote_admin`. Client side only: nothing of the server is
imported."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from shoal.cli.remote_admin import pc_app, show, user_app, vc_app
from shoal.cli.remote_render import priority_classes_table, virtual_clusters_table
from shoal.cli.remote_support import (
    Format,
    OutputOption,
    ServerOption,
    TokenOption,
    emit,
    err,
    out,
    remote,
)

if TYPE_CHECKING:
    from shoal.client import ShoalClient
    from shoal.client.admin import AuditEntryView
    from shoal.client.cluster_views import NodeView, UserView

node_app = typer.Typer(help="Nodes: cordon, uncordon, drain (admins only).",
                       no_args_is_help=True)
job_app = typer.Typer(help="Jobs: set-priority (admins only).", no_args_is_help=True)

FileOption = Annotated[Path, typer.Option("--file", "-f", help="shoal/v1 documents (YAML).",
                                          show_default=False)]
NameArgument = Annotated[str, typer.Argument(show_default=False)]


# ---- virtual clusters and priority classes ------------------------------------------------

@vc_app.command("update")
def vc_update(file: FileOption, output: OutputOption = Format.TABLE,
              server: ServerOption = None, token: TokenOption = None) -> None:
    """Replace virtual clusters with the documents of the file (admins only): quotas,
    weight, state (Open/Closed) take effect at the next cycle. An impossible tree is
    refused with the field."""
    show(server, token, output, lambda shoal: shoal.update_virtual_clusters(file),
         virtual_clusters_table)


@vc_app.command("delete")
def vc_delete(name: NameArgument,
              drain: Annotated[bool, typer.Option(
                  "--drain", help="Close it now and delete it once its last job has "
                                  "ended.")] = False,
              server: ServerOption = None, token: TokenOption = None) -> None:
    """Delete a virtual cluster (admins only); refused while jobs not ended or child
    clusters are in it, unless --drain."""
    def action(shoal: ShoalClient) -> None:
        shoal.delete_virtual_cluster(name, drain=drain)
        out().print(f"virtual cluster {name} is closed; it is deleted once its last job "
                    "has ended" if drain else f"virtual cluster {name} is deleted")
    remote(server, token, action)


@pc_app.command("create")
def pc_create(file: FileOption, output: OutputOption = Format.TABLE,
              server: ServerOption = None, token: TokenOption = None) -> None:
    """Create priority classes (admins only)."""
    show(server, token, output, lambda shoal: shoal.create_priority_classes(file),
         priority_classes_table)


@pc_app.command("update")
def pc_update(file: FileOption, output: OutputOption = Format.TABLE,
              server: ServerOption = None, token: TokenOption = None) -> None:
    """Replace stored priority classes (admins only); jobs of a class are ordered by its
    new value from the next cycle."""
    show(server, token, output, lambda shoal: shoal.update_priority_classes(file),
         priority_classes_table)


@pc_app.command("delete")
def pc_delete(name: NameArgument, server: ServerOption = None,
              token: TokenOption = None) -> None:
    """Delete a stored priority class (admins only); refused while jobs not ended use it."""
    def action(shoal: ShoalClient) -> None:
        shoal.delete_priority_class(name)
        out().print(f"priority class {name} is deleted")
    remote(server, token, action)


# ---- users --------------------------------------------------------------------------------

def users_table(users: Sequence[UserView]) -> Table:
    table = Table("NAME", "ADMIN", "QUEUES", box=None)
    for user in users:
        table.add_row(user.name, "yes" if user.admin else "", ", ".join(user.queues))
    return table


@user_app.command("list")
def user_list(output: OutputOption = Format.TABLE, server: ServerOption = None,
              token: TokenOption = None) -> None:
    """List the users, their rights and queues (admins only)."""
    show(server, token, output, lambda shoal: shoal.users(), users_table)


@user_app.command("update")
def user_update(
    name: NameArgument,
    admin: Annotated[bool | None, typer.Option(
        "--admin/--no-admin", help="Make the user an admin, or no longer one.",
        show_default=False)] = None,
    queues: Annotated[str | None, typer.Option(
        "--queues", help="The queues they may submit to, comma-separated (replaced; '' "
                         "for none).", show_default=False)] = None,
    output: OutputOption = Format.TABLE, server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Change a user's admin flag and/or queues (admins only); at once, for every token."""
    wanted = None if queues is None else [q.strip() for q in queues.split(",") if q.strip()]
    show(server, token, output,
         lambda shoal: [shoal.update_user(name, admin=admin, queues=wanted)], users_table)


@user_app.command("delete")
def user_delete(name: NameArgument, server: ServerOption = None,
                token: TokenOption = None) -> None:
    """Delete a user (admins only): their tokens stop working at once; their jobs stay."""
    def action(shoal: ShoalClient) -> None:
        shoal.delete_user(name)
        out().print(f"user {name} is deleted")
    remote(server, token, action)


@user_app.command("token")
def user_token(name: NameArgument, server: ServerOption = None,
               token: TokenOption = None) -> None:
    """Issue a new token for a user (admins only) and print it: the only time it is shown."""
    def action(shoal: ShoalClient) -> None:
        issued = shoal.issue_token(name)
        err.print(f"a new token for {name} (shown only now):")
        out().print(issued)
    remote(server, token, action)


@user_app.command("revoke")
def user_revoke(name: NameArgument, server: ServerOption = None,
                token: TokenOption = None) -> None:
    """Revoke every token of a user's own (admins only): refused from now on."""
    def action(shoal: ShoalClient) -> None:
        out().print(f"revoked {shoal.revoke_tokens(name)} token(s) of {name}")
    remote(server, token, action)


# ---- nodes and jobs -----------------------------------------------------------------------

def _node_verb(verb: str, help_text: str) -> None:
    def command(node: Annotated[str, typer.Argument(help="The node's name.",
                                                    show_default=False)],
                output: OutputOption = Format.TABLE, server: ServerOption = None,
                token: TokenOption = None) -> None:
        def action(shoal: ShoalClient) -> None:
            shown: NodeView = getattr(shoal, verb)(node)
            if not output.tabular:
                emit(output, shown.raw)
                return
            draining = " (draining)" if shown.draining else ""
            out().print(f"node {shown.name} is {shown.state.value}{draining}")
        remote(server, token, action)
    command.__doc__ = help_text
    node_app.command(verb)(command)


_node_verb("cordon", "Cordon a node (admins only): nothing new is placed on it.")
_node_verb("uncordon", "Make a cordoned or draining node schedulable again (admins only).")
_node_verb("drain", "Cordon a node and evict its tasks gracefully, each once its protectFor "
                    "has passed (admins only); their jobs run again elsewhere.")


@job_app.command("set-priority")
def set_priority(name: NameArgument,
                 priority_class: Annotated[str, typer.Argument(
                     metavar="CLASS", help="A priority class (shoal pc list).",
                     show_default=False)],
                 output: OutputOption = Format.TABLE, server: ServerOption = None,
                 token: TokenOption = None) -> None:
    """Give a pending or running job another priority class (admins only), from the next
    cycle: it may then preempt, or be preempted."""
    def action(shoal: ShoalClient) -> None:
        job = shoal.set_priority(name, priority_class)
        if output.tabular:
            out().print(f"job {job.name} has priority class {priority_class}")
        else:
            emit(output, job.raw)
    remote(server, token, action)


# ---- the audit log ------------------------------------------------------------------------

def audit_table(entries: tuple[AuditEntryView, ...]) -> Table:
    table = Table("ID", "AT", "ACTOR", "ACTION", "TARGET", "DETAIL", box=None)
    for e in entries:
        table.add_row(str(e.id), e.at, e.actor, e.action, e.target, e.detail)
    return table


def audit(limit: Annotated[int, typer.Option("--limit", min=1, max=1000,
                                             help="At most this many entries.")] = 50,
          after: Annotated[int | None, typer.Option(
              "--after", help="Entries older than this id (the last one shown).",
              show_default=False)] = None,
          actor: Annotated[str | None, typer.Option("--actor", help="Only this actor's.",
                                                    show_default=False)] = None,
          action: Annotated[str | None, typer.Option(
              "--action", help="Only this action (node.drain), or a prefix ending in "
                               "'.' (user.).", show_default=False)] = None,
          output: OutputOption = Format.TABLE, server: ServerOption = None,
          token: TokenOption = None) -> None:
    """Who changed what, and when (admins only): newest first."""
    def run(shoal: ShoalClient) -> None:
        page = shoal.audit(limit=limit, after=after, actor=actor, action=action)
        if output.tabular:
            out(output).print(audit_table(page.items))
        else:
            emit(output, [e.raw for e in page.items])
    remote(server, token, run)
