"""A Job document's checkpoint interval (issue 17, item 7): `spec.checkpointInterval`.

Seconds, or a Go duration (`10m0s`), strictly positive and finite. The job says how often it
saves its state, so that an eviction loses at most that much of its run: victims are ranked
by the work they would lose (`shoal.scheduler.work_lost`) and the simulator keeps the work up
to the last checkpoint (`shoal.sim.work`). Absent: the job keeps nothing when evicted.
"""

from __future__ import annotations

import math

from shoal.api.elastic import parse_duration
from shoal.spec.documents import JobDocument
from shoal.spec.errors import DocRef, IssueLog, quote

PATH = "spec.checkpointInterval"


def checkpoint_interval(log: IssueLog, doc: DocRef, model: JobDocument) -> float | None:
    """`spec.checkpointInterval` in seconds; None when not given (or wrong: logged)."""
    value = model.spec.checkpoint_interval
    if value is None:
        return None
    try:
        seconds: float | None = parse_duration(value)
    except (ValueError, OverflowError):
        seconds = None
    if seconds is None or not 0 < seconds < math.inf:  # also refuses nan
        log.add(doc, PATH, "must be a positive, finite number of seconds or a duration such "
                           f"as 10m0s, got {quote(value)}")
        return None
    return seconds
