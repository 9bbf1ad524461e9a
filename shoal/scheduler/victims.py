"""What may be taken from a running job for another, and in which order (seed 001's
job-level preemption).

A job is never cut at random: it gives up a *unit* at a time.

- An elastic job first gives up its elastic surplus, one allowed size at a time: from 8 to 4,
  then from 4 to 2 for powers of two, its highest-indexed tasks first. A shrink never goes
  below `minReplicas`, so it never breaks the gang.
- Then it is evicted whole: every task it still holds. A gang is never left running below
  its minimum.
- A job placed task by task (the default scheduler: no gang) is never evicted whole: it
  gives up its tasks (after any elastic surplus) one at a time, as pods are preempted under
  Volcano, and runs on with the others. Its newest task first (its tasks share its
  priority: the latest started, then the last group's highest index). Each such unit
  stands alone: taking it needs none of the job's other units, so the actions may take or
  spare it on its own (`VictimUnit.chain`).

Non-preemptable work (`Job.preemptable` false: `spec.preemptable: false`, Volcano's
`volcano.sh/preemptable: "false"`) gives up nothing: it has no units. Nor does an online
service (`Job.service`, seed 002): `Job.evictable` says both.

Protection: no task is taken before it has run `protectFor` seconds (Volcano's
`volcano.sh/cooldown-time`). A unit that would take a protected task is not offered, nor any
unit of that job after it (a task-by-task job's other tasks are still offered).

Order of units across the candidate jobs (the score; the preemptor takes the first ones
until it fits):
1. the lowest-ranked job first (the preempt action's rank: priority, and the order plugins);
2. elastic surplus before any guaranteed task;
3. the least work lost first (issue 17): what its tasks did since their last checkpoint —
   GPU-seconds, then CPU core-seconds (`shoal.scheduler.work_lost`); a job without
   `spec.checkpointInterval` loses everything since its tasks started. It comes after rank,
   as Volcano ranks victims by priority first: a cheap victim of a better rank is still
   spared; and after the surplus-first rule, since taking surplus keeps the job running;
4. the most recently started first;
5. the job that comes last in the session's job order first.

A job's own units keep their order (a job is shrunk 8 → 4 before 4 → 2, and evicted whole
only after). Victim-selection plugins may veto tasks: a unit with a vetoed task is not
offered either.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from shoal.api.resources import Resources, total
from shoal.scheduler.jobs import JobInfo, TaskInfo
from shoal.scheduler.running_order import latest_start
from shoal.scheduler.work_lost import seconds_lost, work_lost


@dataclass(frozen=True, slots=True)
class VictimUnit:
    job: JobInfo
    tasks: tuple[TaskInfo, ...]
    shrink_to: int | None
    """The elastic size the job is left at; None: no shrink — the job is evicted whole, or
    (`alone`) loses one task."""
    seq: int
    """Its place among its job's units."""
    alone: bool = False
    """A single task of a job placed task by task: it needs none of the job's other units
    taken before it, nor keeps them from being taken without it."""

    @property
    def chain(self) -> str:
        """What the unit is chained to: its job, whose units go in order (an elastic job is
        shrunk 8 → 4 before 4 → 2) — or, for a unit that stands alone, its own task. Where
        an action would stop at a job's unit that it cannot take or must keep, it stops at
        the chain."""
        return str(self.tasks[0].ref) if self.alone else self.job.name

    @property
    def gpus(self) -> int:
        return sum(self.job.job.group(t.ref.group).resources.gpu for t in self.tasks)

    @property
    def request(self) -> Resources:
        """What its tasks hold."""
        return total(self.job.job.group(t.ref.group).resources for t in self.tasks)


def units_of(job: JobInfo, now: float,
             allowed: Callable[[Sequence[TaskInfo]], bool] = lambda _: True) -> list[VictimUnit]:
    """The units `job` may give up, in its own order (see the module's text). `allowed`
    says whether a set of tasks may be taken (the victim-selection plugins)."""
    if not job.job.evictable:
        return []
    out: list[VictimUnit] = []
    left = list(job.running)
    elastic = job.job.elastic
    if elastic is not None:
        size = job.elastic_size()
        surplus = sorted((t for t in left if job.is_surplus(t.ref.group, t.ref.index)),
                         key=lambda t: t.ref.index, reverse=True)
        smaller = elastic.shrunk(size) if elastic.allows(size) else None
        while smaller is not None:
            taken = tuple(surplus[:size - smaller])
            if len(taken) < size - smaller or not _free(job, taken, now) or \
                    not allowed(taken):
                return out  # the job's later units need this one
            out.append(VictimUnit(job, taken, smaller, len(out)))
            surplus = surplus[len(taken):]
            left = [t for t in left if t not in taken]
            size = smaller
            smaller = elastic.shrunk(size)
    if not job.job.gang:
        out.extend(_task_units(job, left, now, allowed, len(out)))
    elif left and _free(job, left, now) and allowed(left):
        out.append(VictimUnit(job, tuple(left), None, len(out)))
    return out


def _task_units(job: JobInfo, tasks: list[TaskInfo], now: float,
                allowed: Callable[[Sequence[TaskInfo]], bool], seq: int) -> list[VictimUnit]:
    """A job placed task by task gives up `tasks` one at a time, newest first: the latest
    started (a task not started yet counts as started now), then the last group's highest
    index. A protected or vetoed task is skipped, not a stop: the others do not need it."""
    position = {g.name: i for i, g in enumerate(job.job.groups)}
    newest = sorted(tasks, reverse=True, key=lambda t: (
        now if t.started is None else t.started, position[t.ref.group], t.ref.index))
    out: list[VictimUnit] = []
    for task in newest:
        taken = (task,)
        if _free(job, taken, now) and allowed(taken):
            out.append(VictimUnit(job, taken, None, seq + len(out), alone=True))
    return out


def ordered(units: list[VictimUnit], rank: Callable[[JobInfo], tuple[Any, ...]],
            order: Callable[[JobInfo], tuple[Any, ...]], now: float,
            every_key: bool = True) -> list[VictimUnit]:
    """Every candidate job's units in the order of the score (the module's text). The keys
    below rank and kind are the same for all of a job's units of one kind (its first one's
    loss; its latest start), so each job's units keep their own order. Last tie-break: the
    job that comes last in the session's full `order`, first. Each job's keys are asked
    once, not once per unit and sort; `every_key` False: `order` only for jobs whose units
    tie on every other key (where it gives a job's keys the same whenever first asked,
    `Preemption.looks`), as under backlog few do."""
    keys: dict[JobInfo, tuple[tuple[Any, ...], float]] = {}
    lost: dict[tuple[JobInfo, bool], tuple[float, float]] = {}
    for unit in units:
        job = unit.job
        whole = unit.shrink_to is None
        if (job, whole) not in lost:
            lost[job, whole] = _lost(job, unit.tasks, now)
        if job not in keys:
            keys[job] = (rank(job), -latest_start(job, now))
    if not every_key:
        return _by_rank(units, keys, lost, order)
    orders = {job: order(job) for job in keys}
    out = sorted(units, key=_SEQ)
    out.sort(key=lambda u: orders[u.job], reverse=True)
    # The keys that sort the same way, as one (each stable sort by one of them, the last
    # first, orders them so too).
    out.sort(key=lambda u: (u.shrink_to is None, lost[u.job, u.shrink_to is None],
                            keys[u.job][1]))
    out.sort(key=lambda u: keys[u.job][0], reverse=True)  # stable: the primary key last
    return out


def _lost(job: JobInfo, tasks: tuple[TaskInfo, ...], now: float) -> tuple[float, float]:
    """`work_lost` as the tuple it compares as (GPU-seconds, then CPU core-seconds): sorted
    by built-in comparisons; for a single task, worked out as `work_lost` works it out."""
    if len(tasks) != 1:
        found = work_lost(job, tasks, now)
        return found.gpu_seconds, found.cpu_seconds
    task = tasks[0]
    lost = seconds_lost(task.started, now, job.job.checkpoint_interval)
    if lost <= 0:
        return 0.0, 0.0
    resources = job.job.group(task.ref.group).resources
    return 0.0 + lost * resources.gpu, 0.0 + lost * resources.cpu / 1000


def _by_rank(units: list[VictimUnit], keys: dict[JobInfo, tuple[tuple[Any, ...], float]],
             lost: dict[tuple[JobInfo, bool], tuple[float, float]],
             order: Callable[[JobInfo], tuple[Any, ...]]) -> list[VictimUnit]:
    """`ordered`, asking `order` only within ties: each rank's units sorted once by the
    keys below it and their place in their job, worst rank first; then each run of units
    of several jobs that tie on every key but their place is sorted by `order`, as the
    sort by it before the others would have (a job's units by their place still)."""
    by_rank: dict[tuple[Any, ...], list[tuple[tuple[Any, ...], VictimUnit]]] = {}
    for unit in units:
        job, whole = unit.job, unit.shrink_to is None
        rank, latest = keys[job]
        entry = ((whole, lost[job, whole], latest, unit.seq), unit)
        found = by_rank.get(rank)
        if found is None:
            by_rank[rank] = [entry]
        else:
            found.append(entry)
    out: list[VictimUnit] = []
    for rank in sorted(by_rank, reverse=True):
        entries = by_rank[rank]
        entries.sort(key=_KEY)
        units = [unit for _, unit in entries]
        count = len(entries)
        if count > 1:
            heads = [entry[0][:3] for entry in entries]
            ties = [i for i in range(1, count) if heads[i] == heads[i - 1]]
            end = 0
            for i in ties:  # under backlog, few or none
                if i < end:
                    continue  # inside the run sorted already
                start, end = i - 1, i + 1
                while end < count and heads[end] == heads[start]:
                    end += 1
                run = units[start:end]
                if any(u.job is not run[0].job for u in run):
                    orders = {u.job: order(u.job) for u in run}
                    run.sort(key=lambda u: orders[u.job], reverse=True)
                    units[start:end] = run
        out.extend(units)
    return out


def _key(entry: tuple[tuple[Any, ...], VictimUnit]) -> tuple[Any, ...]:
    return entry[0]


_KEY = _key


def _seq(unit: VictimUnit) -> int:
    return unit.seq


_SEQ = _seq


class ByStart:
    """One rank's units kept for the score across executions of the preempt action
    (issue 18): a unit whose keys below the rank move with the clock only as its start
    says (`shape_of`) is filed with the units of its shape, latest started first. Within a
    shape that is the score's order at any instant: its work lost grows with the time since
    it started, each term worked out the same way for every unit of the shape, so a later
    start loses no more, and its latest start (the next key) is later; units started at
    the same instant tie on both, and the job order tells them apart when asked
    (`merged`). The rest are keyed afresh whenever asked. Changed by copy: an iteration
    under way keeps what it began with."""

    __slots__ = ("misc", "shapes")

    def __init__(self, shapes: dict[Hashable, list[tuple[float, VictimUnit]]],
                 misc: list[VictimUnit]) -> None:
        self.shapes = shapes
        self.misc = misc
        """Units of no shape, each job's in its own order."""

    @classmethod
    def of(cls, units: Sequence[VictimUnit]) -> ByStart:
        return cls({}, []).with_units(units)

    def with_units(self, units: Sequence[VictimUnit]) -> ByStart:
        """These units filed too (one job's, in its own order, or several jobs' whole)."""
        shapes = dict(self.shapes)
        misc: list[VictimUnit] | None = None
        copied: set[Hashable] = set()
        for unit in units:
            shape = shape_of(unit)
            if shape is None:
                if misc is None:
                    misc = list(self.misc)
                misc.append(unit)
                continue
            if shape not in copied:
                copied.add(shape)
                shapes[shape] = list(shapes.get(shape, ()))
            started = unit.tasks[0].started
            assert started is not None
            insort(shapes[shape], (-started, unit), key=_START)
        return ByStart(shapes, self.misc if misc is None else misc)

    def without(self, job: JobInfo, units: Sequence[VictimUnit] | None = None) -> ByStart:
        """The job's units no longer filed. `units`: the job's units as they were filed
        (`with_units`): each is looked for in its shape's entries by its start, not every
        entry of every shape (a rank files hundreds under backlog); where one is not found
        there or among the units of no shape, every entry is looked at."""
        if units is not None:
            found = self._without_units(job, units)
            if found is not None:
                return found
        shapes = {shape: [e for e in entries if e[1].job is not job]
                  for shape, entries in self.shapes.items()}
        return ByStart({shape: entries for shape, entries in shapes.items() if entries},
                       [u for u in self.misc if u.job is not job])

    def _without_units(self, job: JobInfo, units: Sequence[VictimUnit]) -> ByStart | None:
        shapes = self.shapes
        copied = False
        elsewhere = 0
        for unit in units:
            # Its shape as filed: `shape_of` less what moves after filing (how many tasks
            # its job runs); a unit filed among the misc is looked for there.
            shape = _shape_filed(unit)
            entries = None if shape is None else shapes.get(shape)
            at = -1 if entries is None else _entry_of(entries, unit)
            if at < 0:
                elsewhere += 1
                continue
            if not copied:
                shapes = dict(shapes)
                copied = True
            assert entries is not None
            if len(entries) == 1:
                del shapes[shape]
            else:
                shapes[shape] = entries[:at] + entries[at + 1:]
        if not elsewhere:
            return ByStart(shapes, self.misc)
        misc = [u for u in self.misc if u.job is not job]
        if len(self.misc) - len(misc) != elsewhere:
            return None  # not filed as `units` says: look at every entry
        return ByStart(shapes, misc)

    def merged(self, now: float, order: Callable[[JobInfo], tuple[Any, ...]]
               ) -> Iterator[VictimUnit]:
        """The units in the order of the score at `now` (`ordered` of units of one rank,
        `every_key` False), worked out only as far as they are taken: each shape's next
        unit keyed, the least taken, runs of ties told apart by `order` as `_by_rank`
        does."""
        streams: list[Iterator[tuple[tuple[Any, ...], VictimUnit]]] = [
            _keyed((unit for _, unit in entries), now) for entries in self.shapes.values()]
        if self.misc:
            lost: dict[tuple[JobInfo, bool], tuple[float, float]] = {}
            entries = []
            for unit in self.misc:
                job, whole = unit.job, unit.shrink_to is None
                found = lost.get((job, whole))
                if found is None:
                    found = lost[job, whole] = _lost(job, unit.tasks, now)
                entries.append(((whole, found, -latest_start(job, now), unit.seq), unit))
            entries.sort(key=_KEY)
            streams.append(iter(entries))
        heap: list[tuple[tuple[Any, ...], int, VictimUnit]] = []
        for at, stream in enumerate(streams):
            first = next(stream, None)
            if first is not None:
                heap.append((first[0], at, first[1]))
        heapq.heapify(heap)
        while heap:
            key, at, unit = heapq.heappop(heap)
            _advance(heap, streams, at)
            if not heap or heap[0][0][:3] != key[:3]:
                yield unit
                continue
            run = [unit]
            while heap and heap[0][0][:3] == key[:3]:
                _, at, tied = heapq.heappop(heap)
                _advance(heap, streams, at)
                run.append(tied)
            if any(u.job is not unit.job for u in run):
                orders = {u.job: order(u.job) for u in run}
                run.sort(key=lambda u: orders[u.job], reverse=True)
            yield from run


def shape_of(unit: VictimUnit) -> Hashable | None:
    """What a unit's score below its rank reads besides its start, where that is all the
    clock moves of it: a unit of all its job's running tasks (then its job's only unit),
    taken whole, each task started at one instant, its job without a checkpoint interval
    (`work_lost`: lost is the time since the start, weighted by each task's request) — its
    tasks' GPUs and CPU, in order; else None."""
    if len(unit.tasks) != len(unit.job.running):
        return None
    return _shape_filed(unit)


def _shape_filed(unit: VictimUnit) -> Hashable | None:
    """`shape_of(unit)` as it was when the unit was filed, if it had one then: all that it
    reads but how many tasks the job runs is the unit's own."""
    if unit.shrink_to is not None:
        return None
    job = unit.job
    interval = job.job.checkpoint_interval
    if interval is not None and interval > 0:
        return None
    tasks = unit.tasks
    started = tasks[0].started
    if started is None or any(t.started != started for t in tasks):
        return None
    group = job.job.group
    return tuple((r.gpu, r.cpu) for r in (group(t.ref.group).resources for t in tasks))


def _entry_of(entries: list[tuple[float, VictimUnit]], unit: VictimUnit) -> int:
    """Where `unit` is in a shape's entries (-1: not there): among those of its start (a
    unit found nowhere sends `without` to look at every entry)."""
    started = unit.tasks[0].started
    assert started is not None
    key = -started
    at = bisect_left(entries, key, key=_START)
    while at < len(entries) and entries[at][0] == key:
        if entries[at][1] is unit:
            return at
        at += 1
    return -1


def _keyed(units: Iterator[VictimUnit], now: float
           ) -> Iterator[tuple[tuple[Any, ...], VictimUnit]]:
    """Each unit with its score's key below the rank at `now`: a unit of a shape is its
    job's only unit, so its job's loss is its own."""
    for unit in units:
        job = unit.job
        yield (True, _lost(job, unit.tasks, now), -latest_start(job, now), unit.seq), unit


def _advance(heap: list[tuple[tuple[Any, ...], int, VictimUnit]],
             streams: list[Iterator[tuple[tuple[Any, ...], VictimUnit]]], at: int) -> None:
    found = next(streams[at], None)
    if found is not None:
        heapq.heappush(heap, (found[0], at, found[1]))


def _start(entry: tuple[float, VictimUnit]) -> float:
    return entry[0]


_START = _start


def _free(job: JobInfo, tasks: Sequence[TaskInfo], now: float) -> bool:
    """No task of `tasks` is still protected."""
    protect = job.job.protect_for
    return protect <= 0 or all(t.started is None or now - t.started >= protect
                               for t in tasks)


class KeptUnits:
    """Units of running jobs kept from one execution of the preempt action to the next
    (issue 18): under backlog the same jobs run cycle after cycle, and listing their units
    every cycle cost as much as the search itself. A job's units read its spec and its
    running tasks, and the clock only through protection and tasks not started yet: they
    are kept for a job with neither, while it runs the same tasks (its spec, how many tasks
    and the last of them, by identity — its list changes only by appends and removals)."""

    def __init__(self) -> None:
        self._kept: dict[JobInfo, tuple[object, int, TaskInfo, list[VictimUnit]]] = {}

    def of(self, job: JobInfo, now: float) -> list[VictimUnit]:
        """`units_of(job, now)`, from what was kept where that is the same."""
        running = job.running
        spec = job.job
        if not running or spec.protect_for > 0:
            return units_of(job, now)
        last = running[-1]
        kept = self._kept.get(job)
        if kept is not None and kept[0] is spec and kept[1] == len(running) and kept[2] is last:
            return kept[3]
        units = units_of(job, now)
        if all(t.started is not None for t in running):
            self._kept[job] = (spec, len(running), last, units)
        return units

    def prune(self, live: dict[str, JobInfo]) -> None:
        """Forget jobs no longer live, once they outnumber the live ones (amortised O(1))."""
        if len(self._kept) > 2 * len(live) + 1024:
            alive = set(live.values())
            self._kept = {job: k for job, k in self._kept.items() if job in alive}
