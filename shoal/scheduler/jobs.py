"""A job's working state during one cycle: its priority, what it holds, what it still wants.

Pending tasks are kept as index ranges per task group, not as objects: a 64-task job that
cannot start costs the cycle one entry per group, however many replicas it has. An elastic
job's surplus tasks (seed 001: its elastic group's indices from `minReplicas` up) that do not
run are kept apart, in `surplus`: allocation never places them; the elastic action does, a
whole step at a time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any

from shoal.api.decisions import PendingReason
from shoal.api.lifecycle import TaskState
from shoal.api.objects import Job, QueueingPolicy, TaskGroup, TaskRef

if TYPE_CHECKING:
    from shoal.scheduler.job_changes import JobChanges


def reducible(group: TaskGroup) -> bool:
    """Whether the group may be admitted with fewer than its replicas (`min_count`)."""
    return group.min_count is not None and group.min_count < group.replicas


@dataclass(slots=True)
class TaskInfo:
    """A task that holds resources at the start of the cycle."""

    ref: TaskRef
    node: str
    gpus: tuple[int, ...]
    state: TaskState
    started: float | None


class JobInfo:
    __slots__ = ("_blocker", "_klass", "_reason", "account", "activated", "changes", "counted",
                 "ended", "floors", "gang_minimum", "holding", "job", "moved", "noted",
                 "pending", "priority", "queue", "queueing", "resized", "running", "stopping",
                 "succeeded", "surplus", "tally")

    def __init__(self, job: Job, priority: int, queue: str, queueing: QueueingPolicy) -> None:
        self.job = job
        self.priority = priority
        self.queue = queue
        """The virtual cluster whose turn and order the job waits in."""
        self.account = queue
        """The virtual cluster charged for its tasks and whose virtual nodes they use: its
        queue, or its own job-scoped virtual cluster once that exists (seed 003)."""
        self.queueing = queueing
        self.gang_minimum = job.gang_minimum
        self.floors = job.group_minimums
        """Each group's own minimum (`TaskGroup.min_available`), where it sets one."""
        self.running: list[TaskInfo] = []
        self.holding = 0
        """Tasks holding resources now: at the cycle start plus those placed since."""
        self.noted: set[JobInfo] | None = None
        """Where a change of `reason` or `blocker` is noted (the model's `noted`): a cycle
        resets only the reasons that moved away from the blocker, not every waiting job's."""
        self.moved: set[JobInfo] | None = None
        """Where a change of what it waits for, holds or is blocked by is noted (the waiting
        jobs' `moved`): the class lines re-file only those (`shoal.scheduler.class_lines`)."""
        self.changes: JobChanges | None = None
        """Where a change of its running list, spec or account is noted (the model's
        `changes`, `shoal.scheduler.job_changes`): `note_change`."""
        self.activated = 0
        """The model's count of jobs that started holding tasks, as of when this one last
        did: orders jobs as the model's `active` lists them."""
        self._blocker: PendingReason | None = None
        self._reason: PendingReason | None = None
        self._klass: tuple[Any, ...] | None = None
        occupied: dict[str, set[int]] = {}
        for task in job.tasks:
            if task.state is not TaskState.PENDING:
                occupied.setdefault(task.group, set()).add(task.index)
        self.pending: dict[str, deque[int]] = {}
        self.surplus: deque[int] = deque()
        """The elastic group's surplus indices that do not run, lowest first."""
        self.stopping = False
        """Withdrawn: it is being stopped and wants nothing placed, nor resized."""
        self.ended = sum(1 for t in job.tasks if t.state.terminal)
        """How many of its tasks ended for good in this run — succeeded, or failed (retries
        spent) or cancelled while the job goes on (`SchedulerModel.finish_task` counts them
        live): they count toward its gang minimum (`ready`)."""
        self.counted: dict[str, int] = {}
        """Per task group, its tasks that count toward the gang (`ready`, group by group):
        kept with `holding` and `ended` (`count`), read against `floors`."""
        for task in job.tasks:
            if task.state.terminal:
                self.count(task.group, 1)
        self.succeeded = sum(1 for t in job.tasks if t.state is TaskState.SUCCEEDED)
        """How many of those succeeded (`SchedulerModel.task_succeeded`): one is enough to
        make it `finishing`."""
        self.tally: Callable[[JobInfo, str, int], None] | None = None
        """Told of every change in what it holds (`hold`): the model's per-user count
        (`shoal.core.user_quota`)."""
        self.resized: float | None = None
        """When the elastic action last changed its size, if it did since the job was added
        (starts of its tasks count too: `shoal.scheduler.actions.elastic`)."""
        elastic = job.elastic
        for group in job.groups:
            taken = occupied.get(group.name)
            indices = range(group.replicas) if not taken else \
                [i for i in range(group.replicas) if i not in taken]
            if elastic is not None and group.name == elastic.group:
                self.surplus = deque(i for i in indices if i >= elastic.min_replicas)
                indices = [i for i in indices if i < elastic.min_replicas]
            if indices:
                self.pending[group.name] = deque(indices)

    @property
    def name(self) -> str:
        return self.job.name

    def note_change(self) -> None:
        """Its running list, spec or account changed: tell the model's log."""
        if self.changes is not None:
            self.changes.note(self)

    @property
    def blocker(self) -> PendingReason | None:
        """Why the job can never be placed as it stands (e.g. its queue does not exist)."""
        return self._blocker

    @blocker.setter
    def blocker(self, value: PendingReason | None) -> None:
        self._blocker = value
        if self.noted is not None:
            self.noted.add(self)
        if self.moved is not None:
            self.moved.add(self)

    @property
    def klass(self) -> tuple[Any, ...] | None:
        """Its job class while it is fresh (`shoal.scheduler.job_classes`), kept once
        worked out; forgotten whenever what it waits for or holds changes."""
        return self._klass

    @klass.setter
    def klass(self, value: tuple[Any, ...] | None) -> None:
        self._klass = value
        if value is None and self.moved is not None:
            self.moved.add(self)

    @property
    def reason(self) -> PendingReason | None:
        """Why the job waits, as this cycle found; reset to `blocker` when a cycle starts."""
        return self._reason

    @reason.setter
    def reason(self, value: PendingReason | None) -> None:
        self._reason = value
        if self.noted is not None:
            self.noted.add(self)

    def reset_reason(self) -> None:
        """Back to its blocker, as a cycle starts (not noted: it is the default again)."""
        self._reason = self._blocker

    @property
    def ready(self) -> int:
        """How many of its tasks count toward its gang minimum (`minAvailable`): those that
        hold resources now (bound, running, still stopping) and those that ended for good
        (`ended`: succeeded, or failed within `minFailed`). The one place that says so —
        the gang plugin's `min_tasks` and `job_ready`, and through them allocate, enqueue,
        backfill, preempt and reclaim, all read it.

        A succeeded task's work is done: it counts, as Volcano counts Succeeded pods among a
        job's ready tasks. A task that failed for good without failing the job will not run
        again either, and the job goes on without it. So a gang whose task is retried in
        place after a peer ended misses only that task, and it is placed on its own when it
        fits (counting live peers only, the retry could never reach the minimum and the job
        would wait forever)."""
        return self.holding + self.ended

    def count(self, group: str, delta: int) -> None:
        """One more (or, negative, fewer) task of `group` counts toward the gang."""
        self.klass = None
        self.counted[group] = self.counted.get(group, 0) + delta

    def hold(self, group: str, delta: int) -> None:
        """A task of `group` starts (1) or stops (-1) holding resources."""
        self.klass = None
        self.holding += delta
        self.counted[group] = self.counted.get(group, 0) + delta
        if self.tally is not None:
            self.tally(self, group, delta)

    def shortfalls(self) -> list[tuple[str, int]]:
        """(group, tasks missing) for each group below its own minimum (`floors`)."""
        if not self.floors:
            return []
        counted = self.counted
        return [(name, floor - counted.get(name, 0)) for name, floor in self.floors
                if counted.get(name, 0) < floor]

    def admits_partially(self) -> bool:
        """Whether its first start is an admission, whole or partial (`TaskGroup.min_count`,
        see `shoal.scheduler.partial_admission`): a group of it gives a `min_count`, and none
        of its tasks has started: none holds resources or ended, and every one but the
        elastic surplus waits to be placed (none is held back while its evicted process
        stops: a start without it would be a start below the job's size)."""
        if self.holding or self.ended or self.stopping:
            return False
        if all(g.min_count is None for g in self.job.groups):
            return False
        return self.pending_count() == self.job.replicas - self.job.elastic_surplus

    def least_admitted(self, group: TaskGroup) -> int:
        """The fewest replicas of `group` a partial admission may start: its `min_count` or
        its own minimum (`floors`), whichever is more; all of a group that is not
        reducible."""
        if not reducible(group):
            return group.replicas
        return max(group.min_count or 0, dict(self.floors).get(group.name, 0))

    @property
    def gang_met(self) -> bool:
        """Its gang minimum counts (`ready`) and so does every group's own minimum: a
        master/worker gang without its master is not running."""
        return self.ready >= self.gang_minimum and not self.shortfalls()

    @property
    def finishing(self) -> bool:
        """One of its tasks has succeeded: its work is ending, its other tasks follow. The
        elastic action neither grows nor repairs it (live, tasks end one by one; putting
        a finishing job back to an allowed size would stop healthy tasks). A retried task
        of a finishing gang is still placed (it is counted by `ready`), only not grown."""
        return self.succeeded > 0

    def pending_count(self) -> int:
        return sum(len(q) for q in self.pending.values())

    def groups_with_pending(self) -> list[TaskGroup]:
        return [g for g in self.job.groups if self.pending.get(g.name)]

    def first_pending(self, count: int,
                      order: Callable[[TaskGroup, int], tuple[Any, ...]] | None
                      ) -> list[tuple[TaskGroup, list[int]]]:
        """The first `count` pending tasks in task order, grouped by task group (groups in
        the order their first task comes)."""
        groups = self.groups_with_pending()
        if order is None:
            out: list[tuple[TaskGroup, list[int]]] = []
            for group in groups:
                if count <= 0:
                    break
                queue = self.pending[group.name]
                # islice, not queue[i]: indexing a deque is linear in its middle.
                take = list(islice(queue, count))
                out.append((group, take))
                count -= len(take)
            return out
        every = sorted(((order(g, i), gi, g, i) for gi, g in enumerate(groups)
                        for i in self.pending[g.name]), key=lambda t: (t[0], t[1], t[3]))
        by_group: dict[str, tuple[TaskGroup, list[int]]] = {}
        for _, _, group, index in every[:count]:
            by_group.setdefault(group.name, (group, []))[1].append(index)
        return list(by_group.values())

    def is_surplus(self, group: str, index: int) -> bool:
        elastic = self.job.elastic
        return elastic is not None and elastic.is_surplus(group, index)

    def wants(self, group: str, index: int) -> bool:
        """Whether the task waits to be placed (pending, or surplus not running)."""
        if self.is_surplus(group, index):
            return index in self.surplus
        return index in self.pending.get(group, ())

    def take(self, group: str, index: int) -> None:
        self.klass = None
        if self.is_surplus(group, index):
            self.surplus.remove(index)
            return
        queue = self.pending[group]
        queue.remove(index)
        if not queue:
            del self.pending[group]  # `pending` is empty exactly when nothing is left

    def give_back(self, group: str, index: int) -> None:
        self.klass = None
        if self.is_surplus(group, index):
            self.surplus = deque(sorted((*self.surplus, index)))
            return
        queue = self.pending.setdefault(group, deque())
        queue.appendleft(index)
        if len(queue) > 1 and queue[0] > queue[1]:
            self.pending[group] = deque(sorted(queue))

    def run_service(self, now: float, tasks: Iterable[TaskInfo] | None = None) -> float:
        """GPU-seconds its running tasks — or `tasks`, some of them — have had since they
        started (a task not started yet has had none)."""
        return sum((self.job.group(t.ref.group).resources.gpu * (now - t.started)
                    for t in (self.running if tasks is None else tasks)
                    if t.started is not None and t.started < now), 0.0)

    def attained(self, now: float) -> float:
        """GPU-seconds of service in all its runs: earlier ones, and this one up to `now`."""
        return self.job.attained_gpu_seconds + self.run_service(now)

    def latest_start(self, now: float) -> float:
        """When its most recently started running task started (`now` for one not yet
        started, or when nothing runs)."""
        return max((now if t.started is None else t.started for t in self.running),
                   default=now)

    def elastic_size(self) -> int:
        """How many tasks of its elastic group hold resources now."""
        elastic = self.job.elastic
        return 0 if elastic is None else \
            sum(1 for t in self.running if t.ref.group == elastic.group)
