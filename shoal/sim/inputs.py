"""What a simulation runs on, from command-line words: a trace file of any supported format
(told apart by its extension and header) and a cluster (a file or `125x8`), with the trace's
queues turned into virtual clusters when the cluster does not declare them.

A Pollux workload (`name,time,application,num_replicas,batch_size`) also brings its work
model: its applications are read from the `traces/` directory beside its `workloads/`
directory, as the Pollux artifact lays them out (`load_pollux_workload`)."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import yaml

from shoal.api.defaults import DEFAULT_QUEUE
from shoal.api.trace_format import TraceFormat
from shoal.sim.loaders import (
    ClusterDescription,
    load_alibaba,
    load_itp,
    load_native,
    load_philly,
    queues_as_virtual_clusters,
)
from shoal.sim.loaders.pollux import load_pollux
from shoal.sim.pollux import load_applications
from shoal.sim.simulator import NodeEvent
from shoal.sim.trace import Trace, TraceError
from shoal.sim.work import WorkModel

_HEADERS = {
    TraceFormat.PHILLY: {"timestamp", "duration", "num_gpus"},
    TraceFormat.ITP: {"job_id", "submission_time", "duration", "num_gpu"},
    TraceFormat.ALIBABA: {"name", "cpu_milli", "num_gpu", "gpu_milli", "creation_time"},
    TraceFormat.POLLUX: {"name", "time", "application", "num_replicas", "batch_size"},
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
                     "duration,num_gpu), alibaba openb pods (name,cpu_milli,…) or pollux "
                     "(name,time,application,num_replicas,batch_size); or pass --format")


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
    elif fmt is TraceFormat.POLLUX:
        trace = load_pollux_workload(path, limit=limit)[0]
    else:
        trace = load_native(path, limit=limit)
    if single_queue:
        trace = replace(trace, jobs=tuple(replace(j, queue=DEFAULT_QUEUE) for j in trace.jobs))
    return trace


def load_pollux_workload(path: str | Path, *, elastic: bool = False, adaptive: bool = False,
                         limit: int | None = None) -> tuple[Trace, WorkModel]:
    """A Pollux workload and its work model (see the module's text); `elastic`: every job
    elastic from 1 replica to its requested count; `adaptive`: elastic, and adapting its
    batch size to the replicas it gets (`shoal.sim.pollux`)."""
    path = Path(path)
    traces = path.resolve().parent.parent / "traces"
    if not traces.is_dir():
        raise TraceError(str(path), None, None, f"no application traces at {traces} (the "
                         "Pollux artifact keeps them in traces/ beside workloads/)")
    return load_pollux(path, load_applications(traces), elastic=elastic or adaptive,
                       adaptive=adaptive, limit=limit)


def with_trace_queues(description: ClusterDescription, trace: Trace) -> ClusterDescription:
    """The cluster plus a virtual cluster (min 0, no max) for each queue the trace names
    that the cluster does not declare."""
    extra = queues_as_virtual_clusters(trace, declared=description.virtual_clusters)
    if not extra:
        return description
    return replace(description,
                   virtual_clusters=(*description.virtual_clusters, *extra))


def read_queue_map(path: str | Path) -> dict[str, str]:
    """A YAML mapping `{trace value: virtual cluster}`, `"*"` for every other value."""
    source = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise TraceError(source, None, None, f"cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise TraceError(source, None, None, f"not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise TraceError(source, None, None, "expected a mapping of trace values to virtual "
                         "cluster names, e.g. {6214e9: vision, '*': default}")
    return data


def read_node_events(path: str | Path) -> tuple[NodeEvent, ...]:
    """Node failures and recoveries: a CSV `time,node,state` with state `down` or `up`."""
    source = str(path)
    try:
        with Path(path).open(newline="") as handle:
            rows = list(csv.reader(handle))
    except OSError as exc:
        raise TraceError(source, None, None, f"cannot read: {exc.strerror}") from None
    if not rows or [c.strip() for c in rows[0]] != ["time", "node", "state"]:
        raise TraceError(source, 1, None, "expected the header 'time,node,state'")
    events = []
    for line, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != 3:
            raise TraceError(source, line, None, f"expected 3 columns, got {len(row)}")
        try:
            time = float(row[0])
        except ValueError:
            raise TraceError(source, line, "time", f"not a number: {row[0]!r}") from None
        state = row[2].strip()
        if state not in ("up", "down") or time < 0:
            raise TraceError(source, line, "state" if time >= 0 else "time",
                             f"expected a time >= 0 and a state 'up' or 'down', got {row}")
        events.append(NodeEvent(time, row[1].strip(), up=state == "up"))
    return tuple(events)
