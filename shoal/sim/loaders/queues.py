"""Which virtual cluster each trace job goes to: mapping a trace's queue or user values onto
the cluster's virtual clusters, and declaring the trace's own queues as virtual clusters.

- `map_queues(trace, {"6214e9": "vision", "*": "default"})` rewrites every job's queue
  through the rule; `by="user"` reads the job's user instead (a job without a user is looked
  up as the empty string). `"*"` catches every value the rule does not name; without it an
  unknown value is a `TraceError` that lists them all.
- `queues_as_virtual_clusters(trace)` gives one virtual cluster (min 0, max unlimited, under
  root) per queue the trace names, for traces such as Philly whose queue column names
  virtual clusters that the cluster file does not declare. `default` is left out: the core
  always has it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Literal

from shoal.api import DEFAULT_QUEUE, ROOT_QUEUE, VirtualCluster
from shoal.sim.loaders._csv import OBJECT_NAME
from shoal.sim.trace import Trace, TraceError

#: The rule key that catches every value not named.
FALLBACK = "*"


def map_queues(trace: Trace, rule: Mapping[str, str], *,
               by: Literal["queue", "user"] = "queue") -> Trace:
    """A copy of `trace` with each job's queue given by `rule[value]` (or `rule["*"]`),
    where value is the job's queue or, with `by="user"`, its user."""
    if by not in ("queue", "user"):
        raise ValueError(f"by must be 'queue' or 'user', got {by!r}")
    for value, vc in rule.items():
        if vc == ROOT_QUEUE or not OBJECT_NAME.match(vc):
            raise TraceError(trace.source, None, by,
                             f"the queue rule maps {value!r} to {vc!r}, which is not a "
                             "virtual cluster name (letters, digits, '.', '_' and '-'; not "
                             "'root')")
    fallback = rule.get(FALLBACK)
    unknown: set[str] = set()
    jobs = []
    for job in trace.jobs:
        value = job.queue if by == "queue" else (job.user or "")
        target = rule.get(value, fallback)
        if target is None:
            unknown.add(value)
            continue
        jobs.append(job if target == job.queue else dataclasses.replace(job, queue=target))
    if unknown:
        shown = ", ".join(repr(v) for v in sorted(unknown))
        raise TraceError(trace.source, None, by,
                         f"the queue rule names no virtual cluster for {shown} and has no "
                         f"{FALLBACK!r} fallback")
    return Trace(tuple(jobs), trace.source, trace.skipped, dict(trace.skip_reasons))


def queues_as_virtual_clusters(trace: Trace, *, declared: Iterable[VirtualCluster | str] = ()
                               ) -> tuple[VirtualCluster, ...]:
    """One virtual cluster (min 0, max unlimited, parent root) per queue of `trace` that is
    neither `default` nor in `declared`, sorted by name."""
    known = {vc if isinstance(vc, str) else vc.name for vc in declared} | {DEFAULT_QUEUE}
    return tuple(VirtualCluster(name) for name in sorted(trace.queues() - known))
