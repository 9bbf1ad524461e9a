"""The handover of a node's resources from evicted tasks to the tasks bound in their place.

A cycle that evicts (preempt, reclaim, an elastic job shrunk) gives the victims' resources to
the preemptor in the same decision: the scheduling core frees them at once, as Volcano's
session does. Its processes do not stop at once: they get SIGTERM and up to the grace period
to save a checkpoint. A task bound into those resources that started meanwhile would share
a GPU with a process that still uses it (CUDA memory, a busy device) — Volcano pipelines such
a task onto the releasing node and binds it only once the resources are idle; Kubernetes'
kubelet makes the new pod wait the same way.

So a bound task waits — BOUND in the store, placed in the model — while any task evicted from
its physical node is still stopping, and is launched when the last of them has exited. The
rule is per node, not per GPU: memory and CPU are shared on a node too, and a grace period is
short. Nothing here does I/O: the control loop asks and applies (`shoal.control.loop`).
"""

from __future__ import annotations

from shoal.api import TaskRef


class Handover:
    """Evicted tasks whose processes are still stopping, and the bound tasks waiting for
    them, per physical node."""

    def __init__(self) -> None:
        self._evicting: dict[TaskRef, str] = {}
        self._waiting: dict[TaskRef, str] = {}

    def evicting(self, ref: TaskRef, node: str) -> None:
        """`ref`'s process on `node` is being stopped after an eviction."""
        self._evicting[ref] = node

    def is_evicting(self, ref: TaskRef) -> bool:
        return ref in self._evicting

    def must_wait(self, ref: TaskRef, node: str) -> bool:
        """Whether bound task `ref` must wait before it is launched on `node`; if so, it is
        remembered until `stopped` frees it."""
        if node in self._evicting.values():
            self._waiting[ref] = node
            return True
        return False

    def stopped(self, ref: TaskRef) -> list[TaskRef]:
        """An evicted task's process is gone (or a task stopped waiting): the bound tasks
        that may be launched now, in the order they were bound."""
        node = self._evicting.pop(ref, None)
        self._waiting.pop(ref, None)
        if node is None or node in self._evicting.values():
            return []
        ready = [r for r, n in self._waiting.items() if n == node]
        for r in ready:
            del self._waiting[r]
        return ready

    def forget_job(self, job: str) -> None:
        """The job is being stopped: its bound tasks no longer wait to be launched (its
        evicted tasks still count until their processes are gone)."""
        for ref in [r for r in self._waiting if r.job == job]:
            del self._waiting[ref]

    def waiting(self) -> dict[TaskRef, str]:
        """Bound tasks waiting for a node's evicted tasks to stop → the node."""
        return dict(self._waiting)
