"""A Job document's positive durations: `spec.checkpointInterval` (issue 17, item 7) and
`spec.timeLimit` (issue 20).

Each is seconds, or a Go duration (`10m0s`), strictly positive and finite.
- The checkpoint interval says how often the job saves its state, so that an eviction loses
  at most that much of its run: victims are ranked by the work they would lose
  (`shoal.scheduler.work_lost`) and the simulator keeps the work up to the last checkpoint
  (`shoal.sim.work`). Absent: the job keeps nothing when evicted.
- The time limit is how long a run may last (Slurm's `-t`). Absent: no limit.
"""

from __future__ import annotations

import math

from shoal.api.elastic import parse_duration
from shoal.spec.documents import Duration, JobDocument
from shoal.spec.errors import DocRef, IssueLog, quote


def positive_seconds(log: IssueLog, doc: DocRef, path: str, value: Duration | None
                     ) -> float | None:
    """`value` in seconds; None when not given (or wrong: logged under `path`)."""
    if value is None:
        return None
    try:
        seconds: float | None = parse_duration(value)
    except (ValueError, OverflowError):
        seconds = None
    if seconds is None or not 0 < seconds < math.inf:  # also refuses nan
        log.add(doc, path, "must be a positive, finite number of seconds or a duration such "
                           f"as 10m0s, got {quote(value)}")
        return None
    return seconds


def checkpoint_interval(log: IssueLog, doc: DocRef, model: JobDocument) -> float | None:
    """`spec.checkpointInterval` in seconds; None when not given (or wrong: logged)."""
    return positive_seconds(log, doc, "spec.checkpointInterval",
                            model.spec.checkpoint_interval)


def time_limit(log: IssueLog, doc: DocRef, model: JobDocument) -> float | None:
    """`spec.timeLimit` in seconds; None when not given (or wrong: logged)."""
    return positive_seconds(log, doc, "spec.timeLimit", model.spec.time_limit)
