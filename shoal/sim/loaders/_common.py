"""What every loader does last: sort the jobs, keep the first `limit`, and shift the times
so that the earliest submission is 0.0."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from shoal.sim.trace import Trace, TraceJob, gang_shape

R = TypeVar("R", bound=tuple[Any, ...])


def first(rows: list[R], limit: int | None) -> list[R]:
    """Sort raw rows that start with (submit_time, name) and keep the first `limit`: the
    large CSV loaders build their jobs only after this, already shifted. Names are unique,
    so the comparison never reaches the fields after them."""
    rows.sort()
    if limit is not None:
        del rows[limit:]
    return rows


def check_limit(limit: int | None) -> None:
    if limit is not None and limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")


def check_shape(gpus_per_node: int, cpu_per_gpu: int, memory_per_gpu: int) -> None:
    """Refuse gang shape parameters that no job could use, before reading any row."""
    gang_shape(1, gpus_per_node, cpu_per_gpu=cpu_per_gpu, memory_per_gpu=memory_per_gpu)


def finish(jobs: list[TraceJob], source: str, limit: int | None,
           skip_reasons: Mapping[str, int] | None = None) -> Trace:
    """Sort by (submit_time, name), keep the first `limit`, shift the earliest to 0.0."""
    check_limit(limit)
    jobs.sort(key=lambda j: (j.submit_time, j.name))
    if limit is not None:
        del jobs[limit:]
    if jobs and jobs[0].submit_time != 0.0:
        origin = jobs[0].submit_time
        jobs = [_shifted(job, origin) for job in jobs]
    return Trace(tuple(jobs), source, sum((skip_reasons or {}).values()),
                 dict(skip_reasons or {}))


def _shifted(job: TraceJob, origin: float) -> TraceJob:
    return TraceJob(job.name, job.submit_time - origin, job.duration, job.replicas,
                    job.per_task, job.queue, job.user, job.priority_class, job.model,
                    job.node_selector)
