"""The priority plugin: jobs of higher priority class value first, within a virtual cluster
whose queueing policy is `priority` (a `fifo` virtual cluster orders by submission only).

With `agingHalfLife` a waiting job's priority doubles every that many seconds of waiting,
and a job that has waited `starvationAfter` seconds holds a reservation once it is first in
its virtual cluster (`shoal.scheduler.aging`, which owns both rules); the plugin is then
`time_dependent`. Without it the order is the class value alone, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from shoal.api.objects import QueueingPolicy
from shoal.scheduler.aging import Aging
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.registry import Arguments

if TYPE_CHECKING:
    from shoal.scheduler.session import Session


class PriorityArguments(Arguments):
    aging_half_life: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, alias="agingHalfLife",
        description="seconds of waiting that double a job's effective priority; "
                    "default: no aging")
    starvation_after: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, alias="starvationAfter",
        description="seconds of waiting after which a job first in its virtual cluster "
                    "holds a reservation; default: agingHalfLife (needs agingHalfLife)")


class Priority:
    name = "priority"

    def __init__(self, arguments: PriorityArguments) -> None:
        self.arguments = arguments
        half_life = arguments.aging_half_life
        if half_life is None and arguments.starvation_after is not None:
            raise ValueError("plugin 'priority' arguments: starvationAfter: needs "
                             "agingHalfLife (starvation is waiting that aging measures)")
        self.aging = None if half_life is None else Aging(
            half_life, arguments.starvation_after or half_life)
        self.time_dependent = self.aging is not None
        """With aging, who is starving changes with the clock alone: drivers run cycles
        while jobs wait."""
        self._now = 0.0

    def open_session(self, session: Session) -> None:
        self._now = session.now

    def job_order_key(self, job: JobInfo) -> tuple[Any, ...]:
        if job.queueing is not QueueingPolicy.PRIORITY:
            return (0,) if self.aging is None else (0, 0)
        if self.aging is None:
            return (-job.priority,)
        return (-self.aging.aged_log2(job.priority, job.job, self._now), -job.priority)

    def preemption_key(self, job: JobInfo) -> tuple[Any, ...]:
        """The class value alone: having waited gives no right to evict (`aging`)."""
        return (-job.priority if job.queueing is QueueingPolicy.PRIORITY else 0,)

    def starving_since(self, job: JobInfo) -> float | None:
        return None if self.aging is None else self.aging.starving_since(job.job, self._now)

    def next_change(self, session: Session) -> float | None:
        """The next time a waiting job starts starving; None without aging (the order of
        aged jobs never changes with the clock: `shoal.scheduler.aging`)."""
        if self.aging is None:
            return None
        return self.aging.next_starving((j.job for j in session.model.waiting.values()),
                                        session.now)
