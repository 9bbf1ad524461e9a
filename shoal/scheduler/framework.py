"""The scheduler's extension points: one typed protocol per point, as Volcano's framework has.

A plugin is any object with a `name` that implements some of these protocols; the session
collects, per extension point, the plugins of the profile's tiers in order. Orderings are
*keys* rather than comparators: the session concatenates the keys of every plugin in tier
order, which is the same as Volcano's "first plugin with an opinion decides" and sorts in
C instead of calling Python per comparison.

Resource fit is not a predicate plugin: it is what the node index answers (see
`shoal.core.nodes`), so that no task ever scans every node.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from shoal.api.decisions import PendingReason
from shoal.api.objects import Node, TaskGroup
from shoal.api.resources import Resources
from shoal.core.nodes import NodeState
from shoal.core.quota import QueueState

if TYPE_CHECKING:
    from shoal.scheduler.jobs import JobInfo, TaskInfo
    from shoal.scheduler.session import Session


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class SessionOpen(Protocol):
    """Called once when a cycle's session is built, before any action runs."""

    def open_session(self, session: Session) -> None: ...


@runtime_checkable
class JobOrder(Protocol):
    """Orders jobs within a virtual cluster; smaller keys are served first."""

    def job_order_key(self, job: JobInfo) -> tuple[Any, ...]: ...


@runtime_checkable
class PreemptionOrder(Protocol):
    """The part of a job-order plugin's key that justifies evicting one job for another.
    The preempt and reclaim actions rank a preemptor against its candidates with this key
    where a plugin has one, else with its whole `job_order_key`: a plugin may order jobs
    finely (FIFO within a class) yet let only the coarse part (the class) preempt, so two
    jobs it ranks level here never evict each other (the las plugin), or order waiting jobs by
    something that gives no right to evict at all (the priority plugin's aging)."""

    def preemption_key(self, job: JobInfo) -> tuple[Any, ...]: ...


@runtime_checkable
class QueueOrder(Protocol):
    """Orders virtual clusters; the smallest key gets the next job. Called again after each
    job, so a key may depend on usage."""

    def queue_order_key(self, queue: QueueState) -> tuple[Any, ...]: ...


@runtime_checkable
class TaskOrder(Protocol):
    """Orders a job's pending tasks: which of them a gang tries first for its `minAvailable`
    (any of them may start it: `shoal.scheduler.gang_choice`)."""

    def task_order_key(self, group: TaskGroup, index: int) -> tuple[Any, ...]: ...


@runtime_checkable
class Predicate(Protocol):
    """A static node filter. Nodes are grouped into pools by `pool_key`, so the filter runs
    once per (pool, node) per cycle, not once per task."""

    def pool_key(self, group: TaskGroup) -> Hashable: ...

    def node_filter(self, group: TaskGroup, node: Node) -> str | None:
        """None if the node may host the group's tasks, else why not (short, plural-safe,
        e.g. "do not match nodeSelector {gpu-type: A100}")."""
        ...


@runtime_checkable
class NodeScore(Protocol):
    """Scores a feasible node for a request; the highest total wins."""

    def node_score(self, request: Resources, node: NodeState) -> float: ...


@runtime_checkable
class NodeSearchOrder(Protocol):
    """Whether the node index is searched emptiest-first (spread) for this request."""

    def spread(self, request: Resources) -> bool: ...


@runtime_checkable
class JobReady(Protocol):
    """Gang semantics: how many tasks must be placed together for a job to run."""

    def min_tasks(self, job: JobInfo) -> int:
        """Tasks that must be placed in one all-or-nothing statement now (≤ 1: none)."""
        ...

    def job_ready(self, job: JobInfo) -> bool: ...


@runtime_checkable
class Allocatable(Protocol):
    """Quota: whether a virtual cluster may take more resources.

    Volcano has a separate `Overused(queue)` that skips a whole queue. Shoal folds it into
    this per-request question on purpose: a queue at its GPU max must still admit CPU-only
    work, which a queue-wide verdict would wrongly turn away."""

    def allocatable(self, queue: QueueState, request: Resources, surplus: bool = False
                    ) -> PendingReason | None:
        """`surplus`: the request is elastic surplus (seed 001), which a quota may treat
        apart (the capacity plugin's `elastic` mode lends it others' guarantees)."""
        ...

    def admissible(self, queue: QueueState, request: Resources) -> PendingReason | None:
        """A reason if `request` could never be granted, even on an idle cluster."""
        ...


@runtime_checkable
class JobValid(Protocol):
    """Whether a job is well-formed for this cluster's rules at all (Volcano's `JobValid`):
    a reason, of kind `Unschedulable`, turns it away at submission and keeps a stored one
    waiting with that reason; None lets it through."""

    def job_valid(self, job: JobInfo) -> PendingReason | None: ...


@runtime_checkable
class VictimSelection(Protocol):
    """Filters the tasks that may be evicted for a preemptor. Consumed by the preempt and
    reclaim actions (seed 001), which are not part of the default profile yet."""

    def victims(self, preemptor: JobInfo, candidates: Sequence[TaskInfo]
                ) -> Sequence[TaskInfo]: ...


@runtime_checkable
class TimeDependent(Protocol):
    """A plugin whose decisions change with the clock alone (e.g. least attained service).
    Drivers that skip cycles when nothing happened must not skip them while jobs wait;
    `next_change` says when the plugin's view next changes by itself (None: never)."""

    time_dependent: bool

    def next_change(self, session: Session) -> float | None: ...


@runtime_checkable
class Starvation(Protocol):
    """Says when a waiting job started starving (`shoal.scheduler.aging`): the first such
    job of a virtual cluster that cannot be placed holds a reservation (allocate)."""

    def starving_since(self, job: JobInfo) -> float | None: ...


class Action(Protocol):
    """One step of the cycle (enqueue, allocate, backfill …)."""

    name: str

    def execute(self, session: Session) -> None: ...
