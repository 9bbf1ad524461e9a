"""What the control loop tells an observer as it works — cycles, first placements and starts,
evictions, launches, process ends, retries — for metrics (`shoal.server.metrics` turns these
into Prometheus series). The loop only calls methods of `ControlObserver`; it never imports a
metrics library, and `NO_OBSERVER` (the default) does nothing.

The loop's values are turned into small reports here, with bounded labels only: an eviction's
free-text reason becomes an `EvictionKind`, a process's end an `ExitClass`, and a job-scoped
virtual cluster (`job:<job>`, named after a job) the declared one it lives in, so that no job
name ever becomes a label value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from shoal.api import TaskRef
from shoal.api.decisions import Decisions
from shoal.api.objects import job_of_virtual_cluster
from shoal.api.resources import Resources
from shoal.executors.task import TaskPhase, TaskStatus
from shoal.scheduler.model import SchedulerModel
from shoal.store.task_batches import TaskRecord


class EvictionKind(StrEnum):
    """Why the scheduler evicted a task, in categories (its reason is free text)."""

    PREEMPTED = "preempted"
    """For a job of higher priority (the preempt action)."""
    RECLAIMED = "reclaimed"
    """Given back to a virtual cluster owed its guarantee (the reclaim action)."""
    ELASTIC_SURPLUS = "elastic_surplus"
    """An elastic job's surplus, taken for another job."""
    SHRUNK = "shrunk"
    """An elastic job shrunk by its own rules or by fair share."""
    SERVICE_RESIZED = "service_resized"
    OTHER = "other"


#: The words the scheduler's actions begin an eviction's reason with
#: (`shoal.scheduler.actions`: victim_trials' and reclaim's `verb`, elastic, services,
#: fairshare). A reason none of them starts is OTHER: a new action shows up, not lost.
_REASON_STARTS = (("preempted", EvictionKind.PREEMPTED), ("reclaimed", EvictionKind.RECLAIMED),
                  ("elastic surplus", EvictionKind.ELASTIC_SURPLUS),
                  ("shrunk", EvictionKind.SHRUNK),
                  ("service resized", EvictionKind.SERVICE_RESIZED))


def eviction_kind(reason: str) -> EvictionKind:
    for start, kind in _REASON_STARTS:
        if reason.startswith(start):
            return kind
    return EvictionKind.OTHER


class ExitClass(StrEnum):
    """How a task's process ended, in classes."""

    SUCCESS = "0"
    ERROR = "1-127"
    SIGNAL = "signal"
    """Killed by a signal; also an exit code of 128 and above, the shell's way of saying a
    child was killed by signal N (128 + N)."""
    LOST = "lost"
    """Gone, and nothing recorded how (its node died, or its wrapper was killed)."""


def exit_class(status: TaskStatus) -> ExitClass:
    if status.phase is TaskPhase.LOST:
        return ExitClass.LOST
    if status.signal or status.exit_code is None or status.exit_code >= 128 \
            or status.exit_code < 0:
        return ExitClass.SIGNAL
    return ExitClass.SUCCESS if status.exit_code == 0 else ExitClass.ERROR


class RetryKind(StrEnum):
    TASK = "task"
    """A failed task run again in place (`taskRetryCount`)."""
    GANG = "gang"
    """A gang restarted whole because a member was lost."""
    JOB = "job"
    """A job put back to pending whole (`jobRetryCount`)."""


class LaunchOutcome(StrEnum):
    STARTED = "started"
    FAILED = "failed"


def declared_cluster(model: SchedulerModel, name: str) -> str:
    """`name`, or for a job-scoped virtual cluster the nearest declared one above it."""
    if job_of_virtual_cluster(name) is None:
        return name
    if name not in model.quota.queues:
        return ""
    for queue in reversed(model.quota.get(name).path()):
        if job_of_virtual_cluster(queue.name) is None:
            return queue.name
    return name  # unreachable: the root is declared


NOTHING_BOUND: Mapping[TaskRef, TaskRecord] = {}
"""The records of a cycle that bound nothing."""


@dataclass(frozen=True)
class CycleReport:
    """One scheduling cycle."""

    seconds: float
    """How long it took to decide (wall clock)."""
    decisions: Counter[str]
    """How many of each kind it decided: bind, evict, resize, reserve."""
    evictions: Counter[tuple[EvictionKind, str]]
    """Tasks evicted, by why and by the (declared) virtual cluster charged for them."""
    queueing_delays: tuple[float, ...] = field(default=())
    """For each task placed for the first time: seconds since its job was submitted."""


def cycle_report(model: SchedulerModel, decisions: Decisions, seconds: float,
                 records: Mapping[TaskRef, TaskRecord]) -> CycleReport:
    """The report of a cycle whose binds the store recorded as `records` (a task's
    `attempts` is its bind count: 1 is a first placement)."""
    counts = Counter({"bind": len(decisions.binds), "evict": len(decisions.evictions),
                      "resize": len(decisions.resizes),
                      "reserve": len(decisions.reservations)})
    evictions: Counter[tuple[EvictionKind, str]] = Counter()
    for evict in decisions.evictions:
        info = model.jobs.get(evict.task.job)
        where = declared_cluster(model, info.account) if info is not None else ""
        evictions[(eviction_kind(evict.reason), where)] += 1
    delays = []
    for bind in decisions.binds:
        record = records.get(bind.task)
        info = model.jobs.get(bind.task.job)
        if info is not None and record is not None and record.attempts == 1 \
                and info.job.submitted:
            delays.append(max(0.0, model.now - info.job.submitted))
    return CycleReport(seconds, counts, evictions, tuple(delays))


@dataclass(frozen=True)
class TaskEnd:
    """A task's process that ended, and what it held while it ran."""

    exit: ExitClass
    virtual_cluster: str
    """The declared virtual cluster charged for it ("" when the model no longer knew)."""
    resources: Resources
    seconds: float
    """From its placement (or its recorded start) to its end seen; 0 when unknown."""


class ControlObserver(Protocol):
    """What the control loop reports, on its own thread (and the launch path's); methods
    must be quick and must not raise."""

    def cycle(self, report: CycleReport) -> None: ...

    def cycle_skipped(self) -> None:
        """An event's cycle was proven moot and skipped."""

    def started(self, delay: float) -> None:
        """A task was recorded running for the first time, `delay` seconds after its job
        was submitted."""

    def launched(self, outcome: LaunchOutcome, count: int) -> None: ...

    def task_ended(self, end: TaskEnd) -> None: ...

    def retried(self, kind: RetryKind) -> None: ...


class NoObserver:
    """Observes nothing: the loop's default."""

    def cycle(self, report: CycleReport) -> None:
        pass

    def cycle_skipped(self) -> None:
        pass

    def started(self, delay: float) -> None:
        pass

    def launched(self, outcome: LaunchOutcome, count: int) -> None:
        pass

    def task_ended(self, end: TaskEnd) -> None:
        pass

    def retried(self, kind: RetryKind) -> None:
        pass


NO_OBSERVER: ControlObserver = NoObserver()


def task_ends(model: SchedulerModel, ended: Iterable[tuple[TaskRef, TaskStatus]],
              now: float) -> list[TaskEnd]:
    """What ended, read off the model before the ends are applied to it. Each job's running
    tasks are read once, however many of them ended: a large gang ends in one poll."""
    ended = list(ended)
    started: dict[TaskRef, float | None] = {}
    for name in {ref.job for ref, _ in ended}:
        info = model.jobs.get(name)
        if info is not None:
            started.update((t.ref, t.started) for t in info.running)
    out = []
    for ref, status in ended:
        info = model.jobs.get(ref.job)
        if info is None:
            out.append(TaskEnd(exit_class(status), "", Resources(), 0.0))
            continue
        since = started.get(ref)
        try:
            resources = info.job.group(ref.group).resources
        except KeyError:
            resources = Resources()
        out.append(TaskEnd(exit_class(status), declared_cluster(model, info.account),
                           resources, 0.0 if since is None else max(0.0, now - since)))
    return out
