"""Applying a cycle's evictions: the half of the control loop (`shoal.control.loop`) that
stops evicted tasks and hands their resources to the tasks bound in their place — a base
class of `ControlPlane`, on the loop's thread, as `shoal.control.stopping` is.

A cycle's evictions (preempt, reclaim, an elastic job shrunk) are stored with its binds in
one transaction (`Repository.record_binds`): an evicted task goes RELEASING, its process is
signalled (SIGTERM, then SIGKILL after `grace_period`), and when it is gone the task goes
back to PENDING (`Repository.evicted_task_stopped`) — however its process ended, it is no
failure and costs no retry. Until then the model holds the task back (`hold_back`), so it is
not placed again while its old process runs, and the tasks bound onto its node wait
(`shoal.control.handover`). A job evicted whole goes back to PENDING at once; its tasks
follow as their processes stop.

A restart finds evictions under way in the store: RELEASING tasks of jobs with no stop
recorded. The model counts them as waiting and held back, their processes are signalled
again, and bound tasks on their nodes keep waiting.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from shoal.api import Job, Node, PriorityClass, TaskRef, TaskState, VirtualCluster
from shoal.api.decisions import Evict
from shoal.api.flavors import ResourceFlavor
from shoal.api.resources import total
from shoal.control.handover import Handover
from shoal.control.stopping import Stopping, Tracked
from shoal.scheduler.model import SchedulerModel
from shoal.store.repository import TaskRecord

log = logging.getLogger(__name__)


class Evicting(Stopping):
    """`ControlPlane` supplies the cluster, the clock and the launch (`shoal.control.launches`)."""

    nodes: tuple[Node, ...]
    priority_classes: tuple[PriorityClass, ...]
    resource_flavors: tuple[ResourceFlavor, ...]
    clock: Callable[[], float]
    _handover: Handover

    def _settle(self, name: str) -> None:
        raise NotImplementedError

    def _model_of(self, jobs: Sequence[Job], virtual_clusters: Sequence[VirtualCluster]
                  ) -> tuple[SchedulerModel, list[TaskRef]]:
        """The model of the stored jobs, and the evicted tasks whose processes may still be
        stopping: RELEASING tasks of jobs with no stop under way. Their resources were given
        to others when they were evicted; the model counts them as waiting, held back until
        they have stopped (`shoal.control.handover`)."""
        evicted = [t.ref for j in jobs if j.name not in self._ending for t in j.tasks
                   if t.state is TaskState.RELEASING]
        if evicted:
            refs = set(evicted)
            jobs = [replace(j, tasks=tuple(
                replace(t, state=TaskState.PENDING, node=None, gpus=(), started=None)
                if t.ref in refs else t for t in j.tasks)) for j in jobs]
        # Tasks still charged to an unschedulable node (cordoned, or not ready: until they
        # are lost) count at the root, as `SchedulerModel.from_snapshot` counts them.
        cordoned = {n.name for n in self.nodes if not n.schedulable}
        held = total(j.group(t.group).resources for j in jobs if not j.state.terminal
                     for t in j.tasks if t.state.holds_resources and t.node in cordoned)
        model = SchedulerModel(self.nodes, virtual_clusters, self.priority_classes,
                               now=self.clock(), held_on_cordoned=held,
                               resource_flavors=self.resource_flavors)
        model.add_jobs(jobs)
        for ref in evicted:
            model.hold_back(ref)
        return model, evicted

    def _resume_eviction(self, rec: TaskRecord) -> None:
        """Finish an eviction a restart found under way: stop the process again (it may
        have been signalled already), or record it stopped."""
        if not rec.pid or rec.node is None:
            self._evicted_stopped(rec.ref, "before it was launched", None)
            return
        handle = self._adopt(rec)
        self._tasks[rec.ref] = Tracked(handle, TaskState.RELEASING)
        self._handover.evicting(rec.ref, rec.node)
        self.executor.request_stop(handle, self.grace_period)

    def _evict(self, evict: Evict) -> None:
        """Stop an evicted task's process (stored RELEASING already); the task is placed
        again only once it has stopped. One never launched was stored PENDING at once."""
        ref = evict.task
        self.model.hold_back(ref)
        tracked = self._tasks.get(ref)
        if tracked is None or tracked.handle.pid <= 0:
            self._tasks.pop(ref, None)
            self._launch_ready(self._handover.stopped(ref))
            self.model.task_stopped(ref)
            return
        tracked.state = TaskState.RELEASING
        self._handover.evicting(ref, evict.node)
        self.executor.request_stop(tracked.handle, self.grace_period)
        log.info("task %s: evicted (%s); stopping it", ref, evict.reason)

    def _launch_ready(self, refs: Sequence[TaskRef]) -> None:
        raise NotImplementedError

    def _evicted_stopped(self, ref: TaskRef, how: str, code: int | None, *,
                         ended_at: float | None = None) -> None:
        """An evicted task's process is gone: it waits to be placed again. Its job may have
        finished meanwhile (its other tasks succeeded while this one stopped): surplus that
        does not run is not waited for, so the job's end is judged again. `ended_at`: when
        the engine saw it end."""
        self.repository.evicted_task_stopped(ref, how, code, ended_at)
        self.model.task_stopped(ref)
        log.info("task %s: stopped after eviction (%s)", ref, how)
        self._settle(ref.job)
