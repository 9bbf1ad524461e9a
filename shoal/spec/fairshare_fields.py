"""The spec fields of fair share (seed 002): a job's `spec.freezingWindow`, checked and read
into `Job.freezing_window`. Errors name the field path and echo a bounded part of what was
given."""

from __future__ import annotations

import math

from shoal.api.elastic import parse_duration
from shoal.spec.documents import JobDocument
from shoal.spec.errors import DocRef, IssueLog, quote

FIELD = "spec.freezingWindow"


def freezing_window(log: IssueLog, doc: DocRef, model: JobDocument) -> float | None:
    """Seconds, from a number or a duration (`5m`); None when not given (the profile's
    default then holds). Negative, infinite or unreadable values are errors."""
    value = model.spec.freezing_window
    if value is None:
        return None
    try:
        seconds = parse_duration(value)
    except (ValueError, OverflowError) as exc:
        log.add(doc, FIELD, str(exc))
        return None
    if not math.isfinite(seconds):
        log.add(doc, FIELD, f"must be a finite number of seconds, got {quote(value)}")
        return None
    return seconds
