"""Class lines: the waiting jobs filed by virtual cluster and job class, each line in the
profile's job order, kept in the model between cycles.

The allocate action's per-queue walk (`shoal.scheduler.actions.class_walk`) reads waiting jobs
from here instead of sorting every one each cycle: a job is filed once, when it starts
waiting or changes (`WaitingJobs.moved`), in O(log n). That holds only while the job order
key of a filed job reads nothing but the job itself, so the lines are used only then
(`static_order`): the priority plugin without aging, the gang plugin, and a plugin that
declares `static_for_waiting` — its key for a job that holds nothing reads only the job's
spec (las: the attained service of earlier runs, which a waiting job does not add to; sjf:
the runtime estimate). Only jobs that hold nothing are filed (`job_classes`): one that
holds tasks is loose and keyed afresh every cycle. Any other order — fair share, priority
with aging — reads the running jobs or the clock for a waiting job, and the action sorts as
before.

A waiting job that is not classed (`shoal.scheduler.job_classes`), or is blocked, is *loose*:
it is judged and tried on its own every cycle.

The backfill action's EASY walk (`shoal.scheduler.actions.easy_walk`) also reads each line's
jobs by runtime estimate (`by_estimate`), kept beside the lines once it asks for them.

Each line is kept with what the class walk reads of it every cycle (`LineSource`: its key,
class and first job) and the walk's place in it, reset by each walk: a cycle's set-up reads
the kept sources, it does not build one per line. The set of line keys is kept as one frozen
set while no line comes or goes (`keys`), for the walk's `Walked` when it admits every line.

The preempt action files its preemptors by class under the lines (`followed`,
`shoal.scheduler.actions.preemptor_walk`): it reads the jobs each sync re-filed
(`refiled`) and starts over whenever the lines do (`epoch`); the allocate action's walk
leaves which lines and loose jobs it admitted in `walked`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sortedcontainers import SortedList

from shoal.api.decisions import PendingReason
from shoal.api.time_limits import runtime_estimate
from shoal.scheduler.job_classes import all_classable, classable, job_class
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.plugins.gang import Gang
from shoal.scheduler.plugins.priority import Priority

if TYPE_CHECKING:
    from shoal.scheduler.model import SchedulerModel
    from shoal.scheduler.session import Hooks, Session

Entry = tuple[tuple[Any, ...], JobInfo]
"""A filed job with its job order key first: keys end with (submitted, name), so two
entries never compare their jobs."""

LineKey = tuple[str, int]
"""(virtual cluster the job waits in, its job class)."""

Timed = tuple[float, tuple[Any, ...], JobInfo]
"""A filed job with a runtime estimate: (estimate, its entry's order key, the job)."""


@dataclass(slots=True, eq=False)
class LineSource:
    """One class line (or a walk's loose jobs) as the allocate action's class walk reads it
    (`shoal.scheduler.actions.class_walk`), and how far the walk went. A line's source is
    kept with the line from one cycle to the next (`ClassLines.sources`): `sync` keeps its
    `head`; the walk resets the rest as it reads the line."""

    entries: Sequence[Entry]
    where: LineKey | None
    """Its line (None: a walk's loose jobs)."""
    klass: int | None
    head: JobInfo
    """The line's first job, kept by `sync` for the lines it changed, as are `first`,
    `last` and `size`: a walk reads them of every line, attributes, not calls into a
    `SortedList`."""
    first: tuple[Any, ...]
    """Its first job's order key."""
    last: tuple[Any, ...]
    """Its last job's order key."""
    size: int
    """How many jobs it holds."""
    at: int = 0
    suspended: PendingReason | None = None
    since: int = 0
    """Where its suspension began, or last took up its answer again (`resume`)."""
    start: int = 0
    """Where the range of jobs given its reason began: before `since` where the class was
    asked again and gave the same reason (one range, not one per ask)."""
    moved: tuple[Any, ...] | None = None
    """The order key of the walk where it last gave the same reason, `since` not yet moved
    there (`_caught_up`): found by a search only where it is read."""


@dataclass(frozen=True, slots=True)
class Walked:
    """What the allocate action's class walk admitted in one cycle
    (`shoal.scheduler.actions.class_walk`): the candidates of that cycle are the loose jobs
    admitted and the jobs of the admitted lines not left out."""

    session: Session
    loose: tuple[JobInfo, ...]
    lines: frozenset[LineKey]
    left_out: frozenset[JobInfo]


def static_order(hooks: Hooks) -> bool:
    """Whether the order key of a job that waits holding nothing reads only the job
    (module docstring), and no job ever starves (aging reads the clock)."""
    known = hooks.derived.get("static_order")
    if known is None:  # the plugins' settings do not change under one `Hooks`
        known = hooks.derived["static_order"] = _static_order(hooks)
    return bool(known)


def _static_order(hooks: Hooks) -> bool:
    return all(isinstance(p, Gang) or (isinstance(p, Priority) and p.aging is None)
               or getattr(p, "static_for_waiting", False) is True
               for p in hooks.job_orders) \
        and all(isinstance(p, Priority) and p.aging is None for p in hooks.starvations)


class ClassLines:
    keeps_sources = True
    """Whether a walk reads the kept `sources` and `keys`; False (a test knob): each walk
    reads sources made afresh from the lines, and a set of keys made afresh."""

    def __init__(self, model: SchedulerModel) -> None:
        self._model = model
        self._stamp: tuple[object, ...] | None = None
        self.lines: dict[LineKey, SortedList[Entry]] = {}
        """Per (virtual cluster, class), its waiting jobs in job order; never empty."""
        self.sources: dict[LineKey, LineSource] = {}
        """Per line, in the order of `lines`, its kept source (`LineSource`): a class walk
        reads every line's first job every cycle, an attribute, not an index into the line."""
        self._keys: frozenset[LineKey] | None = None
        """The keys of `lines` while no line came or went since they were read (`keys`)."""
        self._filed: dict[JobInfo, tuple[LineKey, Entry, str]] = {}
        self._accounts: dict[str, int] = {}
        self.loose: set[JobInfo] = set()
        """Waiting jobs in no line (module docstring)."""
        self.epoch = 0
        """Moves whenever every line is forgotten (`drop`)."""
        self.refiled: set[JobInfo] | None = None
        """The jobs syncs re-filed since a follower last read them (None: no follower)."""
        self.walked: Walked | None = None
        """What the last class walk admitted (`Walked`)."""
        self._reader: object = None
        self._timed: dict[LineKey, SortedList[Timed]] | None = None
        """Per line, its jobs that have a runtime estimate, by estimate (`by_estimate`)."""
        self._timed_as: dict[JobInfo, Timed] = {}
        """How each job in `_timed` is filed there (its spec may change before it leaves)."""

    def follow(self, reader: object) -> set[JobInfo]:
        """Note the jobs each sync re-files from now on, for `reader` to read and clear.
        One reader at a time: another one moves the epoch, so each starts over from every
        line as it stands when it takes over (two actions' instances on one model)."""
        if self.refiled is None:
            self.refiled = set()
        if reader is not self._reader:
            self._reader = reader
            self.epoch += 1
        return self.refiled

    def by_estimate(self) -> dict[LineKey, SortedList[Timed]]:
        """Per line, its jobs that have a runtime estimate in estimate order; kept up to
        date by every `sync` from the first time it is asked for."""
        timed = self._timed
        if timed is None:
            timed = self._timed = {}
            for job, (where, entry, _) in self._filed.items():
                self._time(timed, where, entry, job)
        return timed

    def _time(self, timed: dict[LineKey, SortedList[Timed]], where: LineKey, entry: Entry,
              job: JobInfo) -> None:
        estimate = runtime_estimate(job.job)
        if estimate is None:
            return
        line = timed.get(where)
        if line is None:
            line = timed[where] = SortedList()
        item = (estimate, entry[0], job)
        line.add(item)
        self._timed_as[job] = item

    @property
    def heads(self) -> dict[LineKey, JobInfo]:
        """Each line's first job as its source keeps it."""
        return {where: source.head for where, source in self.sources.items()}

    def walk_sources(self) -> dict[LineKey, LineSource]:
        """Each line's source for a walk to read and reset: the kept ones (`sources`)."""
        if self.keeps_sources:
            return self.sources
        return {where: LineSource(line, where, where[1], line[0][1], line[0][0], line[-1][0],
                                  len(line)) for where, line in self.lines.items()}

    def keys(self) -> frozenset[LineKey]:
        """The keys of every line, one frozen set kept while no line comes or goes."""
        keys = self._keys
        if keys is None or not self.keeps_sources:
            # Built from a list, as a walk builds the set of the lines it admitted: the same
            # insertions in the same order make a set that iterates in the same order.
            keys = self._keys = frozenset(list(self.lines))
        return keys

    def line_of(self, job: JobInfo) -> LineKey | None:
        """The line the job is filed in, if any."""
        filed = self._filed.get(job)
        return None if filed is None else filed[0]

    def filed(self) -> dict[JobInfo, tuple[LineKey, Entry, str]]:
        """Every filed job with its line and entry (read-only)."""
        return self._filed

    def drop(self) -> None:
        """Forget every line (a cycle that does not read them): the next one that does files
        every waiting job afresh, and what moved meanwhile is not kept."""
        self._stamp = None
        self.epoch += 1
        if self.refiled is not None:
            self.refiled.clear()
        self.lines.clear()
        self.sources.clear()
        self._keys = None
        if self._timed is not None:
            self._timed.clear()
            self._timed_as.clear()
        self._filed.clear()
        self._accounts.clear()
        self.loose.clear()
        self._model.waiting.moved.clear()

    def sync(self, session: Session) -> bool:
        """File what moved since the last cycle; False if the lines cannot stand for this
        cycle (a virtual cluster with filed jobs may not class them now)."""
        model = self._model
        waiting = model.waiting
        stamp = (session.hooks, model.class_verdicts.generation, waiting.cleared)
        if stamp != self._stamp:
            self.drop()
            self._stamp = stamp
            waiting.moved.update(waiting.values())
        order = session.job_order_key
        moved = waiting.moved
        touched: set[LineKey] = set()  # lines a job left or joined: their heads are re-read
        # All out first: a job replaced by another of its name has the same order key, and
        # two entries of one key would compare their jobs.
        for job in moved:
            self._unfile(job, touched)
        refiled = self.refiled
        if refiled is not None:
            if len(refiled) > 2 * len(waiting) + 1024:  # a follower that stopped reading
                refiled.clear()
                self.epoch += 1
            refiled.update(moved)
        for job in moved:
            if waiting.get(job.name) is not job:
                continue
            klass = job_class(session, job) if job.blocker is None and job.pending else None
            if klass is None:
                self.loose.add(job)
                continue
            where = (job.queue, klass)
            entry = (order(job), job)
            line = self.lines.get(where)
            if line is None:
                line = self.lines[where] = SortedList()
                self.sources[where] = LineSource(line, where, klass, job, entry[0],
                                                     entry[0], 0)
                self._keys = None
            line.add(entry)
            touched.add(where)
            if self._timed is not None:
                self._time(self._timed, where, entry, job)
            self._filed[job] = (where, entry, job.account)
            self._accounts[job.account] = self._accounts.get(job.account, 0) + 1
        waiting.moved.clear()
        sources, lines = self.sources, self.lines
        for where in touched:
            line = lines.get(where)
            if line is not None:
                source = sources[where]
                first = line[0]
                source.head, source.first = first[1], first[0]
                source.last = line[-1][0]
                source.size = len(line)
        return all_classable(session) or all(classable(session, a) for a in self._accounts)

    def _unfile(self, job: JobInfo, touched: set[LineKey]) -> None:
        self.loose.discard(job)
        filed = self._filed.pop(job, None)
        if filed is None:
            return
        where, entry, account = filed
        touched.add(where)
        line = self.lines[where]
        line.remove(entry)
        if not line:
            del self.lines[where]
            del self.sources[where]
            self._keys = None
        item = self._timed_as.pop(job, None)
        if item is not None and self._timed is not None:
            kept = self._timed[where]
            kept.remove(item)
            if not kept:
                del self._timed[where]
        left = self._accounts[account] - 1
        if left:
            self._accounts[account] = left
        else:
            del self._accounts[account]
