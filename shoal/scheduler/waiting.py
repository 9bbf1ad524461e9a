"""The model's waiting jobs: a mapping by name that also keeps them in submission order.

A cycle that walks waiting jobs in order — strict FIFO stopping at its head, the enqueue
action's admissions — reads them from here instead of sorting every waiting job each cycle:
a job is put in its place once, when it starts waiting, in O(log n).

It also notes which jobs `moved` — started or stopped waiting, or changed what they wait for,
hold or are blocked by (`JobInfo.moved`) — for the class lines, which re-file only those
(`shoal.scheduler.class_lines`).
"""

from __future__ import annotations

from typing import TypeVar, overload

from sortedcontainers import SortedKeyList

from shoal.scheduler.jobs import JobInfo

_T = TypeVar("_T")
_MISSING = object()


def submission_order(job: JobInfo) -> tuple[float, str]:
    """Jobs wait in (submission, name) order: the tie-break every job order ends with."""
    return (job.job.submitted, job.name)


class WaitingJobs(dict[str, JobInfo]):
    """Jobs with tasks still to place, by name; `in_order` walks them by submission."""

    def __init__(self) -> None:
        super().__init__()
        self._order: SortedKeyList[JobInfo, tuple[float, str]] = SortedKeyList(
            key=submission_order)
        self._with_min_resources: set[str] = set()
        self._with_best_effort: set[str] = set()
        self.moved: set[JobInfo] = set()
        """Jobs that moved since the class lines last read this (module docstring)."""
        self.cleared = 0
        """How often every job was dropped at once: the class lines then start over."""
        self.entered: set[JobInfo] = set()
        """Jobs that started waiting since a cycle's opening last reset reasons
        (`shoal.scheduler.noted_reasons`)."""

    @property
    def with_min_resources(self) -> int:
        """How many of them declare `minResources`: admitting those reads the quota's usage
        now, so the enqueue action judges them all at once, before anything is placed."""
        return len(self._with_min_resources)

    @property
    def with_best_effort(self) -> int:
        """How many of them have a task group that requests no resources (best-effort):
        none, and the backfill action has no best-effort task to place."""
        return len(self._with_best_effort)

    def __setitem__(self, name: str, job: JobInfo) -> None:
        old = self.get(name)
        if old is job:
            return
        if old is not None:
            self._forget(old)
        super().__setitem__(name, job)
        self._order.add(job)
        self.moved.add(job)
        self.entered.add(job)
        job.moved = self.moved
        # Noted as the job is when it starts waiting: what counts is the set of names.
        if job.job.min_resources is not None:
            self._with_min_resources.add(name)
        if any(g.resources.is_zero() for g in job.job.groups):
            self._with_best_effort.add(name)

    def __delitem__(self, name: str) -> None:
        self._forget(self[name])
        super().__delitem__(name)

    @overload
    def pop(self, name: str, /) -> JobInfo: ...
    @overload
    def pop(self, name: str, default: JobInfo, /) -> JobInfo: ...
    @overload
    def pop(self, name: str, default: _T, /) -> JobInfo | _T: ...

    def pop(self, name: str, default: object = _MISSING, /) -> object:
        job = self.get(name)
        if job is None:
            if default is _MISSING:
                raise KeyError(name)
            return default
        del self[name]
        return job

    def clear(self) -> None:
        super().clear()
        self._order.clear()
        self._with_min_resources.clear()
        self._with_best_effort.clear()
        self.moved.clear()
        self.entered.clear()
        self.cleared += 1

    def _forget(self, job: JobInfo) -> None:
        self.moved.add(job)
        self._order.remove(job)
        self._with_min_resources.discard(job.name)
        self._with_best_effort.discard(job.name)

    def in_order(self) -> list[JobInfo]:
        """Every waiting job, in submission order."""
        return list(self._order)

    def next_after(self, key: tuple[float, str] | None) -> JobInfo | None:
        """The first waiting job in submission order after `key` (None: the first of all),
        looked up afresh (O(log n)): a walk step by step sees no job that left and none
        twice, however the jobs change between steps."""
        order = self._order
        index = 0 if key is None else order.bisect_key_right(key)
        return order[index] if index < len(order) else None

    def rest(self, key: tuple[float, str] | None) -> list[JobInfo]:
        """Every waiting job after `key` in submission order (None: all of them)."""
        order = self._order
        if key is None:
            return list(order)
        return list(order.islice(order.bisect_key_right(key)))
