"""What a simulation runs on, from command-line words: a trace file of any supported format
(told apart by its extension and header) and a cluster (a file or `125x8`), with the trace's
queues turned into virtual clusters when the cluster does not declare them."""

from __future__ import annotations

import csv
from dataclasses import replace
from enum import StrEnum
from pathlib import Path

from shoal.api.objects import DEFAULT_QUEUE
from shoal.sim.loaders import (
    ClusterDescription,
    load_alibaba,
    load_itp,
    load_native,
    load_philly,
    queues_as_virtual_clusters,
)
from shoal.sim.trace import Trace, TraceError


class TraceFormat(StrEnum):
    AUTO = "auto"
    PHILLY = "philly"
    ITP = "itp"
    ALIBABA = "alibaba"
    NATIVE = "native"


_HEADERS = {
    TraceFormat.PHILLY: {"timestamp", "duration", "num_gpus"},
    TraceFormat.ITP: {"job_id", "submission_time", "duration", "num_gpu"},
    TraceFormat.ALIBABA: {"name", "cpu_milli", "num_gpu", "gpu_milli", "creation_time"},
}


def detect_format(path: Path) -> TraceFormat:
    if path.suffix.lower() in (".yaml", ".yml"):
        return TraceFormat.NATIVE
    try:
        with path.open(newline="") as handle:
            header = set(next(csv.reader(handle), []))
    except OSError as exc:
        raise TraceError(str(path), None, None, f"cannot read: {exc.strerror}") from None
    for fmt, needed in _HEADERS.items():
        if needed <= header:
            return fmt
    raise TraceError(str(path), 1, None, "unknown trace format: the header matches none of "
                     "philly (timestamp,duration,num_gpus,…), itp (job_id,submission_time,"
                     "duration,num_gpu) or alibaba openb pods (name,cpu_milli,…); "
                     "or pass --format")


def load_trace(path: str | Path, fmt: TraceFormat = TraceFormat.AUTO, *, gpus_per_node: int,
               limit: int | None = None, single_queue: bool = False) -> Trace:
    """Load a trace; `single_queue` puts every job in the default virtual cluster."""
    path = Path(path)
    if fmt is TraceFormat.AUTO:
        fmt = detect_format(path)
    if fmt is TraceFormat.PHILLY:
        trace = load_philly(path, gpus_per_node=gpus_per_node, limit=limit,
                            queue_column=not single_queue)
    elif fmt is TraceFormat.ITP:
        trace = load_itp(path, gpus_per_node=gpus_per_node, limit=limit)
    elif fmt is TraceFormat.ALIBABA:
        trace = load_alibaba(path, limit=limit)
    else:
        trace = load_native(path, limit=limit)
    if single_queue:
        trace = replace(trace, jobs=tuple(replace(j, queue=DEFAULT_QUEUE) for j in trace.jobs))
    return trace


def with_trace_queues(description: ClusterDescription, trace: Trace) -> ClusterDescription:
    """The cluster plus a virtual cluster (min 0, no max) for each queue the trace names
    that the cluster does not declare."""
    extra = queues_as_virtual_clusters(trace, declared=description.virtual_clusters)
    if not extra:
        return description
    return replace(description,
                   virtual_clusters=(*description.virtual_clusters, *extra))
