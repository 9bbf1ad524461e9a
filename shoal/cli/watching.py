"""`shoal jobs --watch`: follow the server's job events (`ShoalClient.watch_jobs`) instead of
asking for the list again and again.

On a terminal, a table redrawn in place as events arrive (at most REDRAWS times a second,
however many arrive). Elsewhere — a pipe, a file, `-o json|yaml` — one line per event,
flushed at once, so that `shoal jobs --watch | grep Failed` sees each change as it happens:

    ADDED quick Pending default alice 0/1
    MODIFIED quick Running default alice 1/1
    MODIFIED quick Succeeded default alice 0/1

(EVENT NAME STATE QUEUE USER RUNNING/TASKS, then why it waits, if it does); with `-o json`
one JSON object a line, `{"type": "MODIFIED", "object": <the job as the list shows it>}`;
with `-o yaml` the same as `---` documents. When the server ends the stream because this
client fell behind, the watch starts again (every job `ADDED` anew); when the server shuts
down, the command ends (0).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from shoal.api import JobState, TaskState
from shoal.cli.remote_render import jobs_table
from shoal.cli.remote_support import Format, err, on_terminal, out, reader_left

if TYPE_CHECKING:
    from rich.table import Table

    from shoal.client import JobEvent, JobEvents, JobView, ShoalClient

#: How many times a second the terminal's table is redrawn at most.
REDRAWS = 4
SHUTTING_DOWN = "shutting down"


def watch(shoal: ShoalClient, fmt: Format, *, state: JobState | None, queue: str | None,
          user: str | None, limit: int) -> None:
    """Follow the jobs that match until Ctrl-C, the reader of the pipe leaves, or the
    server shuts down."""
    console = out(fmt)
    live = fmt.tabular and on_terminal(console)
    jobs: dict[str, JobView] = {}
    lock = threading.Lock()  # the table is drawn on rich's refresh thread

    def table() -> Table:
        with lock:
            shown = sorted(jobs.values(), key=lambda j: (j.created, j.name))[:limit]
        return jobs_table(shown)

    def keep(event: JobEvent) -> None:
        with lock:
            if event.type.value == "DELETED":
                jobs.pop(event.job.name, None)
            else:
                jobs[event.job.name] = event.job

    try:
        if live:
            from rich.live import Live

            with Live(console=console, get_renderable=table,
                      refresh_per_second=REDRAWS, transient=False):
                _follow(shoal, state, queue, user, keep)
        else:
            _follow(shoal, state, queue, user, lambda e: _print(fmt, e))
    except KeyboardInterrupt:
        return


def _follow(shoal: ShoalClient, state: JobState | None, queue: str | None,
            user: str | None, each: Callable[[JobEvent], None]) -> None:
    while True:
        events: JobEvents = shoal.watch_jobs(state=state, queue=queue, user=user)
        with events:
            for event in events:
                each(event)
        why = events.closed_because or "the stream ended"
        if SHUTTING_DOWN in why:
            err.print(f"the server ended the watch: {why}")
            return


def line(event: JobEvent) -> str:
    """An event as one line: EVENT NAME STATE QUEUE USER RUNNING/TASKS [WHY IT WAITS]."""
    job = event.job
    running = job.task_counts.get(TaskState.RUNNING, 0)
    fields = [event.type.value, job.name, job.state.value, job.queue, job.user or "-",
              f"{running}/{job.task_total}"]
    if job.pending_reason is not None:
        fields.append(job.pending_reason.message)
    return " ".join(fields)


def _print(fmt: Format, event: JobEvent) -> None:
    if fmt is Format.JSON:
        text = json.dumps({"type": event.type.value, "object": event.raw}) + "\n"
    elif fmt is Format.YAML:
        import yaml  # only here: loading it costs every command's start

        text = "---\n" + yaml.safe_dump({"type": event.type.value, "object": event.raw},
                                        sort_keys=False)
    else:
        text = line(event) + "\n"
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        reader_left()
