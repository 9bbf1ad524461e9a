"""The Microsoft ITP trace loader (microsoft/elasticflow-traces, `cluster01..05.csv`).

Column mapping (header `job_id,submission_time,duration,num_gpu`; other columns ignored):

- `job_id` → `name`: unique; letters, digits, '_' and '-' (the files use UUIDs);
- `submission_time` → `submit_time`: seconds, >= 0, shifted so that the earliest is 0.0;
- `duration` → `duration`: seconds, > 0;
- `num_gpu` → `replicas` × `per_task`: whole GPUs, >= 0, shaped by the gang shape rule of
  `shoal.sim.trace` (`gpus_per_node`, `cpu_per_gpu`, `memory_per_gpu`).

Every job goes to the `default` queue; the trace has no users, models or priorities.
"""

from __future__ import annotations

import os

from shoal.api import DEFAULT_QUEUE, Resources
from shoal.sim.loaders._common import check_limit, check_shape, first, gc_paused
from shoal.sim.loaders._csv import count, job_name, number, read_table
from shoal.sim.trace import (
    DEFAULT_CPU_PER_GPU,
    DEFAULT_MEMORY_PER_GPU,
    Trace,
    TraceError,
    TraceJob,
    gang_shape,
    prechecked_job,
)

COLUMNS = ("job_id", "submission_time", "duration", "num_gpu")


@gc_paused
def load_itp(path: str | os.PathLike[str], *, gpus_per_node: int = 8, limit: int | None = None,
             cpu_per_gpu: int = DEFAULT_CPU_PER_GPU,
             memory_per_gpu: int = DEFAULT_MEMORY_PER_GPU) -> Trace:
    """Load an ITP CSV; `limit` keeps the first N jobs by submission time."""
    check_limit(limit)
    check_shape(gpus_per_node, cpu_per_gpu, memory_per_gpu)
    table = read_table(path, COLUMNS)
    source = table.source
    i_id, i_submit, i_duration, i_gpus = (table.columns[c] for c in COLUMNS)
    shapes: dict[int, tuple[int, Resources]] = {}
    first_line: dict[str, int] = {}
    rows: list[tuple[float, str, float, int]] = []
    for line, row in table.rows:
        name = job_name(source, line, "job_id", row[i_id])
        if name in first_line:
            raise TraceError(source, line, "job_id",
                             f"job {name!r} is already given on line {first_line[name]}")
        first_line[name] = line
        submit = number(source, line, "submission_time", row[i_submit])
        duration = number(source, line, "duration", row[i_duration], positive=True)
        gpus = count(source, line, "num_gpu", row[i_gpus])
        rows.append((submit, name, duration, gpus))
    rows = first(rows, limit)
    origin = rows[0][0] if rows else 0.0
    jobs: list[TraceJob] = []
    for submit, name, duration, gpus in rows:
        shape = shapes.get(gpus)
        if shape is None:
            shape = shapes[gpus] = gang_shape(gpus, gpus_per_node, cpu_per_gpu=cpu_per_gpu,
                                              memory_per_gpu=memory_per_gpu)
        jobs.append(prechecked_job(name, submit - origin, duration, shape[0], shape[1],
                               DEFAULT_QUEUE))
    return Trace(tuple(jobs), source)
