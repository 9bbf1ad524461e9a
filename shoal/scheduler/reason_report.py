"""Why jobs wait, reported as what changed since the last cycle (issue 18).

`Session.close` gives a reason for every waiting job, every cycle: with a backlog of 100,000
jobs that costs more than the cycle. A driver that keeps a table of every waiting job's
reason (the control loop: the API and `shoal jobs` show it) asks `Session.report` instead,
with a `ReasonLedger` — the table as of its last report — and gets `ReasonChanges`: the jobs
whose reason is new or different, those that no longer wait, and strict FIFO's line. Applied
to the ledger (`ReasonLedger.apply`), its reasons (`ReasonLedger.reasons`, `get`) are
exactly `close`'s `pending_by_job()` for that cycle.

What a report visits is what could have changed since the last one, and nothing else:

- jobs whose reason was written in this cycle or the last (the model's `noted`: reset when a
  cycle opens), whose notes came from preempt or reclaim (`Session.held_back`), jobs that
  moved between cycles — started or stopped waiting, changed what they hold or are blocked
  by (the waiting jobs' `moved`, read as the cycle opens and as it reports) — and jobs a
  statement committed in this cycle bound or evicted tasks of (`Session.touched`);
- a range of a class line that the allocate action's class walk left unwritten with one
  reason (`shoal.scheduler.actions.class_walk`) is not visited where the last report left
  the same span of that line (between the same order keys) with the same reason: those
  jobs' reasons stand, but for the ones that moved, visited above (a job joining a line is
  one). The rest of the range is written out job by job;
- strict FIFO's line behind its blocked head is read, not written out, and not judged by
  the enqueue action but where a job is visited (`shoal.scheduler.strict_line`), and the
  ledger keeps it as one reason for the jobs in it (`ReasonLedger.line`, `LineChange`):
  where the last report left a line judged under the same verdicts, the jobs of it behind
  the head that did not move are not visited — they wait behind this cycle's head, whoever
  it is, so a new head is one new reason, not one per job. Otherwise the report compares
  every waiting job, reading the line's reasons, and gives the ledger the line anew.

The ledger is kept by the driver between cycles of one model and must see every cycle's
report; a fresh ledger, another model, closed virtual clusters, every waiting job dropped
at once (`WaitingJobs.cleared`) or a model judging afresh (`incremental` off) make the report
compare every waiting job instead — the same answer, at `close`'s cost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from shoal.api.decisions import PendingKind, PendingReason
from shoal.scheduler.jobs import JobInfo

if TYPE_CHECKING:
    from shoal.scheduler.model import SchedulerModel
    from shoal.scheduler.session import Session
    from shoal.scheduler.strict_line import LineSpan

NOT_REACHED = PendingReason(PendingKind.INSUFFICIENT_RESOURCES, "not reached in this cycle")
"""The reason of a waiting job no action wrote one for."""

Entry = tuple[tuple[Any, ...], JobInfo]


@dataclass(slots=True)
class Range:
    """Jobs `entries[start:stop]` of one class line wait for `reason` (but those in the
    walk's `left_out`, which have their own)."""

    entries: Sequence[Entry]
    start: int
    stop: int
    reason: PendingReason



class UnwrittenReasons:
    """What a class walk left unwritten: its ranges, and how to write everything out job by
    job (`Session.settle` calls it; `report` may do without)."""

    def __init__(self, ranges: list[Range], left_out: set[JobInfo],
                 write_candidates: Any, visited: set[JobInfo]) -> None:
        self.ranges = ranges
        self.left_out = left_out
        self._write_candidates = write_candidates
        self.visited = visited
        """The jobs the walk tried: in no range."""

    def __call__(self) -> None:
        for part in self.ranges:
            self.write(part)
        self._write_candidates()

    def write(self, part: Range) -> None:
        left_out = self.left_out
        reason = part.reason
        for _, job in part.entries[part.start:part.stop]:
            if job not in left_out:
                job.reason = reason


Spans = tuple[Any, list[tuple[tuple[Any, ...], tuple[Any, ...], PendingReason]]]
"""A class line (kept alive, compared by identity) and the spans of it a report left with
one reason each: (first job's order key, last job's, reason)."""


@dataclass(frozen=True, slots=True)
class LineChange:
    """Strict FIFO's line in a ledger (`ReasonLedger.line`) after a report: the jobs that
    wait for its `reason` are the ones that did (but those in the report's `waits` or
    `gone`), and `joined`. A new head changes `reason` alone: the jobs behind it are not
    listed again."""

    reason: PendingReason | None
    """The reason of every job in the line; None: no line (every job has its own)."""
    joined: tuple[str, ...] = ()
    whole: bool = False
    """The line is `joined` alone: the jobs of the last one are all in `waits` or `gone`
    or `joined`."""


@dataclass(frozen=True, slots=True)
class ReasonChanges:
    """One cycle's reasons, as changes to the last report's table."""

    waits: dict[str, PendingReason] = field(default_factory=dict)
    """Jobs whose reason is new or different, with it (and jobs that leave the line)."""
    gone: tuple[str, ...] = ()
    """Jobs that had a reason and no longer wait (or hold enough to run)."""
    visited: int = 0
    """How many jobs the report looked at (for benchmarks and tests)."""
    state: ReportState | None = field(default=None, compare=False, repr=False)
    """What the ledger keeps for the next report; None for changes made up elsewhere
    (`shoal.control.waiting.WaitingReasons.replace`), after which the next report
    compares every waiting job."""
    line: LineChange | None = None
    """Strict FIFO's line after these changes; None: the ledger's stands as it is."""


@dataclass(frozen=True, slots=True)
class ReportState:
    """What a report leaves its ledger to read at the next one."""

    model: SchedulerModel
    cleared: int
    """`WaitingJobs.cleared` as of the report."""
    closed: bool
    """Whether any virtual cluster was closed."""
    noted: frozenset[str]
    """Jobs whose reason carried notes (`Session.held_back`)."""
    lines: dict[int, Spans]
    strict: LineSpan | None = None
    """Strict FIFO's line, where it was read as one span (`shoal.scheduler.strict_line`)."""


@dataclass(slots=True)
class LineReasons:
    """Strict FIFO's line as a ledger keeps it: every job of `members` waits for `reason`.
    A new head is one new `reason`, not one per job behind it."""

    reason: PendingReason
    members: set[str]


class ReasonLedger:
    """The reasons as of the last report, kept by the driver (module docstring): a job's is
    its own in `table`, or the line's (`line`) where it waits in strict FIFO's line. The
    two never hold the same job."""

    def __init__(self) -> None:
        self.table: dict[str, PendingReason] = {}
        """Every waiting job's reason but those in the line."""
        self.line: LineReasons | None = None
        self.state: ReportState | None = None
        """What the last report left (None: no report since the table last changed
        otherwise)."""

    def get(self, name: str) -> PendingReason | None:
        """The job's reason, or None where it does not wait."""
        reason = self.table.get(name)
        if reason is None:
            line = self.line
            if line is not None and name in line.members:
                return line.reason
        return reason

    def in_line(self, name: str) -> bool:
        line = self.line
        return line is not None and name in line.members

    def __len__(self) -> int:
        line = self.line
        return len(self.table) + (0 if line is None else len(line.members))

    def names(self) -> Iterator[str]:
        """Every job with a reason."""
        yield from self.table
        if self.line is not None:
            yield from self.line.members

    def reasons(self) -> dict[str, PendingReason]:
        """Every job's reason, written out (what `Session.close` gives as a table)."""
        out = dict(self.table)
        line = self.line
        if line is not None:
            out.update(dict.fromkeys(line.members, line.reason))
        return out

    def update(self, reasons: Mapping[str, PendingReason]) -> None:
        """These jobs wait for these reasons, each its own."""
        self.table.update(reasons)
        line = self.line
        if line is not None:
            line.members.difference_update(reasons)

    def forget(self, name: str) -> None:
        self.table.pop(name, None)
        if self.line is not None:
            self.line.members.discard(name)

    def apply(self, changes: ReasonChanges) -> None:
        """Bring the table to the cycle `changes` were reported for. A job is put in its
        new place before it leaves its old, so that a reader on another thread never
        finds it in neither."""
        table = self.table
        table.update(changes.waits)
        change = changes.line
        line = self.line
        if change is not None and change.whole:
            self.line = line = None if change.reason is None else \
                LineReasons(change.reason, set(change.joined))
            for name in change.joined:
                table.pop(name, None)
        elif line is not None:
            line.members.difference_update(changes.waits)
        for name in changes.gone:
            table.pop(name, None)
            if line is not None:
                line.members.discard(name)
        if change is not None and not change.whole:
            if change.reason is None:
                self.line = None
            elif line is None:
                self.line = LineReasons(change.reason, set(change.joined))
                for name in change.joined:
                    table.pop(name, None)
            else:
                line.reason = change.reason
                line.members.update(change.joined)
                for name in change.joined:
                    table.pop(name, None)
        self.state = changes.state


def report(session: Session, ledger: ReasonLedger) -> ReasonChanges:
    """`Session.report` (module docstring)."""
    model = session.model
    waiting = model.waiting
    last = ledger.state
    fresh = last is None or last.model is not model or last.cleared != waiting.cleared \
        or not model.incremental or bool(session.closed) or last.closed
    lazy = session.lazy
    spans: dict[int, Spans] = {}
    kept: list[tuple[Any, int, int, PendingReason]] = []
    left_out: set[JobInfo] = set()
    tried: set[JobInfo] = set()
    line = session.unwritten_line()
    if not fresh and isinstance(lazy, UnwrittenReasons) and session.settled_but_lazy():
        session.lazy = None
        left_out, tried = lazy.left_out, lazy.visited
        for part in lazy.ranges:
            assert last is not None
            kept.extend(_write_what_moved(part, lazy, last.lines, spans))
    elif line is None:
        session.settle()
    held_back = session.held_back
    strict = line.span() if line is not None else None
    state = ReportState(model, waiting.cleared, bool(session.closed), frozenset(held_back),
                        spans, strict)
    read: Callable[[JobInfo], PendingReason | None] | None = \
        line.reader() if line is not None else None
    blocked = line.reason if line is not None else None
    if fresh or last is None or (line is not None and (
            strict is None or last.strict is None or ledger.line is None
            or strict.generation != last.strict.generation)):
        return _changes(session, ledger, state, _everyone(waiting, ledger), read, blocked,
                        whole=True)
    spanned: dict[JobInfo, PendingReason] = {}
    if kept:
        read = spanned.get
    if len(session.reset_jobs) + len(model.noted) > len(waiting):
        # Most reasons were written (strict FIFO writes the line behind its head so, and a
        # cycle after one that did resets them): walking every job costs less than sets of
        # them. The spans left unwritten are read, not written, as below.
        for entries, start, stop, reason in kept:
            for _, job in entries[start:stop]:
                if job not in left_out:
                    spanned[job] = reason
        return _changes(session, ledger, state, _everyone(waiting, ledger), read, blocked,
                        whole=True)
    visit: set[JobInfo] = set(session.opened_moved)
    visit.update(session.reset_jobs, session.touched, waiting.moved,
                 model.noted - session.kept_noted, session.joined)
    if line is not None:
        visit.update(line.behind())
    if kept:
        # A visited job inside a span left unwritten has the span's reason, as writing it
        # out would have given it — read here, not written: a written reason is reset and
        # visited again next cycle. Lines are per virtual cluster: look in its own.
        by_queue: dict[str, list[tuple[Any, int, int, PendingReason]]] = {}
        for span in kept:
            by_queue.setdefault(span[0][0][1].queue, []).append(span)
        order = session.job_order_key
        for job in visit:
            mine = by_queue.get(job.queue)
            if not mine or job in tried or job in left_out or waiting.get(job.name) is not job:
                continue
            alone = (order(job),)  # sorts just before (its key, itself)
            for entries, start, stop, reason in mine:
                at = entries.bisect_left(alone)
                if start <= at < stop and entries[at][1] is job:
                    spanned[job] = reason
                    break
    names = {job.name for job in visit}
    names.update(held_back)
    names.update(last.noted)
    dissolved = line is None and ledger.line is not None
    if dissolved:
        # No line left to read: every job of the last one is looked at (the walk reached
        # them all, so this costs what the cycle did).
        assert ledger.line is not None
        names.update(ledger.line.members)
    elif last.strict is not None:
        # A job set aside last cycle and not this one is looked at; the rest of the last
        # line that did not move waits behind the new head (`shoal.scheduler.strict_line`).
        names.update(last.strict.behind)
    get = waiting.get
    return _changes(session, ledger, state, [(n, get(n)) for n in names], read, blocked,
                    whole=dissolved)


def _everyone(waiting: dict[str, JobInfo], ledger: ReasonLedger
              ) -> Iterator[tuple[str, JobInfo | None]]:
    """Every waiting job, and every job the ledger has a reason for that no longer waits.
    Walked, not listed: a list of a backlog's pairs costs a full garbage collection."""
    yield from waiting.items()
    for name in ledger.names():
        if name not in waiting:
            yield name, None


def _write_what_moved(part: Range, lazy: UnwrittenReasons, last: dict[int, Spans],
                      spans: dict[int, Spans]) -> list[tuple[Any, int, int, PendingReason]]:
    """Write out the jobs of a range that the last report did not leave with the same
    reason, and note the range for the next report; the parts not written, as (line,
    start, stop, reason)."""
    entries = part.entries
    if part.start >= part.stop or not hasattr(entries, "bisect_left"):
        lazy.write(part)
        return []
    reason = part.reason
    line = id(entries)
    mine = spans.get(line)
    if mine is None:
        mine = spans[line] = (entries, [])
    mine[1].append((entries[part.start][0], entries[part.stop - 1][0], reason))
    before = last.get(line)
    covered: list[tuple[int, int]] = []
    if before is not None and before[0] is entries:
        for low, high, was in before[1]:
            if was != reason:
                continue
            start = max(part.start, entries.bisect_left((low,)))
            stop = entries.bisect_left((high,))
            if stop < len(entries) and entries[stop][0] == high:
                stop += 1
            stop = min(part.stop, stop)
            if start < stop:
                covered.append((start, stop))
    covered.sort()
    at = part.start
    for start, stop in covered:
        if at < start:
            lazy.write(Range(entries, at, start, reason))
        at = max(at, stop)
    if at < part.stop:
        lazy.write(Range(entries, at, part.stop, reason))
    return [(entries, start, stop, reason) for start, stop in covered]


def _changes(session: Session, ledger: ReasonLedger, state: ReportState,
             jobs: Iterable[tuple[str, JobInfo | None]],
             read: Callable[[JobInfo], PendingReason | None] | None = None,
             blocked: PendingReason | None = None, whole: bool = False) -> ReasonChanges:
    """The reason of each (name, job now waiting under it, or None) as `Session.close`
    words it, where it differs from the ledger's; `read`: the reason of a job in a span
    left unwritten (None: its own stands). `blocked`: the reason of strict FIFO's line,
    which the jobs waiting for it join in the ledger (`LineChange`); `whole`: `jobs` are
    all the last line's, which is then replaced."""
    table = ledger.table
    members: set[str] | frozenset[str] = \
        frozenset() if ledger.line is None else ledger.line.members
    held_back = session.held_back
    job_ready = session.job_ready
    waits: dict[str, PendingReason] = {}
    gone: list[str] = []
    joined: list[str] = []
    visited = 0
    for name, job in jobs:
        visited += 1
        reason: PendingReason | None = None
        if job is not None and job.pending and not (job.holding > 0 and job_ready(job)):
            # A span's reason is written over the job's own, as writing it out would.
            reason = (read and read(job)) or job.reason or NOT_REACHED
            if held_back:
                notes = held_back.get(name)
                if notes:
                    reason = replace(reason, message="; ".join([reason.message, *notes]))
        member = name in members
        if reason is None:
            if member or name in table:
                gone.append(name)
        elif blocked is not None and (reason is blocked or reason == blocked):
            if whole or not member:
                joined.append(name)
        elif member:
            waits[name] = reason  # leaves the line
        else:
            last = table.get(name)
            if last is None or (last is not reason and last != reason):
                waits[name] = reason
    line: LineChange | None = None
    if blocked is not None:
        line = LineChange(blocked, tuple(joined), whole)
    elif whole and ledger.line is not None:
        line = LineChange(None, (), True)
    return ReasonChanges(waits, tuple(gone), visited, state, line)
