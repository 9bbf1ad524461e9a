"""What the loaders share besides CSV reading: checking their arguments, sorting the jobs,
keeping the first `limit`, shifting times so that the earliest submission is 0.0, and
pausing the garbage collector while a large file loads."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from shoal.sim.trace import Trace, TraceJob, gang_shape

R = TypeVar("R", bound=tuple[Any, ...])
P = ParamSpec("P")
T = TypeVar("T")


def gc_paused(load: Callable[P, T]) -> Callable[P, T]:
    """Run a loader with the cyclic garbage collector paused. A load allocates a few objects
    per row and keeps them all, which makes the collector re-scan the growing lists again
    and again (about 40% of the time of loading Philly); none of them forms a cycle, so
    nothing is lost by collecting after the load instead."""

    @functools.wraps(load)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        if not gc.isenabled():
            return load(*args, **kwargs)
        gc.disable()
        try:
            return load(*args, **kwargs)
        finally:
            gc.enable()

    return wrapper


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
    """The job `origin` seconds earlier, every other field kept; built without re-running
    its checks (they held, and a large trace shifts tens of thousands of jobs)."""
    out: TraceJob = object.__new__(TraceJob)
    for name in TraceJob.__slots__:
        object.__setattr__(out, name, getattr(job, name))
    object.__setattr__(out, "submit_time", job.submit_time - origin)
    return out
