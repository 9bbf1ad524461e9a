"""The `shoal` verbs that talk to a running server (`shoal up`) through `shoal.client`: the
job verbs live here (`submit`, `jobs`, `get`, `cancel`, `delete`, `logs`), the cluster and account
verbs in `remote_admin.py` and `remote_changes.py` (`shoal.cli.main.COMMANDS` lists them all).

Where the server and token come from: `shoal.cli.config` (flags, environment, the file
`shoal login` writes, then `./.shoal/admin.token` for a local server).

Exit codes:
    0  success
    1  a job waited for (`submit --wait`) ended Failed or Cancelled; or the server failed (5xx)
    2  a user error: a bad or missing file, a bad config or token, a request the server
       refused (4xx: invalid spec, no right to the queue, unknown job …)
    3  the server cannot be reached, or did not answer within the timeout (`SHOAL_TIMEOUT`,
       default 30 s); the message names the URL, and the timeout
    4  `submit --wait --timeout` ran out before the job finished
  130  interrupted (Ctrl-C) — except `jobs --watch` and `logs -f`, which end with 0 (so does
       `jobs --watch` when the reader of its pipe goes away)
Every error is one line on stderr (a 422 lists one line per problem); never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from shoal.api import JobState
from shoal.cli import plain_table
from shoal.cli.remote_support import (
    JOB_FAILED,
    Format,
    OutputOption,
    ServerOption,
    TokenOption,
    emit,
    err,
    out,
    remote,
    say,
)

if TYPE_CHECKING:
    from shoal.client import JobView, ShoalClient, TaskView

#: How many of a job's tasks `shoal get` shows by default.
SHOWN_TASKS = 100
#: Seconds between polls of `submit --wait`.
POLL = 0.5


def _print_job(fmt: Format, job: JobView, tasks: Sequence[TaskView] = ()) -> None:
    if fmt.tabular:
        from shoal.cli.remote_render import job_detail

        out(fmt).print(job_detail(job, tasks))
    else:
        emit(fmt, job.raw)


def _why_not(job: JobView) -> str:
    """The last cause recorded for a job that did not succeed (a failed task's exit)."""
    causes = [e.cause for e in job.events or () if e.cause]
    return f": {causes[-1]}" if causes else ""


def submit(
    file: Annotated[Path, typer.Argument(
        help="A shoal/v1 Job document (YAML or JSON), or a job file Shoal imports: a Slurm "
             "batch script, an OpenPAI protocol-v2 job, a Ray job.", show_default=False)],
    wait: Annotated[bool, typer.Option(
        "--wait", help="Wait until the job finishes; exit 1 unless it Succeeded.")] = False,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", min=0.0, help="With --wait: give up after this many seconds (exit 4).",
        show_default=False)] = None,
    output: OutputOption = Format.TABLE,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Submit a job; prints its name (or the job, with -o json/yaml).

    The file may be a shoal/v1 Job or a job document of another system that Shoal imports
    (a Volcano or Kubernetes Job, ...). One document may become several jobs: every name is
    printed, one a line (with -o json/yaml, the list of jobs); --wait waits for them all."""
    def action(shoal: ShoalClient) -> int | None:
        first = shoal.submit(file)
        names = first.jobs or (first.name,)
        if output.tabular:
            for name in names:
                say(name)
        jobs = [first, *(shoal.get_job(n) for n in names[1:])] if len(names) > 1 or wait \
            else [first]
        if wait:
            jobs = [shoal.wait(job.name, timeout=timeout, interval=POLL) for job in jobs]
            if output.tabular:
                for job in jobs:
                    err.print(f"job {job.name} {job.state.value}"
                              + ("" if job.state is JobState.SUCCEEDED else _why_not(job)))
        if not output.tabular:
            if len(jobs) == 1:
                _print_job(output, jobs[0])
            else:
                emit(output, [job.raw for job in jobs])
        failed = any(job.state is not JobState.SUCCEEDED for job in jobs)
        return JOB_FAILED if wait and failed else None
    remote(server, token, action)


def jobs(
    state: Annotated[JobState | None, typer.Option(
        "--state", case_sensitive=False, show_default=False)] = None,
    queue: Annotated[str | None, typer.Option("--queue", "-q", show_default=False)] = None,
    user: Annotated[str | None, typer.Option("--user", "-u", show_default=False)] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Show at most this many.")]
    = 100,
    watch: Annotated[bool, typer.Option(
        "--watch", "-w", help="Follow changes until Ctrl-C: on a terminal the table is "
                              "redrawn as jobs change; in a pipe (or with -o json/yaml) "
                              "one line per change: EVENT NAME STATE QUEUE USER "
                              "RUNNING/TASKS.")] = False,
    output: OutputOption = Format.TABLE,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """List jobs in submission order."""
    def fetch(shoal: ShoalClient) -> list[JobView]:
        found: list[JobView] = []
        for job in shoal.iter_jobs(state=state, queue=queue, user=user,
                                   page_size=min(limit, 500)):
            found.append(job)
            if len(found) >= limit:
                break
        return found

    def action(shoal: ShoalClient) -> None:
        if watch:
            from shoal.cli.watching import watch as follow

            follow(shoal, output, state=state, queue=queue, user=user, limit=limit)
        elif output.tabular:
            found = fetch(shoal)
            text = plain_table.lines(plain_table.JOB_COLUMNS, [
                plain_table.job_cells(job) for job in found]) if plain_table.unstyled(
                    sys.stdout) else None
            if text is not None:
                sys.stdout.write(text)
                return
            from shoal.cli.remote_render import jobs_table

            out(output).print(jobs_table(found))
        else:
            emit(output, [job.raw for job in fetch(shoal)])
    remote(server, token, action)


def get(
    name: Annotated[str, typer.Argument(
        help="The job's name; NAME.N: an earlier job of that name, kept in history.",
        show_default=False)],
    tasks: Annotated[int, typer.Option(
        "--tasks", min=0, help="Show this many of its tasks (0: all).")] = SHOWN_TASKS,
    original: Annotated[bool, typer.Option(
        "--original", help="Print the document the job was imported from (a Volcano or "
                           "Kubernetes Job, a batch script, ...) instead: YAML unless -o "
                           "json; a batch script as its text.")] = False,
    output: OutputOption = Format.TABLE,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """One job: its tasks (node, GPUs, state), why it waits, and its latest events."""
    def action(shoal: ShoalClient) -> None:
        if original:
            _print_original(output, shoal.original(name).document)
            return
        job = shoal.get_job(name)
        shown: list[TaskView] = []
        if output.tabular:
            for task in shoal.iter_tasks(name, page_size=min(tasks or 1000, 1000)):
                shown.append(task)
                if tasks and len(shown) >= tasks:
                    break
        _print_job(output, job, shown)
    remote(server, token, action)


def _print_original(fmt: Format, document: Any) -> None:
    """A batch script as its text; a document as YAML (JSON with -o json)."""
    if isinstance(document, str):
        sys.stdout.write(document if document.endswith("\n") else document + "\n")
    else:
        emit(Format.JSON if fmt is Format.JSON else Format.YAML, document)


def cancel(
    name: Annotated[str, typer.Argument(help="The job's name.", show_default=False)],
    output: OutputOption = Format.TABLE,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Cancel a job (yours, or any job as an admin); its tasks are stopped."""
    def action(shoal: ShoalClient) -> None:
        job = shoal.cancel(name)
        if output.tabular and job.terminal:
            out().print(f"job {job.name} {job.state.value}")
        elif output.tabular:  # the control loop stops its tasks in its next turn
            out().print(f"job {job.name} is being cancelled: its tasks get SIGTERM, then "
                        "SIGKILL after the grace period")
        else:
            _print_job(output, job)
    remote(server, token, action)


def delete(
    name: Annotated[str, typer.Argument(help="The job's name.", show_default=False)],
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Delete a job with its tasks, events and logs; a running one is stopped first.

    Yours, or any job as an admin. One still running is cancelled and removed once its
    tasks have stopped."""
    def action(shoal: ShoalClient) -> None:
        out().print(shoal.delete_job(name).message, highlight=False)
    remote(server, token, action)


def logs(
    name: Annotated[str, typer.Argument(
        help="The job's name; NAME.N: an earlier job of that name, kept in history.",
        show_default=False)],
    task: Annotated[str | None, typer.Option(
        "--task", "-t", help="GROUP-INDEX, e.g. worker-1. Default: the first task.",
        show_default=False)] = None,
    stderr: Annotated[bool, typer.Option("--stderr", help="Show stderr, not stdout.")]
    = False,
    follow: Annotated[bool, typer.Option(
        "--follow", "-f", help="Keep printing until the task ends (or Ctrl-C).")] = False,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Print a task's output."""
    def action(shoal: ShoalClient) -> None:
        stream = shoal.logs(name, task=task, stream="stderr" if stderr else "stdout",
                            follow=follow)
        try:
            with stream:
                for chunk in stream:
                    sys.stdout.write(chunk)
                    sys.stdout.flush()
        except KeyboardInterrupt:
            return
    remote(server, token, action)
