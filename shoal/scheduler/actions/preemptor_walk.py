"""The preempt action's walk by preemptor class (issue 18): what a cycle costs is the
preemptor classes and the searches, not every waiting job.

The action asks each waiting job in job order whether it wants to preempt, but a job whose
preemptor class (`shoal.scheduler.preemptor_class`) has a verdict that holds and notes
nothing is *answered* without asking (`Preemption.answered`). Until a commit moves the
session's generation, such a verdict answers every later job of the class as well: so the
class is *parked* at that job, and taken up again after a commit at its first job past the
committing one. The jobs it passed are answered in a range, never visited.

A class whose answer its kept facts already give is parked before the walk visits any job
(`_start`, `ShortSearches.known_answers`): a verdict that lasts in the world entered, or a
short verdict whose virtual cluster filed nothing behind its rank and whose pools did not
free enough since (or, with nothing ranked behind it, gave no capacity back since the count
node by node said no). Under a `las` backlog about 86 % of the classes a cycle walks are
answered so, and only the classes whose facts moved are visited at all. Every job visited
before the execution's first commit meets the state at its start, so an answer known there
is the one its first job would get; after a commit the parked classes are taken up at their
first job past it, as before.

`PreemptorLines` keeps the waiting jobs filed by class line (`shoal.scheduler.class_lines`)
and, within each line, by preemptor class, each in job order, from one cycle to the next:
a job is re-filed only when the class lines re-file it (`ClassLines.refiled`); each class's
jobs are kept as the walk's source for them, reset by each walk that reads it. A job the
lines cannot say is current — it moved since they last synced, earlier in this cycle — is
walked on its own, as are the loose jobs the allocate action admitted
(`ClassLines.walked`) and jobs without a preemptor class. Each class also keeps the order
keys of its jobs the allocate action's walk left out (`PreemptorLines.skipping`), changed
job by job as jobs are filed and as that set changes, so that a walk's set-up is O(classes
and what changed), not O(jobs left out).

The walk reads no candidate list: the reasons the allocate action's walk left unwritten
stay so (`Session.settle` writes them when someone reads them), but for the jobs it asks
whether they want to preempt, which read theirs. It gives the same decisions, reasons and
lending as the per-job loop: the quota tree's
lending that jobs answered since the last search would have left (`_settle_lending`) is
read from the parked ranges in job order (`PreemptorWalk.unsettled`). It runs only where
that holds: the allocate action's class walk made this cycle's candidates, no plugin reads
the preemptor itself when it picks victims or tasks, and job order keys come out the same
whenever first asked (`Preemption.looks` False).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from sortedcontainers import SortedList

from shoal.api.objects import Job
from shoal.scheduler.class_lines import ClassLines, Entry, LineKey, Walked, static_order
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.preemptor_class import Verdict, generation
from shoal.scheduler.reason_report import Range, UnwrittenReasons
from shoal.scheduler.session import Session

if TYPE_CHECKING:
    from shoal.scheduler.actions.preempt import Preemption

Key = tuple[Any, ...]


@dataclass(slots=True)
class _Source:
    entries: Sequence[Entry]
    parkable: bool
    """Its jobs share a preemptor class (not the loose ones, nor a line's classless)."""
    filed: bool = True
    """Its jobs are filed in `PreemptorLines` (not the loose ones)."""
    at: int = 0
    skipped: list[Key] | None = None
    """The order keys of its jobs in `PreemptorWalk.skip`, in no order until `_skipped_in`
    sorts them."""
    key: Hashable = None
    """The preemptor class its jobs are filed in (parkable sources only)."""
    spec: Job | None = None
    """The spec of a job filed in its class when the class was made: what the class says
    of every member's priority class (`_start` asks whether it may preempt)."""
    left: list[Key] = field(default_factory=list)
    """The order keys of its jobs that the allocate action's walk left out, as of the
    lines' last `skipping`, in no order: kept across cycles, changed job by job."""


class PreemptorLines:
    """Waiting jobs per class line and preemptor class, in job order, kept across cycles:
    each class's jobs as the walk's source for them, reset by each walk that reads it; and
    the classes of the lines the last walk read, in its order, for the next walk of the
    same lines (`walking`)."""

    keeps_skips = True
    """Keep each class's jobs left out across cycles, changed job by job (`skipping`);
    False (a test knob): every walk marks them afresh."""
    keeps_walking = True
    """Keep the classes of the lines a walk read, for the next that reads the same lines
    (`walking`); False (a test knob): every walk lists them afresh."""

    def __init__(self) -> None:
        self._stamp: Hashable = None
        self._filed: dict[JobInfo, tuple[LineKey, Hashable, Entry, _Source]] = {}
        self.filed_jobs = self._filed
        """Where each job is filed (`filed`), read-only: a walk looks up many."""
        self._left: frozenset[JobInfo] = frozenset()
        """The jobs left out that the classes' `left` keys stand for (`skipping`)."""
        self.by_line: dict[LineKey, dict[Hashable, _Source]] = {}
        self._classes = 0
        """Moves whenever a class is filed anew or emptied (`walking`)."""
        self._walking: tuple[frozenset[LineKey], int, list[_Source]] | None = None
        """The classes of the lines a walk last read, in its order (`walking`)."""

    def sync(self, session: Session, lines: ClassLines,
             class_key: Callable[[JobInfo], Hashable | None]) -> None:
        """Re-file the jobs the class lines re-filed since the last sync (all of them when
        the lines, the model, the profile or the quota tree are not those of the last)."""
        refiled = lines.follow(self)
        stamp = (session.model, session.hooks, session.quota, lines.epoch)
        filed = lines.filed()
        if stamp != self._stamp:
            self._stamp = stamp
            self._filed.clear()
            self.by_line.clear()
            self._classes += 1
            self._left = frozenset()
            jobs: Any = list(filed)
        else:
            jobs = refiled
            for job in jobs:
                self._unfile(job)
        left = self._left
        for job in jobs:
            found = filed.get(job)
            if found is not None:
                where, entry, _ = found
                key = class_key(job)
                line = self.by_line.setdefault(where, {})
                klass = line.get(key)
                if klass is None:
                    klass = line[key] = _Source(SortedList(), key is not None, key=key,
                                                spec=job.job)
                    self._classes += 1
                cast("SortedList[Entry]", klass.entries).add(entry)
                self._filed[job] = (where, key, entry, klass)
                if job in left:
                    klass.left.append(entry[0])
        refiled.clear()

    def skipping(self, left_out: frozenset[JobInfo]) -> None:
        """Bring every class's `left` to the jobs the allocate action's walk left out this
        cycle: under backlog much the same jobs from one cycle to the next, so only those
        that joined or quit the set are looked up (`sync` keeps `left` as jobs are filed)."""
        old = self._left
        if left_out is old:
            return
        found = self._filed.get
        for job in old - left_out:
            filed = found(job)
            if filed is not None:
                filed[3].left.remove(filed[2][0])
        for job in left_out - old:
            filed = found(job)
            if filed is not None:
                filed[3].left.append(filed[2][0])
        self._left = left_out

    def walking(self, keys: frozenset[LineKey]) -> list[_Source]:
        """The classes of the lines `keys`, line by line in the set's order: kept while the
        walks read one set (`ClassLines.keys`, under backlog) and no class comes or goes."""
        kept = self._walking
        if kept is not None and kept[0] is keys and kept[1] == self._classes \
                and self.keeps_walking:
            return kept[2]
        by_line = self.by_line
        walking = [source for where in keys if (line := by_line.get(where)) is not None
                   for source in line.values()]
        self._walking = (keys, self._classes, walking)
        return walking

    def filed(self, job: JobInfo) -> tuple[LineKey, Hashable, Entry, _Source] | None:
        """Where the job is filed: its line, its preemptor class, its entry and the class's
        jobs."""
        return self._filed.get(job)

    def _unfile(self, job: JobInfo) -> None:
        found = self._filed.pop(job, None)
        if found is None:
            return
        where, key, entry, klass = found
        line = self.by_line[where]
        cast("SortedList[Entry]", klass.entries).remove(entry)
        if job in self._left:
            klass.left.remove(entry[0])
        if not klass.entries:
            del line[key]
            self._classes += 1
            if not line:
                del self.by_line[where]


def walkable(session: Session, cycle: Preemption) -> Walked | None:
    """What the class walk admitted this cycle, where the action may walk by class."""
    walked = session.model.class_lines.walked
    hooks = session.hooks
    if walked is None or walked.session is not session or cycle.looks \
            or hooks.victim_selections or hooks.task_orders or session.preempted \
            or not static_order(hooks):
        return None
    return walked


def _bisect(entries: Sequence[Entry], probe: tuple[Key]) -> int:
    """`bisect_left` of `probe` in `entries`: a class's jobs are a `SortedList`, bisected
    by its own index (`bisect` would fetch each position it probes by a walk of that
    index), the loose ones a list."""
    if isinstance(entries, SortedList):
        return entries.bisect_left(probe)
    return bisect_left(entries, probe)


def _after(entries: Sequence[Entry], key: Key | None) -> int:
    """The first position whose job comes after `key` (None: the first)."""
    if key is None:
        return 0
    index = _bisect(entries, (key,))
    return index + 1 if index < len(entries) and entries[index][0] == key else index


def _skipped_in(source: _Source, start: int, stop: int) -> int:
    """How many of the source's jobs in [start, stop) are skipped."""
    keys = source.skipped
    if not keys or start >= stop:
        return 0
    entries = source.entries
    if start == 0 and stop >= len(entries):
        return len(keys)  # all of them: no order needed
    keys.sort()  # a job is skipped once: sorting again finds them sorted
    low = bisect_left(keys, entries[start][0])
    high = len(keys) if stop >= len(entries) else bisect_left(keys, entries[stop][0])
    return high - low


class PreemptorWalk:
    """One execution's walk (module docstring)."""

    _ranges: Sequence[Range] = ()
    """The ranges the allocate action's walk left unwritten, not yet filed per line in
    `unwritten` (`_write_reason`)."""

    def __init__(self, session: Session, cycle: Preemption, lines: PreemptorLines,
                 walked: Walked) -> None:
        self.session = session
        self.cycle = cycle
        class_lines = session.model.class_lines
        moved = session.model.waiting.moved
        left_out = walked.left_out
        self.skip: frozenset[JobInfo] = left_out | moved if moved else left_out
        """Filed jobs not walked in their class: not candidates, or walked as loose."""
        order = session.job_order_key
        loose = list(walked.loose)
        for job in moved:
            where = class_lines.line_of(job)
            if where is not None and where in walked.lines and job not in left_out:
                loose.append(job)
        self.sources: list[_Source] = []
        if loose:
            self.sources.append(_Source(sorted(((order(j), j) for j in loose),
                                               key=lambda e: e[0]), False, False))
        walking = self.sources
        if lines.keeps_skips:
            self._carry(lines, walked, walking, moved)
        else:
            self._set_up(lines, walked, walking)
        self.heap: list[tuple[Key, int]] = []
        """The sources' next jobs to visit, by job order (`_start`)."""
        self.parked: list[tuple[int, int, Verdict]] = []
        """(source, where it was parked, the verdict answering its jobs)."""
        self.answered: list[tuple[Key, JobInfo, Verdict]] = []
        """Loose jobs answered one by one since the last search or settling."""
        self.floor: Key | None = None
        """The job order key of the last search or settling: the jobs answered before it
        no longer count for the lending (`unsettled`)."""
        self.current: Key | None = None
        """The job order key of the job being visited."""
        self.lines = class_lines
        lazy = session.lazy
        self.unwritten: dict[int, list[Range]] = {}
        """Per class line (by identity), the ranges of reasons the allocate action's walk
        left unwritten (`reason_report.UnwrittenReasons`): `wants` reads a job's reason, so
        the walk writes it for each job it asks, as writing them all out would have."""
        self.written_apart: frozenset[JobInfo] | set[JobInfo] = frozenset()
        if isinstance(lazy, UnwrittenReasons):
            self.written_apart = lazy.left_out
            self._ranges = tuple(lazy.ranges)  # as they stand now

    def _set_up(self, lines: PreemptorLines, walked: Walked, walking: list[_Source]) -> None:
        """Reset the walked lines' classes and mark the jobs each skips; kept as the lines'
        what `PreemptorLines.skipping` keeps, read afresh (the test knob `keeps_skips`)."""
        _reset(lines, walked, walking, carried=False)
        found = lines.filed_jobs.get
        made: set[int] = set()
        for job in self.skip:
            filed = found(job)
            if filed is None:
                continue
            # A class of a line not walked now is reset when a walk next reads it; its keys
            # are sorted only if a count within it is asked for (`_skipped_in`). A list
            # not made here may be a class's kept `left`: never added to.
            holder = filed[3]
            keys = holder.skipped
            if keys is None or id(keys) not in made:
                keys = holder.skipped = []
                made.add(id(keys))
            keys.append(filed[2][0])

    def _carry(self, lines: PreemptorLines, walked: Walked, walking: list[_Source],
               moved: set[JobInfo]) -> None:
        """`_set_up` from the jobs left out kept per class (`PreemptorLines.skipping`):
        O(classes and what changed), not O(jobs left out). The jobs that moved earlier in
        this cycle are added to a copy of their class's keys."""
        lines.skipping(walked.left_out)
        _reset(lines, walked, walking, carried=True)
        if not moved:
            return
        found = lines.filed_jobs.get
        left_out = walked.left_out
        made: set[int] = set()
        for job in moved:
            filed = found(job)
            if filed is None or job in left_out:
                continue
            holder = filed[3]
            keys = holder.skipped
            if keys is None or id(keys) not in made:
                keys = holder.skipped = [] if keys is None else list(keys)
                made.add(id(keys))
            keys.append(filed[2][0])

    def run(self, max_preemptors: int | None) -> None:
        session, cycle = self.session, self.cycle
        heap, sources, skip = self.heap, self.sources, self.skip
        started = 0
        cycle.lazy_unsettled = self.unsettled
        self._start()
        key: Key | None = None
        behind = session.behind_reservation
        try:
            while heap:
                key, index = heapq.heappop(heap)
                source = sources[index]
                job = source.entries[source.at][1]
                if source.filed and job in skip:
                    self._advance(index)
                    continue
                if max_preemptors is not None and started >= max_preemptors:
                    break
                verdict = cycle.answer_filed(job, source.key) \
                    if source.parkable and not behind else cycle.answer(job)
                if verdict is not None:
                    if source.parkable:
                        self.parked.append((index, source.at, verdict))
                    else:
                        self.answered.append((key, job, verdict))
                        self._advance(index)
                    continue
                self._advance(index)
                self.current = key
                before = generation(session)
                self._write_reason(job)
                if cycle.wants(job):
                    self.floor = key
                    if cycle.preempt_for(job):
                        started += 1
                if generation(session) != before:
                    self._resume(key)
            else:
                key = None
            self._resume(key)
        finally:
            cycle.lazy_unsettled = None

    def _start(self) -> None:
        """Park each class whose answer its kept facts already give (`known_answers`) at its
        first job, as answering that job would, and put the others' first jobs on the
        heap. Every job visited before the execution's first commit meets the state at its
        start, once the classes' world is entered (as the first answer would enter it);
        after a commit, parked classes are taken up again at their first job past it
        (`_resume`), where the walk would have visited them anyway."""
        cycle, sources = self.cycle, self.sources
        heap = self.heap
        asked: list[tuple[int, Hashable]] = []
        # A job kept off a starving job's reservation has no class (`preemptor_class`):
        # its class is then worked out as each job is visited.
        if cycle.shorts and cycle.carries and not self.session.behind_reservation:
            may_preempt = self.session.model.priorities.may_preempt
            for index, source in enumerate(sources):
                # A class whose jobs are all walked elsewhere (`skip`) is never visited.
                spec = source.spec
                if source.parkable and (source.skipped is None
                                        or len(source.skipped) < len(source.entries)) \
                        and may_preempt(source.entries[0][1].job if spec is None else spec):
                    asked.append((index, source.key))
                else:
                    heap.append((source.entries[0][0], index))
        else:
            heap.extend((s.entries[0][0], i) for i, s in enumerate(sources))
        if asked:
            now = generation(self.session)
            if cycle._entered is None:
                cycle._enter(now)
            parked = self.parked
            for index, verdict in cycle.known_answers(asked, now, self._first):
                parked.append((index, 0, verdict))
            if len(parked) < len(asked):
                known = {index for index, _, _ in parked}
                heap.extend((sources[i].entries[0][0], i) for i, _ in asked if i not in known)
        heapq.heapify(heap)

    def _first(self, index: int) -> JobInfo | None:
        """The job of the source the walk would visit first (None: none)."""
        source = self.sources[index]
        if source.skipped is None:
            return source.entries[0][1]
        skip = self.skip
        return next((job for _, job in source.entries if job not in skip), None)

    def _write_reason(self, job: JobInfo) -> None:
        """Write the job's reason if the allocate action's walk left it in a range."""
        if self._ranges:
            # Filed per line when a reason is first written: most cycles' walks ask no job.
            for part in self._ranges:
                self.unwritten.setdefault(id(part.entries), []).append(part)
            self._ranges = ()
        if not self.unwritten or job in self.written_apart:
            return
        filed = self.lines.filed().get(job)
        if filed is None:
            return
        where, entry, _ = filed
        entries = self.lines.lines.get(where)
        parts = None if entries is None else self.unwritten.get(id(entries))
        if not parts or entries is None:
            return
        at = entries.bisect_left(entry)
        if at >= len(entries) or entries[at][1] is not job:
            return
        reason = None
        for part in parts:  # written in order: the last range that holds it wins
            if part.start <= at < part.stop:
                reason = part.reason
        if reason is not None:
            job.reason = reason

    def _advance(self, index: int) -> None:
        source = self.sources[index]
        source.at += 1
        if source.at < len(source.entries):
            heapq.heappush(self.heap, (source.entries[source.at][0], index))

    def _resume(self, key: Key | None) -> None:
        """A commit at the job of order key `key` (None: the walk's end): each parked
        class's jobs before it were answered; it takes up again at its next job after."""
        skipped = 0
        sources, heap = self.sources, self.heap
        for index, start, _ in self.parked:
            source = sources[index]
            entries = source.entries
            size = len(entries)
            if key is None:
                stop = size
            else:
                stop = max(start, _after(entries, key))
                if stop < size:
                    heapq.heappush(heap, (entries[stop][0], index))
            skipped += stop - start
            if source.skipped:
                skipped -= _skipped_in(source, start, stop)
            source.at = stop
        # The parked heads were counted as the action asked for their verdicts.
        self.cycle.classes.skipped += skipped - len(self.parked)
        self.parked.clear()
        self.answered.clear()

    def unsettled(self) -> list[tuple[JobInfo, Verdict]]:
        """The jobs answered since the last search or settling, last first, with the
        verdicts that answered them (`Preemption._settle_lending`)."""
        floor, current = self.floor, self.current
        found: list[tuple[Key, JobInfo, Verdict]] = [
            a for a in self.answered if floor is None or a[0] > floor]
        for index, start, verdict in self.parked:
            entries = self.sources[index].entries
            low = max(start, _after(entries, floor))
            high = len(entries) if current is None else _bisect(entries, (current,))
            found.extend((k, j, verdict) for k, j in entries[low:high] if j not in self.skip)
        found.sort(key=lambda a: a[0], reverse=True)
        self.floor = current
        self.answered.clear()
        for _, job, _ in found:
            self._write_reason(job)
        return [(job, verdict) for _, job, verdict in found]


def _reset(lines: PreemptorLines, walked: Walked, walking: list[_Source], *,
           carried: bool) -> None:
    """Reset the classes of the walked lines (kept by the lines) for this walk and queue them
    in `walking`; `carried`: each starts with its kept left-out keys, else with none."""
    classes = lines.walking(walked.lines)
    if carried:
        for source in classes:
            source.at = 0
            source.skipped = source.left or None
    else:
        for source in classes:
            source.at = 0
            source.skipped = None
    walking.extend(classes)
