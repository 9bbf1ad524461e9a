"""The Microsoft Philly trace loader (the `philly.csv` of petuum/adaptdl's OSDI'21 artifact:
82,247 jobs of Oct–Dec 2017 on 15 virtual clusters).

Column mapping (header `timestamp,duration,num_gpus,gpu_time,cluster`; other columns
ignored):

- `timestamp` → `submit_time`: `YYYY-MM-DD HH:MM:SS` (no time zone), seconds since the
  earliest row;
- `duration` → `duration`: seconds, > 0;
- `num_gpus` → `replicas` × `per_task`: whole GPUs, >= 0, shaped by the gang shape rule of
  `shoal.sim.trace` (`gpus_per_node`, `cpu_per_gpu`, `memory_per_gpu`);
- `gpu_time`: ignored (it is `duration × num_gpus` in every row of the published file);
- `cluster` → `queue`: the job's virtual cluster, a name such as `6214e9`. With
  `queue_column=False` the column is not needed and every job goes to `default`.

Job names are `philly-<line>`, the job's 1-based line in the file, so an error or a result
can be traced back to its row. The file is not sorted by time: the loader sorts all rows by
(submit_time, name) before `limit` keeps the first N, so `load_philly(p, limit=n)` is the
first n jobs of `load_philly(p)`. Jobs submitted in the same second (common: the full file
has 6,664 more rows than distinct timestamps) are ordered by name, as strings (`philly-10`
before `philly-9`).

The full file loads in well under a second: columns are converted by C loops, with each
distinct date-hour, minute-second and queue value checked once, and only a file with an
unusual value is read again row by row to name the row at fault.
"""

from __future__ import annotations

import os
import re
from datetime import date
from operator import add, itemgetter

from shoal.api import DEFAULT_QUEUE, Resources
from shoal.sim.loaders._common import check_limit, check_shape, first, gc_paused
from shoal.sim.loaders._csv import OBJECT_NAME, count, number, object_name, read_table
from shoal.sim.trace import (
    DEFAULT_CPU_PER_GPU,
    DEFAULT_MEMORY_PER_GPU,
    Trace,
    TraceError,
    TraceJob,
    gang_shape,
    prechecked_job,
)

COLUMNS = ("timestamp", "duration", "num_gpus")
QUEUE_COLUMN = "cluster"
_TIMESTAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$")
_DAY = 86400
_INF = float("inf")


@gc_paused
def load_philly(path: str | os.PathLike[str], *, gpus_per_node: int = 8,
                limit: int | None = None, queue_column: bool = True,
                cpu_per_gpu: int = DEFAULT_CPU_PER_GPU,
                memory_per_gpu: int = DEFAULT_MEMORY_PER_GPU) -> Trace:
    """Load a Philly CSV; `limit` keeps the first N jobs by submission time."""
    check_limit(limit)
    check_shape(gpus_per_node, cpu_per_gpu, memory_per_gpu)
    required = (*COLUMNS, QUEUE_COLUMN) if queue_column else COLUMNS
    table = read_table(path, required)
    source = table.source
    i_time, i_duration, i_gpus = (table.columns[c] for c in COLUMNS)
    i_queue = table.columns[QUEUE_COLUMN] if queue_column else -1
    rows = _read_fast(table.rows, i_time, i_duration, i_gpus, i_queue)
    if rows is None:
        rows = _read_checked(source, table.rows, i_time, i_duration, i_gpus, i_queue)
    rows = first(rows, limit)
    origin = rows[0][0] if rows else 0.0
    shapes: dict[int, tuple[int, Resources]] = {}
    jobs: list[TraceJob] = []
    for submit, name, duration, gpus, queue in rows:
        shape = shapes.get(gpus)
        if shape is None:
            shape = shapes[gpus] = gang_shape(gpus, gpus_per_node, cpu_per_gpu=cpu_per_gpu,
                                              memory_per_gpu=memory_per_gpu)
        jobs.append(prechecked_job(name, submit - origin, duration, shape[0], shape[1], queue))
    return Trace(tuple(jobs), source)


_Row = tuple[float, str, float, int, str]
_AFTER_ZERO = (0.0).__lt__
_HEAD = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2})$")
_TAIL = re.compile(r"^:(\d{2}):(\d{2})$")


def _read_fast(table: list[tuple[int, list[str]]], i_time: int, i_duration: int, i_gpus: int,
               i_queue: int) -> list[_Row] | None:
    """(submit, name, duration, gpus, queue) of every row, converted a column at a time by
    C loops (`map`), with each distinct date-hour, minute-second and queue validated once.
    None as soon as anything is unusual: `_read_checked` then finds it row by row and raises
    the error. It accepts everything this accepts, so the two always agree."""
    lines = [line for line, _ in table]
    rows = [row for _, row in table]
    times = list(map(itemgetter(i_time), rows))
    if set(map(len, times)) - {19}:
        return None
    heads_text = list(map(itemgetter(slice(0, 13)), times))
    tails_text = list(map(itemgetter(slice(13, None)), times))
    heads: dict[str, int] = {}
    for text in set(heads_text):
        match = _HEAD.match(text)
        if match is None or int(match[4]) > 23:
            return None
        try:
            day = date(int(match[1]), int(match[2]), int(match[3])).toordinal()
        except ValueError:
            return None
        heads[text] = day * _DAY + int(match[4]) * 3600
    tails: dict[str, int] = {}
    for text in set(tails_text):
        match = _TAIL.match(text)
        if match is None or int(match[1]) > 59 or int(match[2]) > 59:
            return None
        tails[text] = int(match[1]) * 60 + int(match[2])
    try:
        durations = list(map(float, map(itemgetter(i_duration), rows)))
        gpus = list(map(int, map(itemgetter(i_gpus), rows)))
    except ValueError:
        return None
    if durations and not (all(map(_AFTER_ZERO, durations)) and max(durations) < _INF):
        return None
    if gpus and min(gpus) < 0:
        return None
    if i_queue < 0:
        queues: list[str] = [DEFAULT_QUEUE] * len(rows)
    else:
        queues = list(map(itemgetter(i_queue), rows))
        if not all(map(OBJECT_NAME.match, set(queues))):
            return None
    submits = map(float, map(add, map(heads.__getitem__, heads_text),
                             map(tails.__getitem__, tails_text)))
    return list(zip(submits, map("philly-{}".format, lines), durations, gpus, queues,
                    strict=True))


def _read_checked(source: str, table: list[tuple[int, list[str]]], i_time: int,
                  i_duration: int, i_gpus: int, i_queue: int) -> list[_Row]:
    """The same as `_read_fast`, a row at a time, raising the first row's error."""
    clock = _Clock(source)
    queues: dict[str, str] = {}
    rows: list[_Row] = []
    for line, row in table:
        head, tail = clock.parse(line, row[i_time])
        duration = number(source, line, "duration", row[i_duration], positive=True)
        gpus = count(source, line, "num_gpus", row[i_gpus])
        queue = DEFAULT_QUEUE
        if i_queue >= 0:
            text = row[i_queue]
            queue = queues.get(text) or queues.setdefault(
                text, object_name(source, line, QUEUE_COLUMN, text))
        rows.append((float(head + tail), f"philly-{line}", duration, gpus, queue))
    return rows


class _Clock:
    """`YYYY-MM-DD HH:MM:SS` → (seconds of the date and hour since 0001-01-01, seconds of
    the minute and second); only differences matter."""

    def __init__(self, source: str) -> None:
        self.source = source

    def parse(self, line: int, text: str) -> tuple[int, int]:
        match = _TIMESTAMP.match(text)
        if match is None:
            raise TraceError(self.source, line, "timestamp",
                             f"must be a time like '2017-10-09 07:01:55', got {text!r}")
        try:
            day = date(int(match[1]), int(match[2]), int(match[3])).toordinal()
        except ValueError as exc:
            raise TraceError(self.source, line, "timestamp",
                             f"is not a valid date ({exc}), got {text!r}") from None
        hours, minutes, seconds = int(match[4]), int(match[5]), int(match[6])
        if hours > 23 or minutes > 59 or seconds > 59:
            raise TraceError(self.source, line, "timestamp",
                             f"is not a valid time of day, got {text!r}")
        return day * _DAY + hours * 3600, minutes * 60 + seconds
