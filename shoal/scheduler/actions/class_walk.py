"""The allocate action's per-queue walk over class lines: what a cycle costs is the job
classes and what changed, not every waiting job.

The walk makes the same decisions, and gives every job the same reason, as walking each
virtual cluster's admitted jobs one by one in job order (`Allocate.execute`): it walks the
same order, merged from the virtual cluster's class lines (`shoal.scheduler.class_lines`)
and its loose jobs. Under `ordering: global` every line and loose job is merged into the one
order of the whole cluster, as if all were one virtual cluster's (lines stay filed per
virtual cluster: quotas and reason reports read them so). What it skips is only what a walk
job by job would not try:

- A class the enqueue action turns away is judged once, on its first job; the others get
  the same reason — the verdict is per class.
- A class turned down earlier in the cycle, with nothing it reads moved since
  (`shoal.scheduler.job_classes.Misfits`), is *suspended*: its jobs would each get that
  reason without being tried. It stays suspended until that state moves — a commit, a new
  fit bound — and then takes up again after the job that moved it; the jobs it passed get
  the reason as one range. A virtual cluster whose every class is suspended is done.
- A class whose answer kept from an earlier cycle stands as the walk begins (nothing it
  reads moved: `Misfits.standing`) is *parked*: suspended from its first job on without
  being taken through the walk's heap, as the walk would suspend it on reaching it. A cycle
  in which only jobs arrived costs a look-up per class, not a trial. So is, in an unworded
  cycle, a class the whole cluster's room refuses (`allocate.room_refusals`): after a
  completion or a bind the kept answers no longer stand, but most classes are still short
  of GPUs; their refusal reads only the room and the class's request, a few comparisons.
  What the room answers is kept as the class's answer in that world (`Misfits.answers`),
  so a later cycle woken by arrivals alone finds it standing.
  If another virtual cluster's placements move what it reads before the walk first serves
  its own, its parked classes are asked when reached instead.

What the walk reads of each line (its first job, the order keys of its first and last
jobs, its size) is kept with the line from one cycle to the next (`ClassLines.sources`),
with the walk's place in it, which each walk resets: a walk's set-up is a pass over about a
dozen kept sources under a `las` backlog, not a source built per line.

The reasons and admissions of the jobs not visited are written out only when someone reads
them (`Session.settle`: the candidates, the pending reasons of `close`); the simulator's
`Session.decide` never does, and `Session.report` writes out only the ranges that changed
since its last report (`shoal.scheduler.reason_report`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sortedcontainers import SortedList

from shoal.api.decisions import PendingReason
from shoal.scheduler.admissions import ClassVerdict, Verdict
from shoal.scheduler.class_lines import ClassLines, Entry, LineSource, Walked
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.reason_report import Range, UnwrittenReasons
from shoal.scheduler.session import Session
from shoal.scheduler.waiting import submission_order

_NONE_LEFT_OUT: frozenset[JobInfo] = frozenset()


@dataclass(slots=True)
class _Queue:
    sources: list[LineSource] = field(default_factory=list)
    heads: list[tuple[tuple[Any, ...], int]] = field(default_factory=list)
    """(job order key of its next job, source) for each source neither done nor suspended."""
    suspended: list[int] = field(default_factory=list)
    parked_at: tuple[int, ...] | None = None
    """The misfit state its classes were parked (or left suspended) in, until the walk
    next serves it."""

    def add(self, source: LineSource) -> None:
        self.sources.append(source)
        self.heads.append((source.first, len(self.sources) - 1))


def walk_classes(session: Session, lines: ClassLines, verdict: Verdict,
                 queue_key: Callable[[str], tuple[Any, ...]],
                 visit: Callable[[JobInfo], None],
                 bucket: Callable[[str], str] = lambda queue: queue,
                 refuse: Callable[[JobInfo, int], PendingReason | None] | None = None,
                 short: Callable[[int], PendingReason | None] | None = None,
                 by_class: ClassVerdict | None = None) -> list[JobInfo]:
    """Walk every virtual cluster's admitted jobs as `Allocate.execute` does, `visit`ing
    those a walk job by job would try (module docstring); the jobs visited, and the loose
    jobs admitted, are returned (the only ones that may have surplus to place). `bucket`:
    the ordering bucket a virtual cluster's jobs are walked in, and `queue_key` orders
    (the virtual cluster itself, or one bucket for all under `ordering: global`).
    `refuse`: why the job's class is turned down by what its trial asks before it tries a
    node (`allocate.class_refusal`), or None: the class is then suspended as one turned
    down earlier, its first job not visited. `short`: the reason `refuse` gives the class
    when the whole cluster's room alone refuses it (`allocate.room_refusals`), as the walk
    begins, or None: a class so refused is parked as one whose kept answer stands.
    `by_class`: `verdict` for a line's first job, told its class (`Admissions.by_class`)."""
    session.take_admissions()
    memo = session.fit_memo
    misfits = session.misfits
    joined = session.joined
    # Jobs filed in a line whose reason was written this cycle before the walk (it is not
    # the blocker it was reset to) are not admitted, as the enqueue action would not.
    # The noted jobs kept from earlier cycles do not wait (`Session.kept_noted`): only those
    # noted since the cycle opened are asked, a set difference away from the many kept.
    noted = session.model.noted
    kept = session.kept_noted
    # The kept ones are among the noted (`KeptNotes`): as many means the same, none new.
    fresh = noted if not kept else noted - kept if len(noted) != len(kept) else ()
    left_out = {j for j in fresh if j.reason is not None} | joined
    ranges: list[Range] = []
    admitted_sources: list[LineSource] = []
    queues: dict[str, _Queue] = {}
    admitted: list[JobInfo] = []
    loose: dict[str, list[Entry]] = {}
    order = session.job_order_key
    answer = misfits.answers(memo, short)
    parked_at = misfits.state(memo)
    if lines.loose:
        for job in sorted(lines.loose, key=submission_order):
            if job.pending and job not in joined and verdict(job):
                admitted.append(job)
                loose.setdefault(bucket(job.queue), []).append((order(job), job))
    sources = lines.walk_sources()
    for (name, klass), source in sources.items():  # one per line, never empty
        line = source.entries
        first = head = source.head
        if left_out and first in left_out:  # seldom: most lines start with an admitted job
            later = next((e[1] for e in line if e[1] not in left_out), None)
            if later is None:
                continue
            first = later
        if not (verdict(first) if by_class is None else by_class(first, klass)):
            # The enqueue action's verdict is the class's: its other jobs get its reason.
            if first.reason is not None:
                ranges.append(Range(line, 0, source.size, first.reason))
            continue
        admitted_sources.append(source)
        where = bucket(name)
        queue = queues.get(where)
        if queue is None:  # not `setdefault`: a new _Queue per line costs more than its line
            queue = queues[where] = _Queue()
        # The kept source starts over (`LineSource`): what the walk reads before it writes.
        source.at = source.since = source.start = 0
        source.moved = None
        if first is head:
            carried = answer(klass)
            if carried is not None:
                # Parked from its first job on: what the walk would find on reaching it.
                source.suspended = carried
                queue.suspended.append(len(queue.sources))
                queue.sources.append(source)
                continue
        source.suspended = None
        queue.add(source)
    # Every line admitted (under backlog, most cycles): the lines' kept set of keys.
    lines.walked = Walked(
        session, tuple(admitted),
        lines.keys() if len(admitted_sources) == len(sources) else
        frozenset(s.where for s in admitted_sources if s.where is not None),
        frozenset(left_out) if left_out else _NONE_LEFT_OUT)
    for name, entries in loose.items():
        entries.sort(key=lambda e: e[0])
        queues.setdefault(name, _Queue()).add(LineSource(
            entries, None, None, entries[0][1], entries[0][0], entries[-1][0], len(entries)))
    for queue in queues.values():
        heapq.heapify(queue.heads)
        if queue.suspended:
            queue.parked_at = parked_at
    visited: list[JobInfo] = []

    def resume(queue: _Queue, key: tuple[Any, ...] | None) -> None:
        """What suspended classes read moved at the job with order key `key`: each one's
        jobs before it got its reason; it takes up again at its next job after it — unless
        what the walk would answer on reaching that job is known now (`Misfits.standing`,
        then `short`): it stays suspended there, with that answer from there on."""
        if not queue.suspended:
            return
        if key is None:
            _finish(queue, ranges)
            return
        now = misfits.answers(memo, short) if short is not None else None
        still: list[int] = []
        for index in queue.suspended:
            source = queue.sources[index]
            assert source.suspended is not None
            entries = source.entries
            if now is not None and source.klass is not None:
                answer = now(source.klass)
                if answer is source.suspended:
                    if source.last < key:  # passed its last job: its range is whole
                        ranges.append(Range(entries, source.start, source.size, answer))
                    else:
                        source.moved = key
                        still.append(index)
                    continue
            else:
                answer = None
            source.moved = None  # `stop` is past it: keys only grow as the walk goes
            stop = _bisect(entries, key, source.since)
            if answer is not None:
                if stop > source.start:
                    ranges.append(Range(entries, source.start, stop, source.suspended))
                source.suspended = answer
                source.start = source.since = source.at = stop
                if stop < source.size:
                    still.append(index)
                continue
            if stop > source.start:  # else a class parked as the walk began, not reached
                ranges.append(Range(source.entries, source.start, stop, source.suspended))
            source.suspended = None
            source.at = stop
            if stop < source.size:
                heapq.heappush(queue.heads, (source.entries[stop][0], index))
        queue.suspended[:] = still

    heap = [(queue_key(name), name) for name in queues]
    heapq.heapify(heap)
    while heap:
        _, name = heapq.heappop(heap)
        queue = queues[name]
        if queue.parked_at is not None:
            if misfits.state(memo) != queue.parked_at:
                # Another queue's walk moved what its parked classes read before the walk
                # reached them: each is asked when reached, as if never parked.
                _unpark(queue, ranges)
            queue.parked_at = None
        while True:
            if not queue.heads:
                resume(queue, None)
                break
            key, index = heapq.heappop(queue.heads)
            source = queue.sources[index]
            job = source.entries[source.at][1]
            if job in left_out:
                _advance(queue, source, index)
                continue
            if source.klass is not None:
                known = misfits.known(memo, source.klass, False)
                if known is None and refuse is not None:
                    state = misfits.state(memo)
                    known = refuse(job, source.klass)
                    if known is not None:
                        misfits.note(memo, source.klass, False, known)
                        if misfits.state(memo) != state:  # it learnt a fit bound
                            resume(queue, key)
                if known is not None:
                    source.suspended = known
                    source.start = source.since = source.at
                    source.moved = None
                    queue.suspended.append(index)
                    continue
            state = misfits.state(memo)
            commits = session.commits
            _advance(queue, source, index)
            visit(job)
            visited.append(job)
            if misfits.state(memo) != state:
                resume(queue, key)
            if session.commits != commits:
                # A queue's order key reads what is placed: unchanged when nothing was.
                if queue.heads or queue.suspended:
                    # Classes still suspended wait where the walk would next reach them,
                    # asked there if another queue's placements move what they read first.
                    queue.parked_at = misfits.state(memo) if queue.suspended else None
                    heapq.heappush(heap, (queue_key(name), name))
                break

    def write_candidates() -> None:
        candidates = list(admitted)
        for source in admitted_sources:
            candidates.extend(e[1] for e in source.entries if e[1] not in left_out)
        candidates.sort(key=submission_order)
        session.write_admitted(candidates)

    session.lazy = UnwrittenReasons(ranges, left_out, write_candidates, set(visited))
    return list(dict.fromkeys([*admitted, *visited]))


def _finish(queue: _Queue, ranges: list[Range]) -> None:
    """`resume` at the end of the queue's walk: each suspended class's jobs from where it
    last took up its answer to the end of its line get that answer. The queue is done."""
    for index in queue.suspended:
        source = queue.sources[index]
        entries = source.entries
        stop = source.size
        if stop > source.start:
            assert source.suspended is not None
            ranges.append(Range(entries, source.start, stop, source.suspended))
    queue.suspended.clear()


def _unpark(queue: _Queue, ranges: list[Range]) -> None:
    """Take up every suspended class where it was last asked (each one's first job, for a
    class parked as the walk began); the jobs it passed before keep their reason."""
    for index in queue.suspended:
        source = queue.sources[index]
        _caught_up(source)
        if source.since > source.start:  # what it passed before asking again holds
            assert source.suspended is not None
            ranges.append(Range(source.entries, source.start, source.since,
                                source.suspended))
        source.suspended = None
        source.at = source.since
        heapq.heappush(queue.heads, (source.entries[source.since][0], index))
    queue.suspended.clear()


def _caught_up(source: LineSource) -> None:
    """Move `since` to where the class last gave the same reason again (`LineSource.moved`)."""
    if source.moved is not None:
        source.since = source.at = _bisect(source.entries, source.moved, source.since)
        source.moved = None


def _advance(queue: _Queue, source: LineSource, index: int) -> None:
    source.at += 1
    if source.at < source.size:
        heapq.heappush(queue.heads, (source.entries[source.at][0], index))


def _bisect(entries: Sequence[Entry], key: tuple[Any, ...], low: int) -> int:
    """The first entry at or after `low` whose order key comes after `key`."""
    if isinstance(entries, SortedList):
        # `(key,)` sorts before every entry of that key and after those of smaller keys:
        # one search of the list's index, not a lookup through it per step.
        return max(low, entries.bisect_left((key,)))
    high = len(entries)
    while low < high:
        middle = (low + high) // 2
        if entries[middle][0] < key:
            low = middle + 1
        else:
            high = middle
    return low
