"""The reclaim action (seed 001): a virtual cluster takes back, job by job, the guarantee it
lent.

Under the capacity plugin's `reclaim` and `elastic` modes a virtual cluster may run on the
unused guarantee of others (`shoal.scheduler.plugins.capacity`). When a job W of a lender
then cannot start, reclaim takes the borrowed resources back for it:

- W is *entitled* when W's missing tasks fit in the unused guarantee of its virtual cluster
  and of each of its ancestors (below the root): it asks only for what it is owed. A job
  that would itself borrow reclaims nothing.
- Candidates are the running jobs of *borrowing* virtual clusters — above their own
  guarantee in GPUs (or, for a job that needs none, in a dimension it needs) — outside W's
  line (neither W's virtual cluster, nor an ancestor, nor a descendant of it). Rank does not
  matter across virtual clusters: a guarantee is owed whatever the borrower's priority.
- A borrower gives back only what it borrowed: units that would take it below its own
  guarantee in GPUs are not offered.
- What they give up, in which order, and all or nothing, is the preempt action's
  (`shoal.scheduler.actions.preempt`, `shoal.scheduler.victims`): elastic surplus one
  allowed size at a time, then whole jobs; never a protected task; evicted only if W then
  starts. Under the `elastic` mode only elastic surplus ever borrows, so only elastic
  surplus is ever taken.
"""

from __future__ import annotations

from collections.abc import Iterator

from shoal.api.resources import Resources, total
from shoal.core.quota import QueueState
from shoal.scheduler.actions.preempt import Preemption, Wanted
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.plugins.capacity import Capacity, ReclaimMode
from shoal.scheduler.registry import Arguments
from shoal.scheduler.session import Session
from shoal.scheduler.victims import VictimUnit, ordered


class ReclaimArguments(Arguments):
    pass


class Reclaim:
    name = "reclaim"

    def __init__(self, arguments: ReclaimArguments) -> None:
        del arguments

    def execute(self, session: Session) -> None:
        mode = next((p.reclaim_mode for p in session.hooks.plugins if isinstance(p, Capacity)),
                    ReclaimMode.NONE)
        if mode is ReclaimMode.NONE:
            return  # nothing is ever lent: nothing to take back
        cycle = Reclamation(session, surplus_only=mode is ReclaimMode.ELASTIC)
        for job in sorted(session.candidates, key=session.job_order_key):
            if cycle.wants(job):
                cycle.preempt_for(job)


class Reclamation(Preemption):
    verb = "reclaimed"

    def __init__(self, session: Session, *, surplus_only: bool) -> None:
        super().__init__(session)
        self.surplus_only = surplus_only

    def why(self, preemptor: JobInfo) -> str:
        return (f"job {preemptor.name!r}: virtual cluster {preemptor.account!r} takes back "
                "its guarantee")

    def quota_bound(self, preemptor: JobInfo, wanted: Wanted) -> bool:
        return False  # entitled: only room on its nodes stands in its way

    def candidates(self, preemptor: JobInfo) -> list[VictimUnit]:
        session = self.session
        wanted = preemptor.first_pending(session.min_tasks(preemptor), self.task_order)
        request = total(g.resources.scale(len(ix)) for g, ix in wanted)
        # GPUs are what a GPU job lacks: a virtual cluster over its (often zero) CPU minimum
        # but within its GPUs does not borrow anything such a job could use.
        dims = {"gpu"} if request.gpu else request.dimensions()
        if request.is_zero() or not self._entitled(preemptor, request, dims):
            return []  # it would borrow itself
        units: list[VictimUnit] = []
        for job in self._borrowers(preemptor, dims):
            for unit in self.units(job, preemptor):
                if self.surplus_only and unit.shrink_to is None:
                    break
                units.append(unit)
        return self._within_excess(ordered(units, self.rank, session.job_order_key,
                                           session.now))

    def _within_excess(self, units: list[VictimUnit]) -> list[VictimUnit]:
        """The units, in order, as long as taking them keeps each borrower at or above its
        own guarantee in GPUs: reclaim takes back what was borrowed, not what is owed to
        the borrower. A job whose next unit would cut into its guarantee gives nothing more."""
        quota = self.session.quota
        excess: dict[str, int] = {}
        stopped: set[str] = set()
        out: list[VictimUnit] = []
        for unit in units:
            if unit.job.name in stopped:
                continue
            queue = quota.get(unit.job.account)
            left = excess.setdefault(queue.name, queue.usage.gpu - queue.min.gpu)
            if unit.gpus > left:
                stopped.add(unit.job.name)
                continue
            excess[queue.name] = left - unit.gpus
            out.append(unit)
        return out

    def _entitled(self, preemptor: JobInfo, request: Resources, dims: set[str]) -> bool:
        """The request fits in the unused guarantee of its virtual cluster and of every
        ancestor below the root: it asks only for what it is owed."""
        path = self.session.quota.get(preemptor.account).path()[1:]
        return bool(path) and all(request.get(d) <= q.idle.get(d) for q in path for d in dims)

    def _borrowers(self, preemptor: JobInfo, dims: set[str]) -> Iterator[JobInfo]:
        quota = self.session.quota
        line = quota.get(preemptor.account)
        for job in self.session.jobs.values():
            if not self.takeable(job, preemptor):
                continue
            queue = quota.get(job.account)
            if _related(queue, line) or not any(
                    queue.usage.get(d) > queue.min.get(d) for d in dims):
                continue
            yield job


def _related(queue: QueueState, other: QueueState) -> bool:
    """One is the other or an ancestor of it."""
    return queue in other.path() or other in queue.path()
