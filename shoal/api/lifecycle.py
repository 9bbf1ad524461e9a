"""Job and task lifecycles: the states, the legal transitions, and the cause of each move;
and the phase a node stands in (`NodePhase`, what `shoal nodes` shows).

Every state change goes through `JOB_LIFECYCLE.move(...)` or `TASK_LIFECYCLE.move(...)`, which
refuse an illegal transition and return a `Transition` record carrying its cause, so the store
and the API can show *why* a job is where it is.

Task states follow a pod's life as Volcano sees it: PENDING (wants a node) → BOUND (the
scheduler chose a node and GPUs; the executor is starting it) → RUNNING → SUCCEEDED | FAILED.
RELEASING is a task being stopped because it was evicted (preempted, reclaimed, shrunk) or its
job is ending or being retried: it returns to PENDING when it has stopped, or ends
FAILED/CANCELLED. A bound or releasing task still holds its node's resources, which is what
keeps the scheduler from double-booking them.

Retries never skip a state: a task retried in place goes RUNNING → FAILED → PENDING (two
events, the second saying "retry 1/3 after exit code 2"); a job retry moves its running tasks
RELEASING → PENDING once stopped, and its finished ones FAILED/SUCCEEDED → PENDING, while the
job goes RUNNING → PENDING. CANCELLED stays final.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar


class NodePhase(StrEnum):
    """How a node stands now, as `shoal nodes` shows it: what its engine reports (a live
    inventory's nodes die, drain and come back) and what was declared of it."""

    READY = "Ready"
    NOT_READY = "NotReady"
    """Its engine says it cannot run tasks now (dead, drained, gone): nothing is placed
    on it, and its tasks are lost."""
    CORDONED = "Cordoned"
    """Declared unschedulable (`unschedulable: true`): it is ready, but nothing new is
    placed on it."""


class JobState(StrEnum):
    PENDING = "Pending"
    """Submitted, waiting for the scheduler to place at least its gang minimum."""
    RUNNING = "Running"
    """At least `minAvailable` tasks are bound or running."""
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    CANCELLED = "Cancelled"

    @property
    def terminal(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


class TaskState(StrEnum):
    PENDING = "Pending"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    CANCELLED = "Cancelled"

    @property
    def terminal(self) -> bool:
        return self in (TaskState.SUCCEEDED, TaskState.FAILED, TaskState.CANCELLED)

    @property
    def holds_resources(self) -> bool:
        """True while the task occupies its node (bound, running or still stopping)."""
        return self in (TaskState.BOUND, TaskState.RUNNING, TaskState.RELEASING)


S = TypeVar("S", JobState, TaskState)


class IllegalTransitionError(ValueError):
    """A state change that the lifecycle does not allow."""


@dataclass(frozen=True, slots=True)
class Transition(Generic[S]):
    """One recorded state change."""

    source: S
    target: S
    cause: str


class Lifecycle(Generic[S]):
    """A transition table; `move` is the only way a state changes."""

    def __init__(self, name: str, table: Mapping[S, frozenset[S]]) -> None:
        self.name = name
        self._table: dict[S, frozenset[S]] = dict(table)

    def allowed(self, source: S) -> frozenset[S]:
        allowed: frozenset[S] = self._table.get(source, frozenset())
        return allowed

    def can_move(self, source: S, target: S) -> bool:
        return target in self.allowed(source)

    def move(self, source: S, target: S, cause: str) -> Transition[S]:
        if not cause:
            raise ValueError("every transition records its cause")
        if target not in self.allowed(source):
            allowed = ", ".join(sorted(s.value for s in self.allowed(source))) or "none"
            raise IllegalTransitionError(
                f"{self.name} cannot go from {source.value} to {target.value} "
                f"(allowed from {source.value}: {allowed}); cause was: {cause}")
        return Transition(source, target, cause)


_J = JobState
JOB_LIFECYCLE: Lifecycle[JobState] = Lifecycle("job", {
    _J.PENDING: frozenset({_J.RUNNING, _J.FAILED, _J.CANCELLED}),
    # Back to PENDING when evicted whole (preempted, reclaimed, node lost) and requeued.
    _J.RUNNING: frozenset({_J.PENDING, _J.SUCCEEDED, _J.FAILED, _J.CANCELLED}),
    _J.SUCCEEDED: frozenset(),
    _J.FAILED: frozenset(),
    _J.CANCELLED: frozenset(),
})

_T = TaskState
TASK_LIFECYCLE: Lifecycle[TaskState] = Lifecycle("task", {
    _T.PENDING: frozenset({_T.BOUND, _T.CANCELLED, _T.FAILED}),
    _T.BOUND: frozenset({_T.RUNNING, _T.RELEASING, _T.FAILED, _T.CANCELLED, _T.SUCCEEDED}),
    _T.RUNNING: frozenset({_T.SUCCEEDED, _T.FAILED, _T.RELEASING, _T.CANCELLED}),
    _T.RELEASING: frozenset({_T.PENDING, _T.FAILED, _T.CANCELLED}),
    # A job retry (`jobRetryCount`) restarts every task of the job, finished ones included.
    _T.SUCCEEDED: frozenset({_T.PENDING}),
    # Retried in place (`taskRetryCount`) or with its whole job (`jobRetryCount`).
    _T.FAILED: frozenset({_T.PENDING}),
    _T.CANCELLED: frozenset(),
})
