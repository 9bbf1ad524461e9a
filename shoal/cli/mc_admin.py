"""`shoal mc cluster add|set|remove` (issue 19): admins declare, change and remove the super
scheduler's member clusters through the API. Client verbs: httpx and the client only, never
the server, the store or the spec.

`add FILE` takes one `kind: Cluster` document as the clusters file writes it: a
`credentials.tokenFile` (relative to FILE) or `tokenEnv` is read HERE, on the admin's
machine, and the token sent in `credentials.token` — the server stores it sealed and never
reads a file or variable a caller names. `set` reads a token the same way (`--token-file`,
`--token-env`), never from the command line, where `ps` and the shell's history would show it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from shoal.cli.remote_support import (
    USAGE_ERROR,
    Format,
    OutputOption,
    ServerOption,
    TokenOption,
    emit,
    fail,
    out,
    remote,
)

if TYPE_CHECKING:
    from shoal.client import ShoalClient
    from shoal.client.multicluster import ClusterView

cluster_app = typer.Typer(help="Declare, change and remove member clusters through the API "
                               "(admins).", no_args_is_help=True)
AliasArg = Annotated[str, typer.Argument(help="The member's alias.", show_default=False)]
MAX_FILE_BYTES = 64 * 1024
MAX_TOKEN_BYTES = 16 * 1024


def _show(fmt: Format, cluster: ClusterView, what: str) -> None:
    if fmt.tabular:
        out(fmt).print(f"cluster {cluster.alias} {what}: {cluster.kind} {cluster.uri}, "
                       f"priority {cluster.priority}, GPU type {cluster.gpu_type or '-'}",
                       markup=False)
    else:
        emit(fmt, cluster.raw)


def read_token(path: Path | None, env: str | None, where: str) -> str | None:
    """The token of a file or an environment variable, read here; never quoted in an
    error."""
    if path is not None and env is not None:
        raise fail(f"{where}: give a token file or a variable, not both", USAGE_ERROR)
    if path is not None:
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_TOKEN_BYTES + 1)
        except OSError as exc:
            raise fail(f"{where}: cannot read {path}: {exc.strerror or exc}",
                       USAGE_ERROR) from None
        if len(data) > MAX_TOKEN_BYTES:
            raise fail(f"{where}: {path} is longer than {MAX_TOKEN_BYTES} bytes",
                       USAGE_ERROR)
        token = data.decode("utf-8", "replace").strip()
        if not token:
            raise fail(f"{where}: {path} is empty", USAGE_ERROR)
        return token
    if env is not None:
        token = os.environ.get(env, "").strip()
        if not token:
            raise fail(f"{where}: the environment variable {env} is not set or empty",
                       USAGE_ERROR)
        return token
    return None


def declaration(file: Path) -> dict[str, Any]:
    """FILE's Cluster document, its token file or variable read into `credentials.token`."""
    import yaml

    try:
        if file.stat().st_size > MAX_FILE_BYTES:
            raise fail(f"{file}: longer than {MAX_FILE_BYTES} bytes; one Cluster document "
                       "is expected", USAGE_ERROR)
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise fail(f"{file}: cannot read it: {getattr(exc, 'strerror', None) or exc}",
                   USAGE_ERROR) from None
    except yaml.YAMLError as exc:
        raise fail(f"{file}: not YAML: {str(exc)[:300]}", USAGE_ERROR) from None
    if not isinstance(data, dict):
        raise fail(f"{file}: expected one kind: Cluster document (a mapping)", USAGE_ERROR)
    spec = data.get("spec")
    creds = spec.get("credentials") if isinstance(spec, dict) else None
    if not isinstance(spec, dict) or not isinstance(creds, dict):
        return data
    token_file, token_env = creds.get("tokenFile"), creds.get("tokenEnv")
    if not isinstance(token_file, str | None) or not isinstance(token_env, str | None):
        raise fail(f"{file}: spec.credentials.tokenFile and tokenEnv are strings",
                   USAGE_ERROR)
    path = None if token_file is None else (file.parent / Path(token_file).expanduser())
    token = read_token(path, token_env, f"{file}: spec.credentials")
    if token is None:
        return data
    kept = {k: v for k, v in creds.items() if k not in ("tokenFile", "tokenEnv")}
    return {**data, "spec": {**spec, "credentials": {**kept, "token": token}}}


def add(
    file: Annotated[Path, typer.Argument(
        help="One kind: Cluster document, as in a clusters file; its tokenFile or tokenEnv "
             "is read here and the token sent (stored sealed).", show_default=False)],
    output: OutputOption = Format.TABLE, server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Declare a member cluster (admins)."""
    document = declaration(file)

    def action(shoal: ShoalClient) -> None:
        _show(output, shoal.declare_cluster(document), "added")
    remote(server, token, action)


def set_(
    alias: AliasArg,
    uri: Annotated[str | None, typer.Option("--uri", help="The member's new URI.",
                                            show_default=False)] = None,
    priority: Annotated[int | None, typer.Option(
        "--priority", min=0, max=100, help="0-100; higher is preferred.",
        show_default=False)] = None,
    gpu_type: Annotated[str | None, typer.Option("--gpu-type", show_default=False)] = None,
    no_gpu_type: Annotated[bool, typer.Option("--no-gpu-type",
                                              help="Unset its GPU type.")] = False,
    user: Annotated[str | None, typer.Option("--user", help="The user on the member.",
                                             show_default=False)] = None,
    token_file: Annotated[Path | None, typer.Option(
        "--token-file", help="A file holding the new token (read here).",
        show_default=False)] = None,
    token_env: Annotated[str | None, typer.Option(
        "--token-env", help="An environment variable holding the new token (read here).",
        show_default=False)] = None,
    output: OutputOption = Format.TABLE, server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Change a member declared through the API (admins); what is not given is kept, the
    token too."""
    if gpu_type is not None and no_gpu_type:
        raise fail("give --gpu-type or --no-gpu-type, not both", USAGE_ERROR)
    new_token = read_token(token_file, token_env, "--token-file/--token-env")
    if (uri, priority, gpu_type, user, new_token) == (None,) * 5 and not no_gpu_type:
        raise fail("nothing to change: give --uri, --priority, --gpu-type, --no-gpu-type, "
                   "--user, --token-file or --token-env", USAGE_ERROR)

    def action(shoal: ShoalClient) -> None:
        changed = shoal.change_cluster(alias, uri=uri, gpu_type=gpu_type,
                                       clear_gpu_type=no_gpu_type, priority=priority,
                                       user=user, token=new_token)
        _show(output, changed, "changed")
    remote(server, token, action)


def remove(alias: AliasArg, server: ServerOption = None, token: TokenOption = None) -> None:
    """Remove a member declared through the API (admins); refused while a multi-cluster job
    that has not ended uses it."""
    def action(shoal: ShoalClient) -> None:
        shoal.remove_cluster(alias)
        out().print(f"cluster {alias} removed", markup=False)
    remote(server, token, action)


cluster_app.command(name="add")(add)
cluster_app.command(name="set")(set_)
cluster_app.command(name="remove")(remove)
