"""One cycle's session: the working state built from a snapshot, the profile's plugins
gathered per extension point, and the decisions recorded as statements commit.

Actions read and change the session; nothing in it outlives the cycle.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from shoal.api.decisions import Bind, Decisions, Evict, Pending, PendingKind, PendingReason
from shoal.api.lifecycle import JobState
from shoal.api.objects import ROOT_QUEUE, Job, Task, TaskGroup
from shoal.api.resources import Resources, total
from shoal.core.nodes import ClusterState, FitMemo, NodePool, NodeState
from shoal.core.quota import QueueState, QuotaTree
from shoal.core.snapshot import Snapshot, SnapshotError
from shoal.core.statement import Allocation, Eviction, Statement
from shoal.scheduler.framework import (
    Allocatable,
    JobOrder,
    JobReady,
    NodeScore,
    NodeSearchOrder,
    Plugin,
    Predicate,
    QueueOrder,
    SessionOpen,
    TaskOrder,
    VictimSelection,
)
from shoal.scheduler.jobs import JobInfo, TaskInfo


class Session:
    def __init__(self, snapshot: Snapshot, plugins: Sequence[Plugin],
                 candidates_to_score: int = 16) -> None:
        self.snapshot = snapshot
        self.plugins = list(plugins)
        self.candidates_to_score = candidates_to_score
        self.job_orders = [p for p in plugins if isinstance(p, JobOrder)]
        self.queue_orders = [p for p in plugins if isinstance(p, QueueOrder)]
        self.task_orders = [p for p in plugins if isinstance(p, TaskOrder)]
        self.predicates = [p for p in plugins if isinstance(p, Predicate)]
        self.node_scores = [p for p in plugins if isinstance(p, NodeScore)]
        self.search_orders = [p for p in plugins if isinstance(p, NodeSearchOrder)]
        self.job_readies = [p for p in plugins if isinstance(p, JobReady)]
        self.allocatables = [p for p in plugins if isinstance(p, Allocatable)]
        self.victim_selections = [p for p in plugins if isinstance(p, VictimSelection)]

        self.cluster = ClusterState(snapshot.nodes)
        self.quota = QuotaTree(snapshot.virtual_clusters, self._quota_capacity())
        self.fit_memo = FitMemo(self.cluster)
        self.excluded_nodes: set[int] = set()
        """Node ordinals no placement may use (backfill keeps off a blocked head's nodes)."""
        self.decisions = Decisions()
        self.jobs: dict[str, JobInfo] = {}
        self.candidates: list[JobInfo] = []
        """Jobs the enqueue action let through to allocation this cycle."""
        self.blocked: dict[str, list[JobInfo]] = {}
        """Per virtual cluster, under strict FIFO: the waiting head job, then those behind."""
        self._build_jobs()
        for plugin in plugins:
            if isinstance(plugin, SessionOpen):
                plugin.open_session(self)

    # ---- building the working state -------------------------------------------------------

    def _holding_tasks(self) -> list[tuple[Job, Task]]:
        return [(job, task) for job in self.snapshot.jobs if not job.state.terminal
                for task in job.tasks if task.state.holds_resources]

    def _quota_capacity(self) -> Resources:
        """The root's capacity: the schedulable nodes, plus what running tasks still hold on
        cordoned ones — their usage is charged, so their capacity must be counted too."""
        cordoned = {n.name for n in self.snapshot.nodes if not n.schedulable}
        held = total(job.group(task.group).resources for job, task in self._holding_tasks()
                     if task.node in cordoned)
        return self.snapshot.capacity() + held

    def _build_jobs(self) -> None:
        holdings: list[tuple[JobInfo, Task]] = []
        for job in sorted(self.snapshot.jobs, key=lambda j: (j.submitted, j.name)):
            if job.state.terminal:
                continue
            queue = job.queue if job.queue in self.quota.queues else ROOT_QUEUE
            info = JobInfo(job, self.snapshot.priority(job), queue,
                           self.quota.get(queue).queueing)
            if job.queue not in self.quota.queues or job.queue == ROOT_QUEUE:
                info.reason = PendingReason(
                    PendingKind.UNSCHEDULABLE,
                    f"virtual cluster {job.queue!r} does not exist", queue=job.queue)
            holdings.extend((info, t) for t in job.tasks if t.state.holds_resources)
            self.jobs[job.name] = info
        # Explicit GPU claims first, so that a task recorded without indices never takes one
        # that another task is known to hold.
        holdings.sort(key=lambda h: not h[1].gpus)
        for info, task in holdings:
            assert task.node is not None  # checked by Snapshot
            request = info.job.group(task.group).resources
            state = self.cluster.by_name[task.node]
            taken = self.cluster.take(state, request, _claimable(state, task, request))
            self.quota.charge(info.queue, request)
            info.running.append(TaskInfo(task.ref, task.node, taken, task.state, task.started))
            info.holding += 1

    # ---- extension points -----------------------------------------------------------------

    def job_order_key(self, job: JobInfo) -> tuple[Any, ...]:
        key: tuple[Any, ...] = ()
        for plugin in self.job_orders:
            key += plugin.job_order_key(job)
        return (*key, job.job.submitted, job.name)

    def queue_order_key(self, queue: QueueState) -> tuple[Any, ...]:
        key: tuple[Any, ...] = ()
        for plugin in self.queue_orders:
            key += plugin.queue_order_key(queue)
        return (*key, queue.name)

    def task_order(self) -> Any:
        if not self.task_orders:
            return None
        orders = self.task_orders

        def key(group: TaskGroup, index: int) -> tuple[Any, ...]:
            out: tuple[Any, ...] = ()
            for plugin in orders:
                out += plugin.task_order_key(group, index)
            return out
        return key

    def is_gang(self, job: JobInfo) -> bool:
        """A gang job under a profile with gang semantics; otherwise tasks go one by one."""
        return job.job.gang and bool(self.job_readies)

    def min_tasks(self, job: JobInfo) -> int:
        return max((p.min_tasks(job) for p in self.job_readies), default=1)

    def job_ready(self, job: JobInfo) -> bool:
        return all(p.job_ready(job) for p in self.job_readies) and job.holding > 0

    def allocatable(self, queue: str, request: Resources) -> PendingReason | None:
        state = self.quota.get(queue)
        for plugin in self.allocatables:
            reason = plugin.allocatable(state, request)
            if reason is not None:
                return reason
        return None

    def admissible(self, queue: str, request: Resources) -> PendingReason | None:
        state = self.quota.get(queue)
        for plugin in self.allocatables:
            reason = plugin.admissible(state, request)
            if reason is not None:
                return reason
        return None

    def pool_key(self, group: TaskGroup) -> Hashable:
        return tuple(p.pool_key(group) for p in self.predicates)

    def pool_for(self, group: TaskGroup) -> NodePool:
        predicates = self.predicates
        return self.cluster.pool(
            self.pool_key(group),
            lambda node: all(p.node_filter(group, node) is None for p in predicates))

    def filtered_out(self, group: TaskGroup) -> dict[str, int]:
        """Why nodes are not in the group's pool: reason → number of nodes (for messages)."""
        counts: dict[str, int] = {}
        for state in self.cluster.states:
            if not state.node.schedulable:
                counts["are unschedulable"] = counts.get("are unschedulable", 0) + 1
                continue
            for p in self.predicates:
                why = p.node_filter(group, state.node)
                if why is not None:
                    counts[why] = counts.get(why, 0) + 1
                    break
        return counts

    def spread(self, request: Resources) -> bool:
        return any(p.spread(request) for p in self.search_orders)

    # ---- placement ------------------------------------------------------------------------

    def pick_node(self, pool: NodePool, request: Resources) -> NodeState | None:
        """The best feasible node for `request`: the first found in search order, or the
        highest-scored of the first `candidates_to_score` feasible ones."""
        scorers = self.node_scores
        best: NodeState | None = None
        best_score = 0.0
        seen = 0
        excluded = self.excluded_nodes
        for node in pool.candidates(request, self.spread(request)):
            if not node.fits(request) or (excluded and node.ordinal in excluded):
                continue
            if not scorers:
                return node
            score = 0.0
            for scorer in scorers:
                score += scorer.node_score(request, node)
            if best is None or score > best_score:
                best, best_score = node, score
            seen += 1
            if seen >= self.candidates_to_score:
                break
        return best

    def statement(self) -> Statement:
        return Statement(self.cluster, self.quota, self)

    # ---- Ledger: how committed statements become decisions -------------------------------

    def allocated(self, allocation: Allocation) -> None:
        job = self.jobs[allocation.task.job]
        job.take(allocation.task.group, allocation.task.index)
        job.holding += 1

    def unallocated(self, allocation: Allocation) -> None:
        job = self.jobs[allocation.task.job]
        job.give_back(allocation.task.group, allocation.task.index)
        job.holding -= 1

    def evicted(self, eviction: Eviction) -> None:
        self.jobs[eviction.task.job].holding -= 1

    def unevicted(self, eviction: Eviction) -> None:
        self.jobs[eviction.task.job].holding += 1

    def committed(self, operations: list[Allocation | Eviction]) -> None:
        for op in operations:
            if isinstance(op, Allocation):
                self.decisions.binds.append(Bind(op.task, op.node.name, op.gpus, op.request))
                self.jobs[op.task.job].placed += 1
            else:
                self.decisions.evictions.append(Evict(op.task, op.node.name, op.reason))

    # ---- closing ---------------------------------------------------------------------------

    def close(self) -> Decisions:
        """Record a reason for every job still waiting — holding nothing, or a gang holding
        fewer than its minimum — and return the decisions."""
        for job in self.jobs.values():
            if not job.pending or (job.holding > 0 and self.job_ready(job)):
                continue
            reason = job.reason or PendingReason(
                PendingKind.INSUFFICIENT_RESOURCES, "not reached in this cycle")
            self.decisions.pending.append(Pending(job.name, reason))
        return self.decisions

    def waiting_jobs(self) -> list[JobInfo]:
        """Jobs with tasks still to place, in submission order."""
        return [j for j in self.jobs.values()
                if j.pending and j.job.state is not JobState.CANCELLED]


def _claimable(state: NodeState, task: Task, request: Resources) -> tuple[int, ...] | None:
    """The GPU indices a running task holds: its recorded ones, which must be free and exist,
    or None to take the lowest free ones."""
    if not task.gpus:
        if request.gpu > state.gpu_free_mask.bit_count():
            raise SnapshotError(f"node {state.name} has no free GPU index left for task "
                                f"{task.ref}")
        return None
    for index in task.gpus:
        if index >= state.allocatable.gpu or not state.gpu_free_mask >> index & 1:
            raise SnapshotError(f"task {task.ref} claims GPU {index} on node {state.name}, "
                                "which does not exist or is already held")
    return task.gpus
