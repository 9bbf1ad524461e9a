"""Usage accounting in the store (issue 21): each task attempt's resource-seconds, written
in the transaction that ends the attempt, and the report queries over them.

An attempt is charged from its bind until the engine saw it end (`TaskStatus.ended_at`,
`attempt_end`) where the engine said so, else until the store records its end: one that
ended while `shoal up` was down is not charged for the downtime. The task's state change
and its event keep the store's time (when Shoal learned of the end, the order its events
are read in); only the usage uses the engine's.

An attempt ends when its task stops holding resources (bound, running or releasing → any
other state). Both writers of task states call `record_ended` inside their transaction:
`Repository._move_task` (one task) and `TaskBatches.record_exits` (a poll's successes), so
an attempt is recorded exactly when its end is, and once, as the lifecycle lets a task
leave a holding state once per bind: a crash before the commit loses both, and a restart
that re-adopts the task ends it (and records it) once.

The attempt is summed into its hour buckets, and those into UTC-day and 30-day-period
buckets (`usage_hours`, `usage_days`, `usage_periods`, all upserted), and kept on its own
(`usage_attempts`) for `ATTEMPT_RETENTION`, the only place a report by job reads. A report
reads the coarsest buckets that fit whole in its span and finer ones only at its ends
(a year without a series: a dozen periods, a few days and hours per key); one with a
series reads buckets no coarser than its step (`step=hour` spans at most
`shoal.api.accounting.MAX_HOURLY_SPAN_DAYS`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, bindparam, delete, func, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from shoal.api import TaskState
from shoal.api.accounting import (
    DAY,
    HOUR,
    Amounts,
    Attempt,
    BucketKey,
    GroupBy,
    Outcome,
    Step,
    Tally,
    UsageQuery,
    UsageReport,
    buckets,
    report,
    tallies_of_attempts,
)
from shoal.api.resources import Resources
from shoal.store import convert
from shoal.store.driver_writes import execute_many
from shoal.store.engine import Store
from shoal.store.models import (
    NodeRow,
    UsageAttemptRow,
    UsageDayRow,
    UsageHourRow,
    UsagePeriodRow,
)
from shoal.store.stops import REQUEUING, RESTARTING_GANG

PERIOD = 30 * DAY
"""The coarsest buckets' length."""
ATTEMPT_RETENTION = 90 * DAY
"""How long an attempt is kept on its own (a report by job reaches that far back); its
hour and day buckets are kept for good."""
_FAILED_STOPS = (RESTARTING_GANG, "Failed", "Pending")
"""Stop marks whose tasks' work is lost to a failure: the job failed, is retried after
one (`jobRetryCount`), or its gang restarts after losing a member."""


@dataclass(frozen=True, slots=True)
class EndedAttempt:
    """What a writer knows of an attempt that just ended, before the node's GPU type."""

    job_id: int
    job: str
    task: str
    """`group/index`."""
    attempt: int
    queue: str
    user: str
    node: str
    started: float
    ended: float
    resources: Resources
    outcome: Outcome


def outcome_of(source: TaskState, target: TaskState, stopping: str | None) -> Outcome | None:
    """How an attempt ends when its task moves `source` → `target` while its job's stop
    mark is `stopping`; None when the move ends no attempt."""
    if not source.holds_resources or target.holds_resources:
        return None
    if target is TaskState.SUCCEEDED:
        return Outcome.USEFUL
    if target is TaskState.FAILED:
        return Outcome.FAILED
    if stopping in _FAILED_STOPS:
        return Outcome.FAILED
    if target is TaskState.PENDING:
        # An eviction (no stop under way) or a requeue by request: the work is lost to
        # someone else's need.
        return Outcome.PREEMPTED if stopping in (None, REQUEUING) else Outcome.FAILED
    return Outcome.USEFUL  # cancelled by its owner, or its job ended by its completion rule


def attempt_end(started: float, now: float, ended_at: float | None) -> float:
    """When an attempt that started at `started` (the store's clock) and whose end the
    store records at `now` is charged until: the engine's end time `ended_at` when it said
    one, kept within [started, now] (the engine's clock may be off from the store's), else
    `now`. An attempt that ended while the server was down is thus not charged for the
    downtime."""
    if ended_at is None:
        return now
    return min(now, max(started, ended_at))


def group_resources(spec: Sequence[dict[str, Any]], group: str) -> Resources:
    for g in spec:
        if g["name"] == group:
            return convert.resources_from_json(g["resources"])
    return Resources()


# Built once: building a statement (its columns coerced, its cache key) cost more than
# running it, at every exit batch (as `shoal.store.task_batches`' statements).
_NODE_LABELS = select(NodeRow.name, NodeRow.labels).where(
    NodeRow.name.in_(bindparam("nodes", expanding=True)))
_INSERT_ATTEMPTS = insert(UsageAttemptRow)


def record_ended(s: Session, ends: Sequence[EndedAttempt]) -> None:
    """Record these attempts in `s`'s transaction: each on its own, and summed into its hour
    and day buckets."""
    if not ends:
        return
    nodes = sorted({e.node for e in ends if e.node})
    types: dict[str, str] = {}
    if nodes:
        # Through the connection: a read here must not flush the caller's unit of work
        # halfway through its moves.
        for name, labels in s.connection().execute(_NODE_LABELS, {"nodes": nodes}):
            types[name] = str((labels or {}).get("gpu-type", ""))
    attempts = [(e, Attempt(e.job, e.queue, e.user, types.get(e.node, ""), e.node,
                            e.outcome, e.started, max(e.started, e.ended),
                            e.resources.gpu, e.resources.cpu, e.resources.memory))
                for e in ends]
    connection = s.connection()
    execute_many(connection, _INSERT_ATTEMPTS, [
        {"job_id": e.job_id, "job": e.job, "task": e.task, "attempt": e.attempt,
         "queue": a.queue, "user": a.user, "gpu_type": a.gpu_type, "node": a.node,
         "outcome": a.outcome.value, "started": a.start, "ended": a.end, "gpus": a.gpus,
         "cpu_millis": a.cpu_millis, "memory_mib": a.memory_mib} for e, a in attempts])
    hours: dict[BucketKey, Amounts] = {}
    for _, attempt in attempts:
        for key, amounts in buckets(attempt):
            hours[key] = hours.get(key, Amounts()) + amounts
    for level in LEVELS:
        sums: dict[BucketKey, Amounts] = {}
        for key, amounts in hours.items():
            coarse = BucketKey(key.hour - key.hour % level.size, key.queue, key.user,
                               key.gpu_type, key.node, key.outcome)
            sums[coarse] = sums.get(coarse, Amounts()) + amounts
        _upsert(s, level.table, level.column, sums)


def _upsert(s: Session, table: BucketTable, period: str,
            sums: dict[BucketKey, Amounts]) -> None:
    """Add `sums` to their buckets, creating those that do not exist yet: one statement
    that two transactions can run at once without a duplicate key."""
    statement = _upsert_statement(s.get_bind().dialect.name, table, period)
    rows = [{period: key.hour, "queue": key.queue, "user": key.user,
             "gpu_type": key.gpu_type, "node": key.node, "outcome": key.outcome.value,
             "tasks": a.tasks, "gpu_seconds": a.gpu_seconds, "cpu_seconds": a.cpu_seconds,
             "memory_byte_seconds": a.memory_byte_seconds}
            for key, a in sorted(sums.items(), key=lambda kv: _order(kv[0]))]
    # In key order, so that two writers lock shared buckets in the same order.
    execute_many(s.connection(), statement, rows)


@functools.cache
def _upsert_statement(dialect: str, table: BucketTable, period: str) -> Any:
    """`_upsert`'s statement, built once per dialect and table: building it afresh (its
    sums, its conflict clause) cost more than running it, once per level per exit batch."""
    make = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = make(table)
    added = statement.excluded
    return statement.on_conflict_do_update(
        index_elements=[period, "queue", "user", "gpu_type", "node", "outcome"],
        set_={"tasks": table.tasks + added.tasks,
              "gpu_seconds": table.gpu_seconds + added.gpu_seconds,
              "cpu_seconds": table.cpu_seconds + added.cpu_seconds,
              "memory_byte_seconds": table.memory_byte_seconds + added.memory_byte_seconds})


def _order(key: BucketKey) -> tuple[int, str, str, str, str, str]:
    return key.hour, key.queue, key.user, key.gpu_type, key.node, key.outcome.value


BucketTable = type[UsageHourRow] | type[UsageDayRow] | type[UsagePeriodRow]


@dataclass(frozen=True, slots=True)
class Level:
    """One table of buckets: what its period column is named, how long a period is."""

    table: BucketTable
    column: str
    size: int


LEVELS = (Level(UsageHourRow, "hour", HOUR), Level(UsageDayRow, "day", DAY),
          Level(UsagePeriodRow, "period", PERIOD))
"""Finest first."""

_COLUMN = {GroupBy.QUEUE: "queue", GroupBy.USER: "user", GroupBy.GPU_TYPE: "gpu_type",
           GroupBy.NODE: "node"}


class Accounting:
    """The usage-report half of `Repository` (which supplies the store and the clock)."""

    store: Store
    clock: Callable[[], float]

    def usage_report(self, query: UsageQuery) -> UsageReport:
        """The usage report `query` asks for, read in one transaction."""
        with self.store.reads.begin() as s:
            if query.by is GroupBy.JOB:
                return report(query, tallies_of_attempts(query, _attempts(s, query)))
            return report(query, list(_bucket_tallies(s, query)))

    def prune_usage_attempts(self, before: float) -> int:
        """Forget the attempts that ended before `before` (their buckets stay); how many."""
        with self.store.sessions.begin() as s:
            result = s.execute(delete(UsageAttemptRow).where(UsageAttemptRow.ended < before))
            return int(getattr(result, "rowcount", 0) or 0)


def _attempts(s: Session, query: UsageQuery) -> Iterator[Attempt]:
    t = UsageAttemptRow
    for row in s.execute(select(t.job, t.queue, t.user, t.gpu_type, t.node, t.outcome,
                                t.started, t.ended, t.gpus, t.cpu_millis, t.memory_mib)
                         .where(t.ended >= query.first_hour,
                                # an hour partly in the span counts whole
                                t.started < -(-query.until // HOUR) * HOUR)):
        yield Attempt(row[0], row[1], row[2], row[3], row[4], Outcome(row[5]), row[6], row[7],
                      row[8], row[9], row[10])


def _bucket_tallies(s: Session, query: UsageQuery) -> Iterator[Tally]:
    """The buckets `query` covers, summed per (period, key, outcome) by the database."""
    usable = [level for level in LEVELS
              if query.step is Step.NONE or level.size <= query.step.seconds]
    for level, first, last in _ranges(float(query.first_hour), query.until, usable[::-1]):
        yield from _sums(s, level, first, last, query)


def _ranges(first: float, last: float, levels: Sequence[Level]
            ) -> list[tuple[Level, float, float]]:
    """[first, last) as bucket ranges: whole buckets of the coarsest level in the middle,
    finer ones at the ends (`levels` coarsest first, hours last; `first` is on an hour)."""
    if first >= last:
        return []
    level, finer = levels[0], levels[1:]
    if not finer:
        return [(level, first, last)]
    low = -(-first // level.size) * level.size
    high = (last // level.size) * level.size
    if low >= high:
        return _ranges(first, last, finer)
    return [*_ranges(first, low, finer), (level, low, high), *_ranges(high, last, finer)]


def _sums(s: Session, level: Level, first: float, last: float, query: UsageQuery
          ) -> Iterator[Tally]:
    table = level.table
    period = getattr(table, level.column)
    key = getattr(table, _COLUMN[query.by])
    start: ColumnElement[Any]
    if query.step is Step.NONE:
        start = func.min(period)  # a constant per group would do: report ignores it
        groups: list[Any] = [key, table.outcome]
    else:
        start = (period // query.step.seconds) * query.step.seconds
        groups = [start, key, table.outcome]
    found = s.execute(
        select(start, key, table.outcome, func.sum(table.tasks), func.sum(table.gpu_seconds),
               func.sum(table.cpu_seconds), func.sum(table.memory_byte_seconds))
        .where(period >= first, period < last).group_by(*groups))
    for when, value, outcome, tasks, gpu, cpu, memory in found:
        yield Tally(0.0 if query.step is Step.NONE else float(when), value, Outcome(outcome),
                    Amounts(int(tasks), float(gpu), float(cpu), float(memory)))
