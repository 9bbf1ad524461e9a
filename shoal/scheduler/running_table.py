"""The preempt action's running jobs, kept from one cycle to the next (issue 18): each one
filed by its rank with the instant before which that rank cannot move, and re-filed only
when it starts, stops, changes the tasks it runs or reaches that instant.

Under backlog the same jobs run for many cycles and each cycle asked every one of them for
its rank twice (the preemptor classes' world, `shoal.scheduler.preemptor_class.world`, and
the worst-first listing, `shoal.scheduler.running_order`), then sorted every virtual
cluster's jobs again. Here a refresh looks only at the jobs the model's change log names
(`shoal.scheduler.job_changes`: a job started, stopped, changed its tasks, spec or account),
those whose `until` came (a heap keyed by it) and those re-read every time, compares what
each runs by identity (its spec, how many tasks and the last of them: its running list
changes only by appends and removals, as `shoal.scheduler.service_classes` relies on), asks
for the rank only of a job that changed or whose rank may have moved, and sorts again only
the virtual clusters where something moved. Jobs are filed in the order the model's
`active` lists them (`JobInfo.activated`), as a walk over every running job filed them, so
ties list in the same order. `version` moves whenever anything the world reads of a
running job does (its account, rank, how many tasks, how many stopping, how many still
protected), so the world holds the version instead of every running job. Each virtual
cluster's latest filings are kept with the ranks they filed jobs at, so that a search
turned down short can tell that nothing came to rank behind its preemptor since
(`grown_behind`, `shoal.scheduler.actions.short_searches`), and which jobs were filed there
anew since (`changed_since`: each kept victim index re-lists only those,
`shoal.scheduler.victim_index.KeptIndexes`).

Kept only where every plugin that ranks for the action says until when a job's rank holds
(`RankHolds`: las, whose attained-service classes know their next crossing) and the order
within ties is asked only within ties (`Preemption.looks` is False): elsewhere the action
lists its running jobs afresh each time, as before. A job running a task not yet started,
or protected (`protectFor`), is re-filed every time: its latest start or protection moves
with the clock.

Pure: `now` is the session's.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from shoal.api.lifecycle import TaskState
from shoal.api.objects import Job
from shoal.scheduler.jobs import JobInfo, TaskInfo
from shoal.scheduler.running_order import latest_start, worst_first
from shoal.scheduler.session import Session


@runtime_checkable
class RankHolds(Protocol):
    """A plugin ranking jobs for preemption that says for how long a running job's key holds."""

    def preemption_key_until(self, job: JobInfo) -> float:
        """The instant before which the job's `preemption_key`, as asked in this session,
        stays the same while it runs the tasks it runs now (the session's `now`: ask again)."""
        ...


@dataclass(slots=True)
class _Filed:
    spec: Job
    queue: str
    count: int
    last: TaskInfo
    until: float
    rank: tuple[Any, ...]
    latest: float
    seen: tuple[Any, ...]
    """What the world reads of the job: account, rank, tasks, stopping, protected."""


def _activated(job: JobInfo) -> int:
    return job.activated


class RunningTable:
    """Running jobs by virtual cluster, worst first, kept across cycles."""

    def __init__(self) -> None:
        self._filed: dict[JobInfo, _Filed] = {}
        self._members: dict[str, dict[JobInfo, None]] = {}
        self._listings: dict[str, list[JobInfo]] = {}
        self._dirty: set[str] = set()
        self._model: object = None
        self.version = 0
        """Moves whenever what the world reads of any running job moves."""
        self._queue_stamps: dict[str, int] = {}
        self._stamps = 0
        self.refiled = 0
        """Jobs re-filed so far (for benchmarks and tests)."""
        self._cursor = 0
        """The model's change log as last read (`shoal.scheduler.job_changes`)."""
        self._due: list[tuple[float, int, JobInfo, _Filed]] = []
        """Jobs filed with a finite `until`, soonest first (stale entries: not the filed)."""
        self._always: dict[JobInfo, None] = {}
        """Jobs whose rank may move any time (`until` is now): re-read at every refresh."""
        self._seq = 0
        """Ties in `_due` are broken by push order."""
        self._events: dict[str, list[tuple[int, tuple[Any, ...] | None, JobInfo]]] = {}
        """Per virtual cluster, its latest stamps (`queue_stamp`) with the job filed or
        dropped then and the rank it was filed at (None: it left), oldest first
        (`grown_behind`, `changed_since`)."""
        self._forgot: dict[str, int] = {}
        """Per virtual cluster, the latest stamp its events no longer hold."""

    def refresh(self, session: Session, rank: Callable[[JobInfo], tuple[Any, ...]],
                until: Callable[[JobInfo], float]) -> None:
        """Bring the table up to the session's jobs now: re-read only the jobs the model's
        log says changed what they run (`shoal.scheduler.job_changes`), those whose rank
        may have moved by now (`until` passed) and those re-read every time."""
        model = session.model
        now = session.now
        active = model.active  # the jobs holding tasks, not every waiting one
        changed = model.changes.since(self._cursor) if model is self._model else None
        self._cursor = model.changes.stamp
        if changed is None:  # another model, or changes forgotten: read every job
            if model is not self._model:
                self._filed, self._members, self._listings = {}, {}, {}
                self._dirty = set()
                self._model = model
                self.version += 1
            self._due, self._always = [], {}
            changed = list(active.values())
            changed.extend(job for job in self._filed if active.get(job.name) is not job)
        due = self._due
        filed_of = self._filed
        touched = {job: None for job in changed}
        touched.update(self._always)
        while due and due[0][0] <= now:
            _, _, job, entry = heapq.heappop(due)
            if filed_of.get(job) is entry:
                touched[job] = None
        self._always = {}
        # Filed in the order the model lists its active jobs, as a walk over them did.
        for job in sorted(touched, key=_activated):
            filed = filed_of.get(job)
            if active.get(job.name) is not job:
                if filed is not None:
                    self._drop(job, filed)
                continue
            running = job.running
            if filed is not None and now < filed.until and filed.spec is job.job \
                    and filed.count == len(running) and filed.last is running[-1] \
                    and filed.queue == job.queue and filed.seen[0] == job.account:
                self._keep(job, filed, now)
                continue
            self._file(job, filed, rank(job), until(job), now)

    def _keep(self, job: JobInfo, filed: _Filed, now: float) -> None:
        """Keep watching a job left as filed until its rank may move."""
        if filed.until <= now:
            self._always[job] = None
        elif filed.until != math.inf:
            self._seq += 1
            heapq.heappush(self._due, (filed.until, self._seq, job, filed))
            if len(self._due) > 2 * len(self._filed) + 1024:  # mostly entries re-filed since
                filed_of = self._filed
                self._due = [e for e in self._due if filed_of.get(e[2]) is e[3]]
                heapq.heapify(self._due)

    def ranks(self) -> Iterator[tuple[JobInfo, tuple[Any, ...]]]:
        """Every job filed with its rank, as asked now."""
        for job, filed in self._filed.items():
            yield job, filed.rank

    def queue_stamp(self, queue: str) -> int:
        """Moves whenever a job of the virtual cluster is filed, re-filed or dropped: while
        it stands, its jobs run the same tasks under the same specs at the same ranks
        (`shoal.scheduler.victim_index.KeptIndexes`)."""
        return self._queue_stamps.get(queue, 0)

    def grown_behind(self, queue: str, since: int, rank: tuple[Any, ...],
                     limit: int = 64) -> bool:
        """Whether a job of the virtual cluster may have come to rank strictly behind `rank`
        since its stamp was `since`: a job was filed there behind `rank` (it started, its
        tasks changed, or its rank moved behind), or more moved than the last `limit`
        events say. False: every job ranked behind `rank` now was filed so by `since`, as
        it is now (a job that left, or was filed at `rank` or ahead, frees nothing behind
        it). A job kept as filed runs the same tasks at the same rank."""
        events = self._events.get(queue, ())
        for at in range(len(events) - 1, max(-1, len(events) - 1 - limit), -1):
            stamp, filed, _ = events[at]
            if stamp <= since:
                return False
            if filed is not None and filed > rank:
                return True
        return len(events) > limit or self._forgot.get(queue, 0) > since

    def changed_since(self, queue: str, since: int) -> list[JobInfo] | None:
        """The jobs filed, re-filed or dropped in the virtual cluster after its stamp was
        `since` (`queue_stamp`), each once; None where the table no longer holds them all
        (`shoal.scheduler.victim_index.KeptIndexes` then lists every job afresh)."""
        if self._forgot.get(queue, 0) > since:
            return None
        events = self._events.get(queue, ())
        changed: dict[JobInfo, None] = {}
        for at in range(len(events) - 1, -1, -1):
            stamp, _, job = events[at]
            if stamp <= since:
                break
            changed[job] = None
        return list(changed)

    def members(self, queue: str) -> Iterable[JobInfo]:
        """The jobs filed in the virtual cluster, in no particular order."""
        return self._members.get(queue, {}).keys()

    def queue_of(self, job: JobInfo) -> str | None:
        """The virtual cluster the job is filed in (None: not filed)."""
        filed = self._filed.get(job)
        return None if filed is None else filed.queue

    def rank_of(self, job: JobInfo) -> tuple[Any, ...] | None:
        """The rank the job is filed at (None: not filed)."""
        filed = self._filed.get(job)
        return None if filed is None else filed.rank

    def _touch(self, queue: str, job: JobInfo, rank: tuple[Any, ...] | None = None) -> None:
        self._stamps += 1
        self._queue_stamps[queue] = self._stamps
        events = self._events.setdefault(queue, [])
        events.append((self._stamps, rank, job))
        if len(events) > 512:
            self._forgot[queue] = events[255][0]
            del events[:256]

    def queues(self) -> Iterable[str]:
        """The virtual clusters with running jobs filed."""
        return [queue for queue, members in self._members.items() if members]

    def listing(self, queue: str, now: float, fresh: Container[str],
                order: Callable[[JobInfo], tuple[Any, ...]]) -> list[JobInfo]:
        """The virtual cluster's running jobs not in `fresh`, worst first, as
        `running_order.worst_first` lists them."""
        if queue in self._dirty:
            self._dirty.discard(queue)
            filed = self._filed
            members = self._members.get(queue, {})
            self._listings[queue] = worst_first(
                members, (), now, lambda job: filed[job].rank, order, False).get(queue, [])
        listed = self._listings.get(queue, [])
        if any(job.job.name in fresh for job in listed):
            return [job for job in listed if job.job.name not in fresh]
        return listed

    def _file(self, job: JobInfo, filed: _Filed | None, rank: tuple[Any, ...], until: float,
              now: float) -> None:
        running = job.running
        protect = job.job.protect_for
        stopping = sum(t.state is TaskState.RELEASING for t in running)
        guarded = protect > 0 and sum(t.started is not None and now - t.started < protect
                                      for t in running)
        if protect > 0 or any(t.started is None for t in running):
            until = now  # its protection or latest start moves with the clock
        seen = (job.account, rank, len(running), stopping, guarded)
        latest = latest_start(job, now)
        self.refiled += 1
        if filed is None or filed.seen != seen or filed.queue != job.queue \
                or filed.latest != latest or filed.spec is not job.job \
                or filed.count != len(running) or filed.last is not running[-1]:
            self._touch(job.queue, job, rank)
        # Else it is filed as it was (its rank's `until` came, the rank did not move): the
        # virtual cluster's stamp stays, as nothing a stamp answers for moved
        # (`queue_stamp`, `grown_behind`, `changed_since`).
        if filed is None or filed.seen != seen or filed.queue != job.queue:
            self.version += 1
        if filed is None or filed.queue != job.queue:
            if filed is not None:
                self._leave(job, filed.queue)
            self._members.setdefault(job.queue, {})[job] = None
            self._dirty.add(job.queue)
        elif filed.rank != rank or filed.latest != latest:
            self._dirty.add(job.queue)
        made = self._filed[job] = _Filed(job.job, job.queue, len(running), running[-1],
                                         until, rank, latest, seen)
        self._keep(job, made, now)

    def _drop(self, job: JobInfo, filed: _Filed) -> None:
        del self._filed[job]
        self._leave(job, filed.queue)
        self.version += 1

    def _leave(self, job: JobInfo, queue: str) -> None:
        self._touch(queue, job)
        members = self._members.get(queue)
        if members is not None:
            members.pop(job, None)
        self._dirty.add(queue)
