"""What the API's threads ask of the control loop (`shoal.control.loop`), a base class of
`ControlPlane`: submitting and cancelling jobs, deleting them, checking that a job could ever
run, adding a running job's sub-clusters, taking up a changed catalog, and reading why jobs
wait and how the virtual clusters stand.

Each does its store work in the caller's thread (errors are raised there) and leaves the
change to the model as a command that the loop's thread carries out at its next turn
(`_command`): the model belongs to that thread alone.
"""

from __future__ import annotations

import functools
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import TYPE_CHECKING

from shoal.api import Job, PendingReason, PriorityClass, VirtualCluster
from shoal.api.flavors import ResourceFlavor
from shoal.api.objects import job_of_virtual_cluster
from shoal.control.expiry import JobExpiry
from shoal.control.node_watch import NodeWatch
from shoal.control.retired import move_retired_files
from shoal.control.waiting import WaitingReasons
from shoal.core.snapshot import SnapshotError
from shoal.executors.contract import Executor
from shoal.scheduler.actions.enqueue import AdmissionCheck
from shoal.scheduler.introspection import VirtualClusterStatus, virtual_cluster_status
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.profile import Profile
from shoal.spec.imports import Original
from shoal.store import NotFoundError, Repository

#: How long an API thread waits for the loop to answer a question about its model (s).
STATUS_TIMEOUT = 10.0


class Requests:
    """`ControlPlane` supplies the store, the engine, the clock, the catalog, the admission
    check and the loop's command queue."""

    repository: Repository
    executor: Executor
    clock: Callable[[], float]
    profile: Profile
    virtual_clusters: tuple[VirtualCluster, ...]
    priority_classes: tuple[PriorityClass, ...]
    resource_flavors: tuple[ResourceFlavor, ...]
    wake: threading.Event
    _commands: queue.SimpleQueue[Callable[[], None]]
    _admission: AdmissionCheck
    _admission_lock: threading.Lock
    _node_watch: NodeWatch
    _expiry: JobExpiry
    _waiting: WaitingReasons
    _looping: bool

    # Declared for the type checker only: the other bases of `ControlPlane` and its own body
    # define them, and a stub here would shadow them in its method order.
    if TYPE_CHECKING:
        @property
        def model(self) -> SchedulerModel: ...

        def _command(self, command: Callable[[], None]) -> None: ...

        def _admit(self, job: Job) -> None: ...

        def _reload_model(self) -> None: ...

        def _cancel(self, name: str, cause: str) -> None: ...

        def gate_reason(self, name: str) -> PendingReason | None: ...

        def gate_reasons(self) -> dict[str, PendingReason]: ...

    def submit(self, job: Job, idempotency_key: str | None = None, *, wake: bool = True,
               generated_from: str | None = None, original: Original | None = None
               ) -> tuple[Job, bool]:
        """Store the job (PENDING) and have the loop add it to the model; returns the job as
        stored and whether this call created it (False: an idempotent replay). Store errors
        (AlreadyExistsError, IdempotencyConflict) are raised here, in the caller's thread.
        An ended job of that name is kept in history (`shoal.store.job_names`; not for a
        name generated from `generated_from`), its files moved before the new job is
        admitted (`shoal.control.retired`). An imported job is stored with its `original`.

        `wake=False` leaves the loop to `wake_up()`, which the API calls once its answer
        has been sent: a loop woken at once competes with the answer for the GIL. A wake-up
        that never comes costs at most POLL_INTERVAL: the loop takes up queued commands on
        every turn."""
        if not job.submitted:
            job = replace(job, submitted=self.clock())
        done = self.repository.submit(job, idempotency_key=idempotency_key,
                                      generated_from=generated_from, original=original)
        stored, created = done.job, done.created
        if created:
            if done.retired is not None:
                self._commands.put(lambda: move_retired_files(self.repository, self.executor))
            self._commands.put(lambda: self._admit(stored))
            if wake:
                self.wake_up()
        return stored, created

    def submit_batch(self, jobs: Sequence[tuple[Job, str | None]]) -> tuple[Job, ...] | None:
        """New jobs of separate submissions stored in one transaction
        (`Repository.insert_new`; `shoal.server.submit_batch`) and queued for the loop as
        `submit(wake=False)` queues one; None, nothing stored, when the store refused any."""
        now = self.clock()
        stored = self.repository.insert_new(
            [(job if job.submitted else replace(job, submitted=now), key) for job, key in jobs])
        for job in stored or ():
            self._commands.put(functools.partial(self._admit, job))
        return stored

    def submit_jobs(self, jobs: Sequence[Job], idempotency_key: str | None = None, *,
                    originals: Mapping[str, Original] | None = None, wake: bool = True
                    ) -> tuple[tuple[Job, ...], bool]:
        """`submit` for the jobs one document became, stored all or none
        (`Repository.submit_jobs`), each with its original document if it has one."""
        now = self.clock()
        jobs = tuple(job if job.submitted else replace(job, submitted=now) for job in jobs)
        stored, created = self.repository.submit_jobs(jobs, idempotency_key=idempotency_key,
                                                      originals=originals)
        if created:
            for job in stored:
                self._commands.put(functools.partial(self._admit, job))
            if wake:
                self.wake_up()
        return stored, created

    def wake_up(self) -> None:
        """Have the loop take up what was queued for it now."""
        self.wake.set()

    def feasibility(self, job: Job) -> PendingReason | None:
        """Why `job` could never run on this control plane's cluster (for the API to reject
        it at submission); None if it could. The API's threads share one
        `AdmissionCheck`, which checks one job at a time, hence the lock. A job submitted
        into a job's own virtual cluster (or a sub-cluster of it) is checked against
        those."""
        owner = job_of_virtual_cluster(job.queue)
        scoped = () if owner is None else tuple(self.repository.job_virtual_clusters(owner))
        with self._admission_lock:
            return self._admission(job, scoped)

    def add_sub_clusters(self, job: str, sub_clusters: Sequence[VirtualCluster]) -> Job:
        """Store sub-clusters of a running job's own virtual cluster (store errors are raised
        here, in the caller's thread) and have the loop add them to the model; returns the
        job as stored now."""
        stored = self.repository.add_sub_clusters(job, sub_clusters)
        self._command(lambda: self._add_sub_clusters(job, sub_clusters))
        return stored

    def _add_sub_clusters(self, job: str, sub_clusters: Sequence[VirtualCluster]) -> None:
        try:
            self.model.add_sub_clusters(job, sub_clusters)
        except SnapshotError:  # the job ended or was retried since: the store says what is
            self._reload_model()

    def reload_catalog(self) -> None:
        """Take up the virtual clusters, priority classes and resource flavors the store holds
        now (the API added some): the admission check at once, the scheduler model at the
        loop's next turn — a rebuild from the store, as after an error, queued behind the commands
        already waiting so that no job submitted later is admitted into the old model."""
        virtual_clusters = tuple(self.repository.list_virtual_clusters())
        priority_classes = tuple(self.repository.list_priority_classes())
        resource_flavors = tuple(self.repository.list_resource_flavors())
        admission = AdmissionCheck(self._node_watch.declared(), virtual_clusters,
                                   priority_classes, self.profile)
        with self._admission_lock:
            self.virtual_clusters, self.priority_classes = virtual_clusters, priority_classes
            self.resource_flavors = resource_flavors
            self._admission = admission
        self._command(self._reload_model)

    def delete(self, name: str) -> bool:
        """Delete a job (see `shoal.control.expiry`): one that has ended is removed now
        (True); one that has not is marked, cancelled by the loop, and removed once its
        tasks have stopped (False). Raises NotFoundError."""
        summary = self.repository.request_delete(name)
        if summary.job.state.terminal and self._expiry.removed_now(name):
            return True
        self._expiry.watch(name)
        self._command(lambda: self._cancel(name, "deleted by request"))
        return False

    def cancel(self, name: str, cause: str = "cancelled by request") -> Job:
        """Ask the loop to stop the job; returns the job as stored now, without its tasks
        (read by the API's thread: a large job's are not loaded). Cancelling a finished
        job changes nothing; an unknown one raises NotFoundError."""
        summary = self.repository.job_summary(name)
        if summary is None:
            raise NotFoundError(f"no job {name!r}")
        if not summary.job.state.terminal:
            self._command(lambda: self._cancel(name, cause))
        return summary.job

    def pending_reason(self, name: str) -> PendingReason | None:
        """Why the job waited after the latest cycle (or waits for a dependency or a
        release), or None."""
        return self.gate_reason(name) or self._waiting.get(name)

    def pending_reasons(self) -> dict[str, PendingReason]:
        return {**self._waiting.all(), **self.gate_reasons()}

    def virtual_cluster_status(self) -> dict[str, VirtualClusterStatus]:
        """Every virtual cluster as the model sees it now (introspection). Read in the loop's
        thread, which owns the model, when the loop runs; here when it does not."""
        if not self._looping:
            return virtual_cluster_status(self.model)
        answer: Future[dict[str, VirtualClusterStatus]] = Future()
        self._command(lambda: answer.set_result(virtual_cluster_status(self.model)))
        return answer.result(timeout=STATUS_TIMEOUT)
