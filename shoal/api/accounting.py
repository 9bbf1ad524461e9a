"""Usage accounting (issue 21, sacct/sreport's GPU-hours): what one task attempt used, how
it is cut into hour buckets, and how buckets add up into a usage report.

Pure values and arithmetic, shared by the store (which keeps the buckets, `shoal.store.
accounting`), the API and the simulator (which computes the same report from its simulated
task intervals), so a what-if and production are read the same way. Not to be confused
with `shoal.core.usage`, the *decayed* fair-share ledger: this one never forgets.

An attempt is one bind of a task: from the moment the scheduler bound it (its resources are
held from then on) to the moment it held them no more. Its outcome says whether the work
counts: `useful` (it succeeded, or it was stopped by its owner or its job's completion rule),
`preempted` (evicted: preempted, reclaimed, shrunk, drained, requeued) or `failed` (it
failed, hit its time limit, or was stopped because its job failed or restarted).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TypeVar

HOUR = 3600
DAY = 86400
MAX_SPAN_DAYS = 400
"""The longest span one report covers."""
MAX_HOURLY_SPAN_DAYS = 31
"""The longest span of a report with one point per hour (744 points a row at most)."""
DEFAULT_SPAN = 7 * DAY
MIB = 1024 * 1024
LATEST = 32_503_680_000.0
"""3000-01-01T00:00:00Z: the latest time a query may name."""

E = TypeVar("E", bound=StrEnum)


class Outcome(StrEnum):
    USEFUL = "useful"
    PREEMPTED = "preempted"
    FAILED = "failed"


class GroupBy(StrEnum):
    QUEUE = "queue"
    USER = "user"
    GPU_TYPE = "gpu-type"
    NODE = "node"
    JOB = "job"


class Step(StrEnum):
    NONE = "none"
    HOUR = "hour"
    DAY = "day"

    @property
    def seconds(self) -> int:
        return {Step.HOUR: HOUR, Step.DAY: DAY}.get(self, 0)


class AccountingError(ValueError):
    """A usage query that cannot be answered; `path` names the parameter."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt of one task: what it held, where, for whom, from `start` to `end`
    (seconds since the epoch, or simulated seconds)."""

    job: str
    queue: str
    user: str
    """'' for a job without a user."""
    gpu_type: str
    """The node's `gpu-type` label; '' when it has none."""
    node: str
    outcome: Outcome
    start: float
    end: float
    gpus: int
    cpu_millis: int
    memory_mib: int


@dataclass(frozen=True, slots=True)
class Amounts:
    """Resource-seconds summed over attempts (a task counts in the hour its attempt ended)."""

    tasks: int = 0
    gpu_seconds: float = 0.0
    cpu_seconds: float = 0.0
    """Core-seconds."""
    memory_byte_seconds: float = 0.0

    def __add__(self, other: Amounts) -> Amounts:
        return Amounts(self.tasks + other.tasks, self.gpu_seconds + other.gpu_seconds,
                       self.cpu_seconds + other.cpu_seconds,
                       self.memory_byte_seconds + other.memory_byte_seconds)


@dataclass(frozen=True, slots=True)
class BucketKey:
    """What the store keys an hour's usage by."""

    hour: int
    """The hour's first second (a multiple of `HOUR`)."""
    queue: str
    user: str
    gpu_type: str
    node: str
    outcome: Outcome

    def group(self, by: GroupBy) -> str:
        """This bucket's value of a grouping (not `JOB`: buckets do not keep jobs)."""
        return {GroupBy.QUEUE: self.queue, GroupBy.USER: self.user,
                GroupBy.GPU_TYPE: self.gpu_type, GroupBy.NODE: self.node}[by]


def hour_of(t: float) -> int:
    return math.floor(t / HOUR) * HOUR


def hour_pieces(start: float, end: float) -> Iterator[tuple[int, float]]:
    """[start, end) cut at hour boundaries: (hour, seconds in it), in time order. An empty
    interval is one piece of 0 seconds in its hour, so that it is still counted once."""
    end = max(start, end)
    hour = hour_of(start)
    at = start
    while True:
        upto = min(end, hour + HOUR)
        yield hour, upto - at
        if upto >= end:
            return
        at, hour = upto, hour + HOUR


def buckets(attempt: Attempt) -> Iterator[tuple[BucketKey, Amounts]]:
    """The attempt's resource-seconds per hour; its task counts in the last one."""
    pieces = list(hour_pieces(attempt.start, attempt.end))
    for i, (hour, seconds) in enumerate(pieces):
        key = BucketKey(hour, attempt.queue, attempt.user, attempt.gpu_type, attempt.node,
                        attempt.outcome)
        yield key, Amounts(1 if i == len(pieces) - 1 else 0, attempt.gpus * seconds,
                           attempt.cpu_millis / 1000 * seconds,
                           float(attempt.memory_mib) * MIB * seconds)


def aggregate(attempts: Iterable[Attempt]) -> dict[BucketKey, Amounts]:
    """Attempts summed into their hour buckets."""
    out: dict[BucketKey, Amounts] = {}
    for attempt in attempts:
        for key, amounts in buckets(attempt):
            out[key] = out.get(key, Amounts()) + amounts
    return out


@dataclass(frozen=True, slots=True)
class UsageQuery:
    """A report's question: grouped by `by`, over [since, until), with a series by `step`."""

    by: GroupBy
    since: float
    until: float
    step: Step

    @staticmethod
    def of(by: str | None, since: str | None, until: str | None, step: str | None,
           now: float) -> UsageQuery:
        """Read a query's parameters as a user gives them (ISO 8601 times or dates; UTC
        when no offset is given). Raises `AccountingError` naming the bad one."""
        chosen_by = _enum(GroupBy, by, "by", GroupBy.QUEUE)
        chosen_step = _enum(Step, step, "step", Step.NONE)
        end = now if until is None else parse_time(until, "until")
        start = end - DEFAULT_SPAN if since is None else parse_time(since, "since")
        if start >= end:
            raise AccountingError("since", "since must be before until")
        if end - start > MAX_SPAN_DAYS * DAY:
            raise AccountingError("since", f"a report spans at most {MAX_SPAN_DAYS} days")
        if chosen_step is Step.HOUR and end - start > MAX_HOURLY_SPAN_DAYS * DAY:
            raise AccountingError("step", f"step=hour spans at most {MAX_HOURLY_SPAN_DAYS} "
                                          "days; use step=day")
        return UsageQuery(chosen_by, start, end, chosen_step)

    def covers(self, hour: int) -> bool:
        """Whether an hour bucket counts: it overlaps [since, until) (an hour is the
        resolution, so a bucket partly in the span counts whole)."""
        return hour + HOUR > self.since and hour < self.until

    @property
    def first_hour(self) -> int:
        return hour_of(self.since)


def _enum(kind: type[E], value: str | None, path: str, default: E) -> E:
    if value is None:
        return default
    try:
        return kind(value)
    except ValueError:
        allowed = "|".join(e.value for e in kind)
        raise AccountingError(path, f"{path} must be one of {allowed}, "
                                    f"got {value[:40]!r}") from None


def parse_time(text: str, path: str) -> float:
    """An ISO 8601 date or time as seconds since the epoch; UTC when no offset is given."""
    if len(text) > 64:
        raise AccountingError(path, f"{path} is too long to be a time")
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z")
                                        else text)
    except ValueError:
        raise AccountingError(path, f"{path} must be an ISO 8601 date or time such as "
                                    f"2026-11-01 or 2026-11-01T12:00:00Z, got {text!r}"
                              ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        at = parsed.timestamp()
    except (OverflowError, ValueError):
        at = -1.0
    if not 0 <= at < LATEST:
        raise AccountingError(path, f"{path} must lie between 1970 and 3000, got {text!r}")
    return at


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class SeriesPoint:
    start: float
    gpu_seconds: float
    cpu_seconds: float


@dataclass(frozen=True, slots=True)
class ReportRow:
    key: str
    tasks: int = 0
    gpu_seconds: float = 0.0
    cpu_seconds: float = 0.0
    memory_byte_seconds: float = 0.0
    wasted: Mapping[Outcome, float] = field(default_factory=dict)
    """GPU-seconds of preempted and failed attempts (also counted in `gpu_seconds`)."""
    series: tuple[SeriesPoint, ...] = ()


@dataclass(frozen=True, slots=True)
class UsageReport:
    query: UsageQuery
    rows: tuple[ReportRow, ...]
    total: ReportRow


@dataclass(frozen=True, slots=True)
class Tally:
    """Summed amounts of one (period start, key, outcome): what a report is built from.
    `start` is the step's period (0 when the query has no series)."""

    start: float
    key: str
    outcome: Outcome
    amounts: Amounts


class _Sum:
    __slots__ = ("amounts", "series", "wasted")

    def __init__(self) -> None:
        self.amounts = Amounts()
        self.wasted: dict[Outcome, float] = {Outcome.PREEMPTED: 0.0, Outcome.FAILED: 0.0}
        self.series: dict[float, tuple[float, float]] = {}

    def add(self, tally: Tally, step: Step) -> None:
        a = tally.amounts
        self.amounts = self.amounts + a
        if tally.outcome is not Outcome.USEFUL:
            self.wasted[tally.outcome] += a.gpu_seconds
        if step is not Step.NONE:
            gpu, cpu = self.series.get(tally.start, (0.0, 0.0))
            self.series[tally.start] = (gpu + a.gpu_seconds, cpu + a.cpu_seconds)

    def row(self, key: str) -> ReportRow:
        a = self.amounts
        return ReportRow(key, a.tasks, a.gpu_seconds, a.cpu_seconds, a.memory_byte_seconds,
                         dict(self.wasted),
                         tuple(SeriesPoint(t, g, c) for t, (g, c) in sorted(self.series.items())))


def period_of(hour: int, step: Step) -> float:
    """The start of the step's period (UTC day or hour) an hour bucket falls in."""
    return 0.0 if step is Step.NONE else float(hour - hour % step.seconds)


def report(query: UsageQuery, tallies: Iterable[Tally]) -> UsageReport:
    """Sum tallies into one row per key (sorted by GPU-seconds, most first, then key) and a
    total."""
    sums: dict[str, _Sum] = {}
    total = _Sum()
    for tally in tallies:
        sums.setdefault(tally.key, _Sum()).add(tally, query.step)
        total.add(tally, query.step)
    rows = sorted((s.row(key) for key, s in sums.items()),
                  key=lambda r: (-r.gpu_seconds, r.key))
    return UsageReport(query, tuple(rows), total.row("total"))


def tallies_of_buckets(query: UsageQuery, buckets_: Mapping[BucketKey, Amounts]
                       ) -> Iterator[Tally]:
    """Hour buckets (not by job) as tallies of `query`: those it covers, grouped."""
    for key, amounts in buckets_.items():
        if query.covers(key.hour):
            yield Tally(period_of(key.hour, query.step), key.group(query.by), key.outcome,
                        amounts)


def tallies_of_attempts(query: UsageQuery, attempts: Iterable[Attempt]) -> Iterator[Tally]:
    """Attempts as tallies of `query` (any grouping, `JOB` included), cut into hours first
    so that a report by job reads the same span as one by queue."""
    for attempt in attempts:
        for key, amounts in buckets(attempt):
            if query.covers(key.hour):
                value = attempt.job if query.by is GroupBy.JOB else key.group(query.by)
                yield Tally(period_of(key.hour, query.step), value, key.outcome, amounts)


def usage_report(query: UsageQuery, attempts: Iterable[Attempt]) -> UsageReport:
    """The report of these attempts (what the simulator writes)."""
    return report(query, tallies_of_attempts(query, attempts))
