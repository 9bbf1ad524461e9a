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
first n jobs of `load_philly(p)`.
"""

from __future__ import annotations

import os
import re
from datetime import date

from shoal.api import DEFAULT_QUEUE, Resources
from shoal.sim.loaders._common import check_limit, check_shape, first
from shoal.sim.loaders._csv import count, number, object_name, read_table
from shoal.sim.trace import (
    DEFAULT_CPU_PER_GPU,
    DEFAULT_MEMORY_PER_GPU,
    Trace,
    TraceError,
    TraceJob,
    gang_shape,
)

COLUMNS = ("timestamp", "duration", "num_gpus")
QUEUE_COLUMN = "cluster"
_TIMESTAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$")
_DAY = 86400
_NAN = float("nan")
_INF = float("inf")


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
    shapes: dict[int, tuple[int, Resources]] = {}
    clock = _Clock(source)
    queues: dict[str, str] = {}
    rows: list[tuple[float, str, float, int, str]] = []
    heads = clock.heads
    tails = clock.tails
    for line, row in table.rows:
        # The fast path reads a well-formed row with plain lookups and conversions; anything
        # unusual goes through the checked readers, which raise the error.
        text = row[i_time]
        head = heads.get(text[:13])
        tail = tails.get(text[13:])
        if head is None or tail is None or len(text) != 19:
            head, tail = clock.parse(line, text)
        try:
            duration = float(row[i_duration])
        except ValueError:
            duration = _NAN
        if not 0 < duration < _INF:
            duration = number(source, line, "duration", row[i_duration], positive=True)
        try:
            gpus = int(row[i_gpus])
        except ValueError:
            gpus = -1
        if gpus < 0:
            gpus = count(source, line, "num_gpus", row[i_gpus])
        queue = DEFAULT_QUEUE
        if queue_column:
            text = row[i_queue]
            queue = queues.get(text) or queues.setdefault(
                text, object_name(source, line, QUEUE_COLUMN, text))
        rows.append((float(head + tail), f"philly-{line}", duration, gpus, queue))
    rows = first(rows, limit)
    origin = rows[0][0] if rows else 0.0
    jobs: list[TraceJob] = []
    for submit, name, duration, gpus, queue in rows:
        shape = shapes.get(gpus)
        if shape is None:
            shape = shapes[gpus] = gang_shape(gpus, gpus_per_node, cpu_per_gpu=cpu_per_gpu,
                                              memory_per_gpu=memory_per_gpu)
        jobs.append(TraceJob(name, submit - origin, duration, shape[0], shape[1], queue))
    return Trace(tuple(jobs), source)


class _Clock:
    """`YYYY-MM-DD HH:MM:SS` → seconds since 0001-01-01 (only differences matter).

    A trace has few distinct `YYYY-MM-DD HH` prefixes and at most 3600 `:MM:SS` suffixes,
    so each half is validated once and then looked up: parsing stays off the hot path."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.heads: dict[str, int] = {}
        self.tails: dict[str, int] = {}

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
        head = self.heads[text[:13]] = day * _DAY + hours * 3600
        tail = self.tails[text[13:]] = minutes * 60 + seconds
        return head, tail
