"""The server's view of the control plane: the `Scheduler` protocol.

The REST layer never imports the control loop; it is handed anything with these
methods (the live `shoal.control.ControlPlane`, or a small store-backed stand-in in tests).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from shoal.api import Job, PendingReason, VirtualCluster
from shoal.scheduler.introspection import VirtualClusterStatus
from shoal.spec.imports import Original
from shoal.store.audit import AuditNote
from shoal.store.nodes import NodeRecord


class Scheduler(Protocol):
    def submit(self, job: Job, idempotency_key: str | None, *, wake: bool = True,
               generated_from: str | None = None, original: Original | None = None
               ) -> tuple[Job, bool]:
        """Store a new job (or replay an idempotent retry): the job as stored, and whether
        this call created it; the name of a job that has ended is taken, and that job kept
        in history, unless the name was generated (`generated_from`: its prefix). An
        imported job is stored with its `original` document. Raises
        the store's `AlreadyExistsError` / `IdempotencyConflict`. With `wake=False` the
        scheduler takes the job up at its next turn or at `wake_up()`, whichever is
        first."""
        ...

    def submit_batch(self, jobs: Sequence[tuple[Job, str | None]]
                     ) -> tuple[Job, ...] | None:
        """New jobs of separate submissions (each with its idempotency key; none imported,
        no generated name) stored together, all or none, and taken up at `wake_up()`: the
        jobs as stored, or None, with nothing stored, when the store refused any (the
        caller then `submit`s each alone, which answers it as it always did)."""
        ...

    def submit_jobs(self, jobs: Sequence[Job], idempotency_key: str | None, *,
                    originals: Mapping[str, Original] | None = None, wake: bool = True
                    ) -> tuple[tuple[Job, ...], bool]:
        """`submit` for the jobs one document became, all or none, each stored with its
        original document when `originals` names it."""
        ...

    def wake_up(self) -> None:
        """Take up what was submitted with `wake=False` now."""
        ...

    def cancel(self, name: str) -> object:
        """Cancel a job. Raises `NotFoundError`, or `IllegalTransitionError` when it is
        already finished."""
        ...

    def delete(self, name: str) -> bool:
        """Delete a job: one that has ended is removed now (True); one that has not is
        cancelled, marked, and removed once its tasks have stopped (False). Raises
        `NotFoundError`; `TimeoutError` when the scheduler did not answer in time."""
        ...

    def pending_reason(self, name: str) -> PendingReason | None:
        """Why the job waits, as of the latest cycle; None when it does not (or is unknown)."""
        ...

    def reload_catalog(self) -> None:
        """Virtual clusters or priority classes were added to the store: take them up, so
        that the next submission into a new virtual cluster is admitted and scheduled."""
        ...

    def virtual_cluster_status(self) -> Mapping[str, VirtualClusterStatus]:
        """Every virtual cluster (the root and `default` included) as the scheduler sees it
        now: guaranteed, ceiling, used, available, children, jobs."""
        ...

    def add_sub_clusters(self, job: str, sub_clusters: Sequence[VirtualCluster]) -> Job:
        """Store sub-clusters of a running job's own virtual cluster and take them up;
        returns the job as stored now. Raises the store's `NotFoundError`,
        `AlreadyExistsError` (a name taken) or `StoreError` (the job ended, or has no
        virtual cluster of its own)."""
        ...

    def feasibility(self, job: Job) -> PendingReason | None:
        """Why the job could never run on this cluster, even idle; None if it could. A reason
        of kind `Unschedulable` makes the server refuse the submission."""
        ...

    def hold(self, name: str, who: str) -> bool:
        """Hold a pending job, none of whose tasks is placed (`who` asked): stored, then
        no longer considered; whether it changed anything. Raises `NotFoundError`,
        `ControlConflictError` (it has started or ended), `TimeoutError`."""
        ...

    def release(self, name: str, who: str) -> bool:
        """Release a held job; whether it was held. Raises as `hold` does."""
        ...

    def requeue(self, name: str, who: str, *, hold: bool = False) -> None:
        """Stop a started job's tasks and put it back to pending, no retry counted (held
        too with `hold`). Raises as `hold` does (`ControlConflictError`: it has not
        started, has ended, or is being stopped)."""
        ...

    def set_node_service(self, name: str, note: AuditNote, *, cordoned: bool,
                         drain: bool = False) -> NodeRecord:
        """Cordon node `name` (`drain`: and evict its tasks gracefully, each once its
        `protectFor` has passed), or uncordon it; audited with `note`. The node as stored.
        Raises `NotFoundError`, `TimeoutError`."""
        ...

    def set_priority(self, name: str, priority_class: str, note: AuditNote) -> None:
        """Give a job that has not ended another priority class, from the next cycle.
        Raises `NotFoundError`, `AdminConflictError` (it has ended), `TimeoutError`."""
        ...

    def drain_virtual_cluster(self, name: str, note: AuditNote) -> VirtualCluster:
        """Close a stored virtual cluster now and delete it once its last job has ended.
        Raises `NotFoundError`, `AdminConflictError` (it has child clusters)."""
        ...
