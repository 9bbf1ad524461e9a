"""Shoal's native trace format: `shoal/v1` Job documents with two extra metadata fields.

A native trace is a YAML file of Job documents exactly as `shoal submit` takes them, each
with, in `metadata`:

- `arrivalTime` (required): seconds since the trace's start, a number >= 0;
- `duration` (required): seconds of work at the requested size, a number > 0;
- `model` (optional): the application or model name, for per-model scalability tables.

A job may give `metadata.generateName` instead of its name: it is named the prefix and a
suffix counted in file order (`train-bbbbb`, `train-bbbbc`, …; `shoal.spec.generated_names`),
the same on every load.

```yaml
apiVersion: shoal/v1
kind: Job
metadata: {name: resnet-1, arrivalTime: 0, duration: 3600, model: resnet50}
spec:
  queue: vision
  taskGroups:
    - {name: worker, replicas: 2, resources: {cpu: 16, memory: 64Gi, gpu: 4}}
```

The loader takes the three fields out of each document and validates the rest with the spec
layer (`shoal.spec.load_text`), so a trace job accepts exactly what a submitted job
accepts and errors read the same. Field mapping: `metadata.name` → `name`, `arrivalTime` →
`submit_time` (shifted so the earliest is 0.0), `duration` → `duration`, the one task group's
`replicas`, `resources` and `nodeSelector` → `replicas`, `per_task`, `node_selector`,
`spec.queue` → `queue`, `spec.priorityClassName` → `priority_class`, `metadata.user` →
`user`, `model` → `model`.

What a trace job cannot say, refused with a clear error: more than one task group (a trace
job is one gang of identical tasks), a `minAvailable` below the replicas (every trace job
runs whole), `metadata.creationTimestamp` (the submission time is `arrivalTime`), a `status`
(a trace job has not run yet), and documents of other kinds (nodes and virtual clusters
belong in the cluster file, `shoal.sim.loaders.cluster`). `schedulerName`, `command`,
`env` and `minResources` are accepted and not used: every trace job is a gang. Queue and
priority class names are checked against the cluster when the two are combined, not here.

Gates: `spec.dependsOn` names jobs of the same trace (one it does not hold, the job itself or
a cycle is an error); the job is scheduled from the instant the last of them finishes.
`spec.hold: true` keeps a job from ever being scheduled (nothing releases it in a trace).

Online services (seed 002): a `kind: Service` document, or a Job with `spec.service`, is a
service that never ends — it has no `duration` (one given is an error) — with its
time-of-day schedule on the simulated clock (`shoal.sim.trace`).

Imported job documents (`shoal.spec.imports`) whose format has a Kubernetes `metadata` — a
Volcano or Kubernetes Job, a Sedna kind — may stand in a trace with the same three fields in
their `metadata`; every job one document becomes (an array's elements, a learning job's
phases) arrives at its `arrivalTime` and works its `duration`, a service among them (a
deploy phase) runs until the trace ends. The one-task-group rule holds for each.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import yaml

from shoal.scheduler.gates import dependency_issues
from shoal.sim.loaders._common import check_limit, finish
from shoal.sim.loaders._yaml import Document, documents, read_text, spec_error
from shoal.sim.trace import WORKER_GROUP, Trace, TraceError, TraceJob
from shoal.spec import SpecError, load_text
from shoal.spec.documents import DOCUMENT_MODELS
from shoal.spec.generated_names import CountedNames, generate_prefix, given_name
from shoal.spec.limits import FILE_LIMITS


def load_native(path: str | os.PathLike[str], *, limit: int | None = None) -> Trace:
    """Load a native YAML trace; `limit` keeps the first N jobs by arrival time."""
    check_limit(limit)
    source, text = read_text(path)
    docs = documents(source, text)
    extras: dict[int, tuple[Document, float, float, str | None]] = {}  # by document
    stripped: list[Any] = []
    queues: set[str] = set()
    classes: set[str] = set()
    names = CountedNames()  # `metadata.generateName`: the same names on every load
    for doc in docs:
        given = given_name(doc.data)
        if given is not None:
            names.take(given)
    for doc in docs:
        data = doc.data
        if data is None:
            stripped.append(None)
            continue
        _, arrival, duration, model, data = _take_fields(source, doc, names)
        extras[doc.number] = (doc, arrival, duration, model)
        spec = data.get("spec")
        if isinstance(spec, Mapping):
            if isinstance(spec.get("queue"), str):
                queues.add(spec["queue"])
            if isinstance(spec.get("priorityClassName"), str):
                classes.add(spec["priorityClassName"])
        stripped.append(data)
    if not extras:
        raise TraceError(source, None, None, "contains no Job documents")
    rest = yaml.safe_dump_all(stripped, sort_keys=False)
    try:
        bundle = load_text(rest, source, known_queues=queues, known_priority_classes=classes,
                           limits=FILE_LIMITS)
    except SpecError as exc:
        raise spec_error(source, exc, {d.number: d.node for d in docs}) from exc
    jobs: list[TraceJob] = []
    for job in bundle.jobs:
        # The jobs one document became (an array's elements, an imported job's phases)
        # arrive together, as their document says.
        doc, arrival, duration, model = extras[bundle.job_documents[job.name][1]]
        if len(job.groups) != 1:
            raise TraceError(source, doc.line_of("spec.taskGroups"), "spec.taskGroups",
                             f"a trace job has exactly one task group (one gang of identical "
                             f"tasks), got {len(job.groups)}", what="field")
        group = job.groups[0]
        if job.min_available is not None and job.min_available < group.replicas:
            raise TraceError(source, doc.line_of("spec.minAvailable"), "spec.minAvailable",
                             f"a trace job runs with all its tasks; minAvailable "
                             f"{job.min_available} is below its replicas ({group.replicas})",
                             what="field")
        service = job.service
        if service is not None:  # a trace job's one group is `worker`
            duration = math.inf  # an imported service (a Sedna deploy phase) too
            service = replace(service, group=None if service.group is None else WORKER_GROUP)
        elastic = None if service is None or job.elastic is None else \
            replace(job.elastic, group=WORKER_GROUP)
        jobs.append(TraceJob(job.name, arrival, duration, group.replicas, group.resources,
                             job.queue, job.user, job.priority_class, model,
                             dict(group.node_selector), elastic=elastic, service=service,
                             checkpoint_interval=job.checkpoint_interval,
                             freezing_window=job.freezing_window,
                             depends_on=job.depends_on, held=job.held,
                             time_limit=job.time_limit))
    for issue in dependency_issues(bundle.jobs, {}):
        doc = extras[bundle.job_documents[bundle.jobs[issue.job].name][1]][0]
        raise TraceError(source, doc.line_of(issue.path), issue.path,
                         issue.message + (" in the trace" if issue.message.startswith("no job")
                                          else ""), what="field")
    return finish(jobs, source, limit)


def _take_fields(source: str, doc: Document, names: CountedNames
                 ) -> tuple[str, float, float, str | None, dict[Any, Any]]:
    """(name, arrivalTime, duration, model, the document without them)."""
    data = doc.data
    if not isinstance(data, Mapping):
        raise TraceError(source, doc.line, None, "a document must be a mapping with "
                         f"apiVersion, kind, metadata; got {type(data).__name__}")
    kind = data.get("kind")
    if kind in DOCUMENT_MODELS and kind not in ("Job", "Service"):
        raise TraceError(source, doc.line_of("kind"), "kind",
                         f"a trace holds job documents only, got {kind!r}; nodes "
                         "and virtual clusters belong in the cluster file", what="field")
    metadata = data.get("metadata")
    if not isinstance(metadata, Mapping):
        raise TraceError(source, doc.line_of("metadata"), "metadata",
                         "must be a mapping with name, arrivalTime and duration", what="field")
    prefix = generate_prefix(data)
    name = metadata.get("name") if prefix is None else names(prefix)
    if not isinstance(name, str):
        raise TraceError(source, doc.line_of("metadata.name"), "metadata.name",
                         f"must be the job's name, got {name!r}", what="field")
    if "creationTimestamp" in metadata:
        raise TraceError(source, doc.line_of("metadata.creationTimestamp"),
                         "metadata.creationTimestamp", "is not allowed: a trace job's "
                         "submission time is metadata.arrivalTime", what="field")
    if "status" in data:
        raise TraceError(source, doc.line_of("status"), "status",
                         "is not allowed: a trace job has not run yet", what="field")
    arrival = _seconds(source, doc, metadata, "arrivalTime", positive=False)
    spec = data.get("spec")
    served = kind == "Service" or (isinstance(spec, Mapping)
                                   and spec.get("service") not in (None, False))
    if served and "duration" in metadata:
        raise TraceError(source, doc.line_of("metadata.duration"), "metadata.duration",
                         "is not allowed on a service: it runs until the trace ends",
                         what="field")
    duration = math.inf if served else _seconds(source, doc, metadata, "duration",
                                                positive=True)
    model = metadata.get("model")
    if model is not None and not isinstance(model, str):
        raise TraceError(source, doc.line_of("metadata.model"), "metadata.model",
                         f"must be a string, got {model!r}", what="field")
    kept = {k: v for k, v in metadata.items() if k not in ("arrivalTime", "duration", "model")}
    kept["name"] = name
    return name, arrival, duration, model, {**data, "metadata": kept}


def _seconds(source: str, doc: Document, metadata: Mapping[Any, Any], key: str, *,
             positive: bool) -> float:
    path = f"metadata.{key}"
    kind = "a positive number of seconds" if positive else "a number of seconds >= 0"
    if key not in metadata:
        raise TraceError(source, doc.line_of(path), path,
                         f"is required in a trace: {kind}", what="field")
    value = metadata[key]
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or value < 0 or (positive and value == 0)):
        raise TraceError(source, doc.line_of(path), path, f"must be {kind}, got {value!r}",
                         what="field")
    return float(value)
