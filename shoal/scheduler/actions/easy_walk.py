"""The backfill action's EASY pass behind strict FIFO's blocked head, walked by job class
(issue 18): a cycle costs the classes and the jobs it may start, not the line.

EASY (`shoal.scheduler.actions.backfill`) tries, in job order, each job behind the head that
ends by the shadow time (`now + estimate <= shadow`) or needs no more GPUs than the extra
ones, and passes over the others with nothing done. A try that places nothing leaves a job
that holds nothing with the line's `Blocked` reason. So the only jobs whose visit does
anything are those a try may place; this walk visits those, and the same ones in the same
order as the walk job by job, with the line left unwritten (`shoal.scheduler.strict_line`:
a report reads it as one span).

The jobs behind the head are read from the class lines (`shoal.scheduler.class_lines`,
kept across cycles, each in job order), from where the allocate action's walk stopped, and
the loose jobs and those it set aside, one by one:

- A class's jobs hold nothing and have the same groups: they ask the same GPUs (`demand`).
  While that is more than the extra GPUs, only its jobs that end in time can be tried. IEEE
  addition rounds monotonically, so `now + e` never decreases as `e` grows: the jobs that
  end in time are a prefix of the line's jobs in estimate order (`ClassLines.by_estimate`),
  found by bisection with the very test the job-by-job walk makes. When they are few they
  are sorted in job order; when they are many the line is read in job order up to the next
  one, which is then near.
  The extra GPUs only shrink within a cycle (a job placed that does not end in time takes
  them), and the shadow time and the clock do not move: a job passed over would be passed
  over again. Nothing of that is kept across cycles, and need not be: a job "ending after
  the shadow time" (`now + e > shadow`) would stay so at a later `now' >= now` (rounding is
  monotone, so `now' + e >= now + e`) only while the shadow time does not move — and it
  moves with every task that starts, ends or runs past its expected end (counted as ending
  now, it drags the shadow time along with the clock). So the prefix is found again each
  cycle, exactly: a bisection per class (`_ending_in_time`).
- A class turned down with nothing its trial reads moved since (`Misfits.known`: within
  the cycle, or kept from an earlier one in the same world, as `ClassVerdicts.kept`) is
  *suspended*, as in allocate's class walk (`shoal.scheduler.actions.class_walk`): each of
  its jobs would be tried, get the same answer and keep the line's reason. It takes up
  again after the next job whose try moved that state. Under a backlog where nothing
  changed, every class that may be tried is suspended from the start.
- A class the enqueue action turns away is not behind the head at all (its verdict is per
  class); a job with a reason of its own this cycle, or one that started waiting in it, is
  not either.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sortedcontainers import SortedList

from shoal.api.time_limits import runtime_estimate
from shoal.scheduler.actions.allocate import allocate_job
from shoal.scheduler.class_lines import Entry, Timed, static_order
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.session import Session
from shoal.scheduler.strict_line import StrictLine
from shoal.scheduler.waiting import submission_order

SCAN_SHARE = 8
"""A class with more than one job in this many ending in time is read in job order for the
next such job (it is near); one with fewer has those jobs sorted (they are few)."""

ShadowTime = tuple[float, int]
"""When the head's pool will have enough free GPUs for it, and the GPUs beyond its need
free then (`actions.backfill.shadow_time`)."""


@dataclass(slots=True)
class _Class:
    """One class line behind the head, and where the walk is in it."""

    entries: SortedList[Entry]
    timed: SortedList[Timed] | None
    klass: int
    demand: int
    judged: bool = False
    """Whether the enqueue action's verdict on the class was read (it lets it through)."""
    in_time: list[Entry] | None = None
    """Its jobs that end by the shadow time, in job order, when they are few (worked out
    when first read); empty with `scan`."""
    scan: bool = False
    """Many of its jobs end in time: the line is read in job order for the next one."""


def demand_of(job: JobInfo) -> int:
    """The GPUs the job's waiting tasks ask for."""
    return sum(g.resources.gpu * len(job.pending[g.name]) for g in job.groups_with_pending())


def walkable(session: Session) -> StrictLine | None:
    """The strict line this cycle's EASY pass may walk by class, or None where it walks
    job by job: one line left unwritten, readable by a report, with class lines that stand
    and a job order that puts classed jobs by submission (the gang plugin's)."""
    line = session.unwritten_line()
    model = session.model
    if line is None or not model.incremental or session.closed or session.preempted \
            or session.behind_reservation or model.waiting.with_best_effort \
            or not static_order(session.hooks):
        return None
    admissions = session.admissions
    if admissions is None or admissions.done or admissions.at is None:
        return None
    lines = model.class_lines
    if not lines.sync(session):  # kept by the allocate action for this walk
        return None
    return line


def walk_line(session: Session, line: StrictLine, shadow: ShadowTime) -> None:
    """EASY behind `line`'s head, by class (module docstring)."""
    admissions = session.admissions
    assert admissions is not None and admissions.at is not None \
        and admissions.refusal is not None
    at, refusal, joined = admissions.at, admissions.refusal, admissions.joined
    lines = session.model.class_lines
    timed = lines.by_estimate()
    order = session.job_order_key
    prefix_length = len(session.hooks.job_orders)
    when, extra = shadow
    now = session.now
    memo = session.fit_memo
    misfits = session.misfits

    classes: list[_Class] = []
    for where, entries in lines.lines.items():
        classes.append(_Class(entries, timed.get(where), where[1], demand_of(entries[0][1])))
    # Loose jobs after the walk's place, and those it set aside, each on its own.
    set_aside = line.behind()
    loose = sorted([*((order(j), j) for j in lines.loose if submission_order(j) > at),
                    *((order(j), j) for j in set_aside)], key=lambda e: e[0])
    aside = set(set_aside)

    def in_time(job: JobInfo) -> bool:
        estimate = runtime_estimate(job.job)
        return estimate is not None and now + estimate <= when

    def next_of(source: _Class, after: tuple[Any, ...]) -> Entry | None:
        """The class's first job after `after` that may be tried with the extra GPUs now."""
        if source.demand <= extra:
            return _first_after(source.entries, after)
        if source.in_time is None:
            count = _ending_in_time(source.timed, now, when)
            source.scan = count * SCAN_SHARE > len(source.entries)
            source.in_time = [] if source.scan or source.timed is None else \
                sorted((key, job) for _, key, job in source.timed.islice(0, count))
        if not source.scan:
            return _first_after(source.in_time, after)
        entries = source.entries
        for entry in entries.islice(_index_after(entries, after)):
            if in_time(entry[1]):
                return entry
        return None

    heap: list[tuple[tuple[Any, ...], int, JobInfo]] = []
    suspended: list[int] = []
    for index, source in enumerate(classes):
        if misfits.known(memo, source.klass, False) is not None:
            suspended.append(index)
            continue
        # Behind the head: after the allocate action's place (its keys share the class's
        # order prefix, which reads only what every job of the class shares).
        entry = next_of(source, (*source.entries[0][0][:prefix_length], *at))
        if entry is not None:
            heap.append((entry[0], index, entry[1]))
    if loose:
        heap.append((loose[0][0], -1, loose[0][1]))
    heapq.heapify(heap)
    loose_at = 0

    def resume(key: tuple[Any, ...]) -> None:
        for index in suspended:
            entry = next_of(classes[index], key)
            if entry is not None:
                heapq.heappush(heap, (entry[0], index, entry[1]))
        suspended.clear()

    while heap:
        key, index, job = heapq.heappop(heap)
        if index < 0:
            loose_at += 1
            if loose_at < len(loose):
                heapq.heappush(heap, (loose[loose_at][0], -1, loose[loose_at][1]))
            if job not in aside and (not job.pending or job in joined
                                     or job.reason is not None or refusal(job) is not None):
                continue  # not let through by the enqueue action
            demand = demand_of(job)
        else:
            source = classes[index]
            if misfits.known(memo, source.klass, False) is not None:
                suspended.append(index)
                continue
            if not source.judged:
                if refusal(job) is not None:
                    continue  # the class is turned away: none of it is behind the head
                source.judged = True
            demand = source.demand
            if not job.pending or job in joined or job.reason is not None:
                entry = next_of(source, key)
                if entry is not None:
                    heapq.heappush(heap, (entry[0], index, entry[1]))
                continue
        ends_in_time = in_time(job)
        if not ends_in_time and demand > extra:
            if index >= 0:
                entry = next_of(classes[index], key)
                if entry is not None:
                    heapq.heappush(heap, (entry[0], index, entry[1]))
            continue
        state = misfits.state(memo)
        before = job.reason
        job.reason = None
        placed = allocate_job(session, memo, job)
        if not placed and job.holding == 0:
            job.reason = before  # the line's reason, read from the line
        else:
            line.keep_own(job)
        if placed and not ends_in_time:
            extra -= demand
        if index >= 0:
            entry = next_of(classes[index], key)
            if entry is not None:
                heapq.heappush(heap, (entry[0], index, entry[1]))
        if misfits.state(memo) != state:
            resume(key)


def _ending_in_time(timed: SortedList[Timed] | None, now: float, when: float) -> int:
    """How many jobs of `timed` have `now + estimate <= when`: a prefix of it (module
    docstring)."""
    if timed is None:
        return 0
    low, high = 0, len(timed)
    while low < high:
        middle = (low + high) // 2
        if now + timed[middle][0] <= when:
            low = middle + 1
        else:
            high = middle
    return low


def _index_after(entries: Sequence[Entry], after: tuple[Any, ...]) -> int:
    """The index of the first entry whose job order key comes after `after`."""
    probe = (after,)
    at = entries.bisect_left(probe) if isinstance(entries, SortedList) else \
        bisect_left(entries, probe)
    if at < len(entries) and entries[at][0] == after:
        at += 1
    return at


def _first_after(entries: Sequence[Entry], after: tuple[Any, ...]) -> Entry | None:
    """The first entry whose job order key comes after `after`."""
    at = _index_after(entries, after)
    return entries[at] if at < len(entries) else None
