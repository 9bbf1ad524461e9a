"""The las plugin: Tiresias-style discretised two-dimensional least-attained-service
(Gu et al., NSDI'19).

A job's *attained service* is GPUs × time it has run: the GPU-seconds of its earlier runs
(`Job.attained_gpu_seconds`, which the driver adds to when it stops a run) plus, for every
task it holds now, `(now - started) × the task's GPUs`. Thresholds on attained service cut
the jobs into priority queues — by default `[3600, 36000]` GPU-seconds: below one GPU-hour,
below ten, the rest. Jobs are ordered by (queue index, submission time): a job that has had
little service goes first, FIFO within a queue, so a long job is demoted step by step as it
runs and new short jobs overtake it. Together with the preempt action, a demoted running job
yields its GPUs to waiting jobs of a better queue.

Preemption is by class only (`preemption_key`: the queue index, `framework.PreemptionOrder`):
a waiting job evicts a running one only from a strictly worse queue, never one of its own
queue, however much older the waiting job is. FIFO within a queue orders who starts first,
not who is evicted: with submission time in the preemption rank, an older waiting job
evicted a newer running job of its own class — about half of las's preemptions on the ITP
trace, each throwing work away only to swap two jobs Tiresias treats as equals (issue 17).
On ITP cluster01 (16 × 8 GPUs, no checkpoints) preempting by class only cut preemptions from
2,539 to 768 and mean JCT from 10.1 h to 6.2 h; with 60 s checkpoints, 1,241 to 573 and
4.47 h to 4.42 h. A virtual cluster whose `withinQueue` is `LowerOrNewerEqualPriority`
still lets a job evict a newer one of its own class: that policy says so explicitly.

The order depends on the clock (a running job crosses a threshold while nothing else
happens), so the plugin is `time_dependent`: drivers must run cycles while jobs wait even if
nothing changed. `next_change` says when the next crossing happens, for a driver that would
rather sleep until then than poll.

Each job's queue index is kept between cycles with the instant before which it cannot move
(`shoal.scheduler.service_classes`): a cycle under backlog asks every running job for its
class, and recomputing attained service each time cost more than the rest of the plugin.

This module owns the plugin and its arguments only; attained service before the current run
is the driver's to record.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from shoal.scheduler.jobs import JobInfo, TaskInfo
from shoal.scheduler.registry import Arguments
from shoal.scheduler.service_classes import ServiceClass, ServiceClasses, tolerance

if TYPE_CHECKING:
    from shoal.scheduler.session import Session


class LasArguments(Arguments):
    thresholds: list[float] = Field(
        default_factory=lambda: [3600.0, 36000.0],
        description="attained-service thresholds in GPU-seconds, strictly increasing; n "
                    "thresholds make n + 1 priority queues")

    @field_validator("thresholds")
    @classmethod
    def _increasing(cls, value: list[float]) -> list[float]:
        if any(not math.isfinite(t) or t <= 0 for t in value):
            raise ValueError("thresholds must be finite and positive")
        if any(b <= a for a, b in itertools.pairwise(value)):
            raise ValueError("thresholds must be strictly increasing")
        return value


class LeastAttainedService:
    name = "las"
    time_dependent = True
    """The job order changes with the clock alone: drivers run cycles while jobs wait."""
    keys_asked_any_time = True
    """A job's keys come out the same whenever in a cycle they are first asked: a waiting
    job holds nothing placed before `now`, and a running job is asked before any eviction
    of its tasks (it is listed as a victim first). So the preempt action need not ask for
    the keys a skipped search would have asked (`Preemption.look_at`)."""
    static_for_waiting = True
    """A job that waits holding nothing has a fixed key: its earlier runs' service (its
    spec) only (`shoal.scheduler.class_lines.static_order`)."""

    def __init__(self, arguments: LasArguments) -> None:
        self.thresholds = tuple(arguments.thresholds)
        self._session: Session | None = None
        self._attained: dict[JobInfo, float] = {}
        self._index: dict[JobInfo, int] = {}
        self._read: dict[JobInfo, list[TaskInfo]] = {}
        """Per job asked in this session, its running list when first asked: a job's
        attained service is fixed within a cycle as of then (`attained`)."""
        self.classes = ServiceClasses(self.thresholds)
        """Queue indices kept between cycles (`shoal.scheduler.service_classes`)."""
        self._model: object = None
        self._cursor = 0
        """The model's change log as `next_change` last read it."""

    def open_session(self, session: Session) -> None:
        self._session = session
        self._attained = {}
        self._index = {}
        self._read = {}
        self.classes.prune(session.jobs)

    # ---- ordering -------------------------------------------------------------------------

    def job_order_key(self, job: JobInfo) -> tuple[Any, ...]:
        return (self.queue_index(job), job.job.submitted)

    def preemption_key(self, job: JobInfo) -> tuple[Any, ...]:
        """Only a better class preempts: the queue index, without the FIFO part."""
        return (self.queue_index(job),)

    def preemption_key_until(self, job: JobInfo) -> float:
        """Until when the job's `preemption_key`, as asked in this session, stays what it
        is while the job runs what it runs now (`running_table.RankHolds`): the kept class's
        margin before its next crossing, where the key was read from that class."""
        now = self._now()
        index = self._index.get(job)
        kept = self.classes.until(job, now)
        if index is None or kept <= now or self.classes.of(job, now).index != index:
            return now
        return kept

    def queue_index(self, job: JobInfo) -> int:
        """0 for the first (best) queue: attained service below the first threshold. Fixed
        within a cycle as of when first asked, as `attained` is."""
        index = self._index.get(job)
        if index is None:
            value = self._attained.get(job)
            index = self._index[job] = \
                self.classes.of(job, self._now()).index if value is None \
                else bisect.bisect_right(self.thresholds, value)
            read = self._read
            if job not in read:
                read[job] = job.running
        return index

    def attained(self, job: JobInfo) -> float:
        """GPU-seconds of service the job has had, as of the session's `now`. Fixed within a
        cycle as of when the job was first asked about (its class or its service), so the
        order stays fixed within a cycle as tasks come and go: tasks placed since started
        at `now` and add nothing; a list the cycle replaced (evictions) is read as it was."""
        value = self._attained.get(job)
        if value is None:
            now = self._now()
            read = self._read.setdefault(job, job.running)
            value = self._attained[job] = \
                job.job.attained_gpu_seconds + job.run_service(now, read)
        return value

    # ---- for drivers ----------------------------------------------------------------------

    def next_change(self, session: Session) -> float | None:
        """The earliest time after `session.now` at which a job running now crosses its next
        threshold (and so may change queue), assuming nothing else changes until then; None
        if no running job ever will. A driver may sleep until then instead of running
        periodic cycles: before it, this plugin orders every job as it does now."""
        if self._session is not session:
            self.open_session(session)
        # The kept classes estimate each crossing within `tolerance`; only the jobs whose
        # estimate comes within that of the soonest are worked out exactly, as before. A job
        # whose list this cycle replaced, or whose service was read this cycle, is worked
        # out exactly too: its service is the one read then, its rate the one it has now.
        # The estimates come from a heap of crossings (`ServiceClasses.crossings`), kept
        # current by re-reading only the jobs the model's log says changed what they run
        # (`shoal.scheduler.job_changes`) and those whose soonest class ran out.
        now = session.now
        model = session.model
        active = model.active  # those holding tasks
        classes = self.classes
        read, attained = self._read, self._attained
        exact: dict[JobInfo, None] = {}
        for job in itertools.chain(session.touched, attained):
            first = read.get(job)
            if first is not None and (first is not job.running or job in attained) \
                    and active.get(job.name) is job:
                exact[job] = None
        changed = model.changes.since(self._cursor) if model is self._model else None
        self._cursor = model.changes.stamp
        if changed is None:  # another model, or changes forgotten: read every job
            self._model = model
            changed = list(active.values())
        for job in changed:
            if active.get(job.name) is job:
                classes.of(job, now)
        if classes.unsettled:
            for job in list(classes.unsettled):
                if active.get(job.name) is not job:
                    del classes.unsettled[job]
                elif not classes.of(job, now).settled:
                    exact[job] = None
        self._estimated(exact, active, now)
        best: float | None = None
        for job in exact:
            at = self._crossing(job, now)
            if at is not None and (best is None or at < best):
                best = at
        return best

    def _estimated(self, exact: dict[JobInfo, None], active: dict[str, JobInfo],
                   now: float) -> None:
        """Add to `exact` the running jobs not in it whose estimated crossing comes within
        twice the tolerance of the soonest estimate among them."""
        classes = self.classes
        heap = classes.crossings
        taken: list[tuple[float, int, JobInfo, ServiceClass]] = []
        reach: float | None = None
        # The soonest entry is looked at where it lies and popped only once it is dropped,
        # read afresh or taken: the first one past the reach stays (popping it and pushing
        # it back left the same entries, and (crossing, sequence) orders them all).
        pop = heapq.heappop
        while heap:
            at, _, job, kept = heap[0]
            if active.get(job.name) is not job or not classes.current(job, kept):
                pop(heap)
                continue  # stale: replaced, or the job stopped running
            if now >= kept.until and kept.at != now:
                pop(heap)
                # Read afresh (pushes its next class, if it has one), once: a class read
                # now holds as an estimate even within `tolerance` of its crossing.
                if not classes.of(job, now).settled:
                    exact[job] = None
                heap = classes.crossings
                continue
            if job not in exact:
                if reach is None:
                    reach = at + 2 * tolerance(at)
                if at > reach:
                    break
                exact[job] = None
            taken.append(pop(heap))
        heap = classes.crossings
        for entry in taken:
            heapq.heappush(heap, entry)

    def _crossing(self, job: JobInfo, now: float) -> float | None:
        """When the job crosses its next threshold at its current rate, from the service
        this cycle reads for it (None: never)."""
        rate = sum(job.job.group(t.ref.group).resources.gpu for t in job.running)
        if rate <= 0:
            return None
        attained = self.attained(job)
        index = bisect.bisect_right(self.thresholds, attained)
        if index >= len(self.thresholds):
            return None
        return now + (self.thresholds[index] - attained) / rate

    def _now(self) -> float:
        if self._session is None:
            raise RuntimeError("the las plugin orders jobs only within an open session")
        return self._session.now
