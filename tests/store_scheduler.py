"""`StoreScheduler`: the control plane's submit, cancel and reasons straight onto the
repository — what the REST API tests and the client tests give the app instead of a live
control loop. (Beside the root conftest, so that every suite can import it.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shoal.api import Job, JobState, PendingReason, VirtualCluster
from shoal.api.objects import job_of_virtual_cluster
from shoal.scheduler.actions.enqueue import admission_check
from shoal.scheduler.introspection import VirtualClusterStatus, virtual_cluster_status
from shoal.scheduler.model import SchedulerModel
from shoal.spec.imports import Original
from shoal.store import Repository
from shoal.store.audit import AuditNote
from shoal.store.nodes import NodeRecord


class StoreScheduler:
    """The control plane's submit/cancel/reasons, straight onto the repository."""

    def __init__(self, repository: Repository) -> None:
        self.repository = repository
        self.reasons: dict[str, PendingReason] = {}
        self.catalog_reloads = 0
        self.wake_ups = 0
        self.batches: list[int] = []
        """The size of each `submit_batch` (the API's submissions stored together)."""
        self.stuck = False
        """Make `virtual_cluster_status` time out, as a control loop stuck in a step would."""

    def submit(self, job: Job, idempotency_key: str | None, *, wake: bool = True,
               generated_from: str | None = None, original: Original | None = None
               ) -> tuple[Job, bool]:
        self.wake_ups += wake
        done = self.repository.submit(job, idempotency_key=idempotency_key,
                                      generated_from=generated_from, original=original)
        return done.job, done.created

    def submit_batch(self, jobs: Sequence[tuple[Job, str | None]]) -> tuple[Job, ...] | None:
        self.batches.append(len(jobs))
        return self.repository.insert_new(jobs)

    def submit_jobs(self, jobs: Sequence[Job], idempotency_key: str | None, *,
                    originals: Mapping[str, Original] | None = None, wake: bool = True
                    ) -> tuple[tuple[Job, ...], bool]:
        self.wake_ups += wake
        return self.repository.submit_jobs(jobs, idempotency_key=idempotency_key,
                                           originals=originals)

    def wake_up(self) -> None:
        self.wake_ups += 1

    def cancel(self, name: str) -> None:
        self.repository.transition_job(name, JobState.CANCELLED, "cancelled by the API")

    def delete(self, name: str) -> bool:
        """As the control plane: an ended job goes now; one that runs is stopped (its tasks
        that hold resources go Releasing, as the loop would record them) and removed by
        `sweep` once a test has finished its stop (`repository.finish_stop`)."""
        summary = self.repository.request_delete(name)
        if not summary.job.state.terminal:
            self.repository.stop_job(name, JobState.CANCELLED, "deleted by request")
        return bool(self.repository.delete_jobs([name]))

    def sweep(self) -> list[str]:
        """What the control loop's next expiry tick removes (with no TTL)."""
        return self.repository.delete_expired(None)

    def hold(self, name: str, who: str) -> bool:
        return self.repository.set_held(name, True, f"held by {who}")[1]

    def release(self, name: str, who: str) -> bool:
        return self.repository.set_held(name, False, f"released by {who}")[1]

    def requeue(self, name: str, who: str, *, hold: bool = False) -> None:
        """As the control plane stores it: the stop under way (a test finishes it with
        `repository.finish_stop`)."""
        self.repository.requeue_check(name)
        self.repository.stop_job(name, JobState.PENDING, f"requeued by {who}", requeue=True,
                                 hold=f"held by {who} (requeue --hold)" if hold else None)

    def pending_reason(self, name: str) -> PendingReason | None:
        return self.reasons.get(name)

    def reload_catalog(self) -> None:
        self.catalog_reloads += 1  # feasibility reads the store: nothing else to do

    def virtual_cluster_status(self) -> dict[str, VirtualClusterStatus]:
        if self.stuck:
            raise TimeoutError
        model = SchedulerModel(self.repository.list_nodes(),
                               self.repository.list_virtual_clusters(),
                               self.repository.list_priority_classes(),
                               resource_flavors=self.repository.list_resource_flavors())
        model.add_jobs(self.repository.snapshot_jobs())
        model.reserve()  # what the control loop's next cycle would carve
        return virtual_cluster_status(model)

    def add_sub_clusters(self, job: str, sub_clusters: Sequence[VirtualCluster]) -> Job:
        return self.repository.add_sub_clusters(job, sub_clusters)

    def feasibility(self, job: Job) -> PendingReason | None:
        owner = job_of_virtual_cluster(job.queue)
        scoped = () if owner is None else self.repository.job_virtual_clusters(owner)
        return admission_check(job, self.repository.list_nodes(),
                               self.repository.list_virtual_clusters(),
                               self.repository.list_priority_classes(), scoped=scoped)

    def set_node_service(self, name: str, note: AuditNote, *, cordoned: bool,
                         drain: bool = False) -> NodeRecord:
        """Stored only: the live drain's evictions are the control loop's."""
        return self.repository.set_node_service(name, note, cordoned=cordoned,
                                                draining=drain)

    def set_priority(self, name: str, priority_class: str, note: AuditNote) -> None:
        self.repository.set_job_priority(name, priority_class, note)

    def drain_virtual_cluster(self, name: str, note: AuditNote) -> VirtualCluster:
        """Stored; `repository.delete_drained_virtual_clusters` is the loop's sweep."""
        return self.repository.drain_virtual_cluster(name, note)
