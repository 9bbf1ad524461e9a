"""The preempt action's running jobs, kept from one cycle to the next (issue 18): each one
filed by its rank with the instant before which that rank cannot move, and re-filed only
when it starts, stops, changes the tasks it runs or reaches that instant.

Under backlog the same jobs run for many cycles and each cycle asked every one of them for
its rank twice (the preemptor classes' world, `shoal.scheduler.preemptor_class.world`, and
the worst-first listing, `shoal.scheduler.running_order`), then sorted every virtual
cluster's jobs again. Here a cycle walks the live jobs once, comparing what each runs by
identity (its spec, how many tasks and the last of them: its running list changes only by
appends and removals, as `shoal.scheduler.service_classes` relies on), asks for the rank
only of a job that changed or whose rank may have moved, and sorts again only the virtual
clusters where something moved. `version` moves whenever anything the world reads of a
running job does (its account, rank, how many tasks, how many stopping, how many still
protected), so the world holds the version instead of every running job.

Kept only where every plugin that ranks for the action says until when a job's rank holds
(`RankHolds`: las, whose attained-service classes know their next crossing) and the order
within ties is asked only within ties (`Preemption.looks` is False): elsewhere the action
lists its running jobs afresh each time, as before. A job running a task not yet started,
or protected (`protectFor`), is re-filed every time: its latest start or protection moves
with the clock.

Pure: `now` is the session's.
"""

from __future__ import annotations

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

    def refresh(self, session: Session, rank: Callable[[JobInfo], tuple[Any, ...]],
                until: Callable[[JobInfo], float]) -> None:
        """Bring the table up to the session's jobs now."""
        if session.model is not self._model:
            self._filed, self._members, self._listings = {}, {}, {}
            self._dirty = set()
            self._model = session.model
            self.version += 1
        now = session.now
        filed_of = self._filed
        active = session.model.active  # the jobs holding tasks, not every waiting one
        for job in active.values():
            running = job.running
            filed = filed_of.get(job)
            if filed is not None and now < filed.until and filed.spec is job.job \
                    and filed.count == len(running) and filed.last is running[-1] \
                    and filed.queue == job.queue and filed.seen[0] == job.account:
                continue
            self._file(job, filed, rank(job), until(job), now)
        if len(filed_of) > len(active):  # some stopped running, or left the model
            for job in [j for j in filed_of if active.get(j.name) is not j]:
                self._drop(job, filed_of[job])

    def ranks(self) -> Iterator[tuple[JobInfo, tuple[Any, ...]]]:
        """Every job filed with its rank, as asked now."""
        for job, filed in self._filed.items():
            yield job, filed.rank

    def queue_stamp(self, queue: str) -> int:
        """Moves whenever a job of the virtual cluster is filed, re-filed or dropped: while
        it stands, its jobs run the same tasks under the same specs at the same ranks
        (`shoal.scheduler.victim_index.KeptIndexes`)."""
        return self._queue_stamps.get(queue, 0)

    def _touch(self, queue: str) -> None:
        self._stamps += 1
        self._queue_stamps[queue] = self._stamps

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
        self._touch(job.queue)
        if filed is None or filed.seen != seen or filed.queue != job.queue:
            self.version += 1
        if filed is None or filed.queue != job.queue:
            if filed is not None:
                self._leave(job, filed.queue)
            self._members.setdefault(job.queue, {})[job] = None
            self._dirty.add(job.queue)
        elif filed.rank != rank or filed.latest != latest:
            self._dirty.add(job.queue)
        self._filed[job] = _Filed(job.job, job.queue, len(running), running[-1], until, rank,
                                  latest, seen)

    def _drop(self, job: JobInfo, filed: _Filed) -> None:
        del self._filed[job]
        self._leave(job, filed.queue)
        self.version += 1

    def _leave(self, job: JobInfo, queue: str) -> None:
        self._touch(queue)
        members = self._members.get(queue)
        if members is not None:
            members.pop(job, None)
        self._dirty.add(queue)
