"""Tables as plain text for a pipe or a file, without rich: the lines rich prints for
`remote_render`'s tables (no box, no padding at the edges, two spaces between columns, each
column as wide as its widest cell and every cell padded to it) where it writes to no
terminal and so styles nothing. rich measures and wraps every cell through its console;
for a 100-row `shoal jobs` that, with loading rich, was a quarter of the command's CPU.

Only text that rich prints as it is qualifies — one line of printable ASCII per cell,
no `[` (rich's markup); anything else (`lines` answers None) is for rich to lay out, as
are tables shown on a terminal or where the environment makes rich style a pipe
(`FORCE_COLOR`, `TTY_COMPATIBLE`).
`tests/cli/test_plain_table.py` compares the two over generated tables.

Also the cells of `shoal jobs`' table, shared with its rich form (`remote_render`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from shoal.api import TaskState

if TYPE_CHECKING:
    from shoal.client import JobView

#: `shoal jobs`' columns.
JOB_COLUMNS = ("NAME", "USER", "QUEUE", "STATE", "RUNNING", "SUBMITTED", "WAITING BECAUSE")
#: Variables under which rich styles what it writes to a pipe (it then acts as on a
#: terminal, https://force-color.org/).
STYLING = ("FORCE_COLOR", "TTY_COMPATIBLE")


def when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def job_cells(job: JobView) -> tuple[str, ...]:
    """A job's row of `shoal jobs` (`JOB_COLUMNS`)."""
    reason = job.pending_reason.message if job.pending_reason else ""
    if job.deleting:
        reason = "being deleted"
    running = f"{job.task_counts.get(TaskState.RUNNING, 0)}/{job.task_total}"
    return (job.name, job.user or "-", job.queue, job.state.value, running, when(job.created),
            reason)


def lines(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str | None:
    """The table as rich lays it out unstyled at full width, or None where rich must."""
    table = [tuple(headers), *(tuple(row) for row in rows)]
    if not rows or not all(headers) or any(len(row) != len(headers) for row in table):
        return None
    # rich reads `[` as the start of markup in a cell given as a string
    if not all(cell.isascii() and cell.isprintable() and "[" not in cell
               for row in table for cell in row):
        return None
    widths = [max(len(row[column]) for row in table) for column in range(len(headers))]
    return "".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
                   + "\n" for row in table)


def unstyled(stream: IO[str]) -> bool:
    """Whether rich would write to `stream` without styles: no terminal, and nothing in
    the environment telling it to act as one."""
    if any(name in os.environ for name in STYLING):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return isatty is None or not isatty()
    except ValueError:  # a closed file
        return True
