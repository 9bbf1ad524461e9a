"""Attained-service classes kept between cycles (issue 18): each job's queue index under the
las plugin's thresholds, with the time before which it cannot change.

A job's attained service is its earlier runs' GPU-seconds plus, for each task it runs now,
`(now - started) × GPUs`. While the job runs the same tasks (and its spec, which carries the
earlier runs' service, is the same object) that is a non-decreasing function of the clock
alone — each term is, and IEEE sums and products round monotonically — so its queue index
can only move up, and only when it crosses the next threshold. That happens at
`crossing = t0 + (threshold - attained(t0)) / growth`, `growth` being the GPUs of its
started tasks. Until a margin before that instant (`_tolerance`, far above the rounding of
either side) the index read at `t0` is the index at `now`; from then on it is computed
afresh, exactly as before, every time it is asked. Under backlog a running job is asked for
its class by every cycle, and crosses a threshold at most once per threshold: the index
is computed a handful of times per run, not once per cycle.

What the jobs run is recognised without walking their tasks: a job's running tasks change
only by appending a new task or removing some (`SchedulerModel`, `Session.committed`), so
the number of tasks and the last one (compared by identity) tell its list apart from any
it had before. A job that runs a task not yet started, or one stamped after `now`, has no
crossing worth estimating: it is computed every time.

Every settled class read with a crossing is also pushed on a heap of crossings
(`crossings`), and every unsettled one is listed (`unsettled`): las's `next_change` takes the
soonest estimates from the heap, dropping entries whose class was replaced or no longer
describes what the job runs, instead of asking every running job for its class each cycle
(it re-reads only the jobs the model's change log names, `shoal.scheduler.job_changes`).

Pure: no clock; `now` is the session's.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass

from shoal.api.objects import Job
from shoal.scheduler.jobs import JobInfo, TaskInfo


def tolerance(at: float) -> float:
    """How far an estimated crossing instant may be from where the exact arithmetic puts
    it: a millisecond plus a millionth of the instant, many orders above float rounding."""
    return 1e-3 + 1e-6 * abs(at)


@dataclass(slots=True)
class ServiceClass:
    """A job's queue index as read at some instant, and for how long it holds."""

    job: Job
    """The spec read (its earlier runs' service): compared by identity."""
    count: int
    last: TaskInfo | None
    """How many tasks it ran and the last of them (identity): its running list then."""
    index: int
    until: float
    """The index holds for `now < until` (infinity: it never changes while it runs these)."""
    crossing: float | None
    """When it reaches its next threshold, estimated within `tolerance`; None: never (the
    last queue, or nothing started that earns service)."""
    settled: bool
    """Whether every task it runs had started by the reading: otherwise neither `until`
    nor `crossing` can be trusted and the index is read afresh each time."""
    at: float
    """When it was read."""

    def holds(self, info: JobInfo) -> bool:
        running = info.running
        return self.job is info.job and self.count == len(running) \
            and self.last is (running[-1] if running else None)


class ServiceClasses:
    """Per job, its `ServiceClass`, kept across cycles by the las plugin."""

    def __init__(self, thresholds: tuple[float, ...]) -> None:
        self.thresholds = thresholds
        self._classes: dict[JobInfo, ServiceClass] = {}
        self.crossings: list[tuple[float, int, JobInfo, ServiceClass]] = []
        """Every settled class read with a crossing, soonest crossing first: a heap whose
        stale entries (a class since replaced) are dropped when met (`current`)."""
        self.unsettled: dict[JobInfo, None] = {}
        """The jobs whose latest class is not settled: read afresh each time."""
        self._seq = 0

    def __len__(self) -> int:
        return len(self._classes)

    def prune(self, live: dict[str, JobInfo]) -> None:
        """Forget jobs no longer live, once they outnumber the live ones (amortised O(1))."""
        if len(self._classes) > 2 * len(live) + 1024:
            kept = set(live.values())
            self._classes = {job: c for job, c in self._classes.items() if job in kept}
            self.unsettled = {job: None for job in self.unsettled if job in kept}

    def of(self, info: JobInfo, now: float) -> ServiceClass:
        """The job's class, good at `now` (read afresh where the kept one may have moved)."""
        found = self._classes.get(info)
        if found is not None and found.settled and now < found.until:
            # `holds`, inlined: every running job asks, every cycle.
            running = info.running
            if found.job is info.job and found.count == len(running) \
                    and found.last is (running[-1] if running else None):
                return found
        made = self._classes[info] = self._read(info, now)
        if not made.settled:
            self.unsettled[info] = None
            return made
        if self.unsettled:
            self.unsettled.pop(info, None)
        if made.crossing is not None:
            self._seq += 1
            heapq.heappush(self.crossings, (made.crossing, self._seq, info, made))
            if len(self.crossings) > 2 * len(self._classes) + 1024:
                self.crossings = [e for e in self.crossings if self.current(e[2], e[3])]
                heapq.heapify(self.crossings)
        return made

    def current(self, info: JobInfo, kept: ServiceClass) -> bool:
        """Whether `kept` is the job's latest class and still describes what it runs."""
        return self._classes.get(info) is kept and kept.holds(info)

    def until(self, info: JobInfo, now: float) -> float:
        """Until when the job's kept class holds while it runs what it runs now: `now` (ask
        again) where none is kept for what it runs, or it is not settled."""
        found = self._classes.get(info)
        if found is None or not found.settled or not found.holds(info):
            return now
        return max(now, found.until)

    def _read(self, info: JobInfo, now: float) -> ServiceClass:
        running = info.running
        thresholds = self.thresholds
        attained = info.attained(now)
        index = bisect.bisect_right(thresholds, attained)
        growth = 0.0
        settled = True
        for task in running:
            if task.started is None or task.started > now:
                settled = False
                break
            growth += info.job.group(task.ref.group).resources.gpu
        crossing: float | None = None
        until = math.inf
        if not settled:
            until = now
        elif index < len(thresholds) and growth > 0:
            crossing = now + (thresholds[index] - attained) / growth
            until = crossing - tolerance(crossing)
        return ServiceClass(info.job, len(running), running[-1] if running else None,
                            index, until, crossing, settled, now)
