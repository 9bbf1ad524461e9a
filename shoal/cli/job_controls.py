"""`shoal hold`, `shoal release` and `shoal requeue`: Slurm's `scontrol hold/release/requeue`
for a running server's jobs, through `shoal.client` (exit codes as `shoal.cli.remote`'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from shoal.cli.remote_support import (
    Format,
    OutputOption,
    ServerOption,
    TokenOption,
    emit,
    out,
    remote,
)

if TYPE_CHECKING:
    from shoal.client import JobView, ShoalClient

NameArgument = Annotated[str, typer.Argument(help="The job's name.", show_default=False)]


def _said(output: Format, job: JobView, text: str) -> None:
    if output.tabular:
        out().print(text)
    else:
        emit(output, job.raw)


def hold(name: NameArgument, output: OutputOption = Format.TABLE,
         server: ServerOption = None, token: TokenOption = None) -> None:
    """Hold a pending job: it is not scheduled until `shoal release` (yours, or any job as
    an admin). A job that has started cannot be held: `shoal requeue --hold` stops it and
    holds it."""
    def action(shoal: ShoalClient) -> None:
        job = shoal.hold(name)
        _said(output, job, f"job {job.name} is held")
    remote(server, token, action)


def release(name: NameArgument, output: OutputOption = Format.TABLE,
            server: ServerOption = None, token: TokenOption = None) -> None:
    """Release a held job: it is scheduled again (once its dependencies have succeeded)."""
    def action(shoal: ShoalClient) -> None:
        job = shoal.release(name)
        why = job.pending_reason
        _said(output, job, f"job {job.name} is released" + (
            f"; it waits: {why.message}" if why is not None and why.kind == "Dependency"
            else ""))
    remote(server, token, action)


def requeue(name: NameArgument,
            hold: Annotated[bool, typer.Option(
                "--hold", help="Hold it as well: it is not scheduled again until released.")
            ] = False,
            output: OutputOption = Format.TABLE,
            server: ServerOption = None, token: TokenOption = None) -> None:
    """Stop a running job's tasks and put it back to pending, to run again from scratch in
    its original place in the queue; counts no retry."""
    def action(shoal: ShoalClient) -> None:
        job = shoal.requeue(name, hold=hold)
        _said(output, job, f"job {job.name} is requeued: its tasks get SIGTERM, then "
                           "SIGKILL after the grace period, and it waits to run again"
              + (" once released" if hold else ""))
    remote(server, token, action)
