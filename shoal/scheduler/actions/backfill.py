"""The backfill action: let jobs behind a blocked head of a strictly ordered virtual cluster
run, when doing so cannot delay the head.

Slurm's backfill needs every job's time limit to prove it delays nobody. Shoal cannot assume
runtimes are known, so it uses the guarantee that needs none: a job behind the head may start
only on nodes outside every node pool the head could use, and, when the head is held back by
a quota limit, only if it asks for none of the resource that limit is short of. Such a job
takes nothing the head could ever have had. (Reservation-based EASY backfill, which uses
runtime estimates, belongs to profiles that have them — the simulator's.)

Without `allocate.strict`, no job is ever blocked and this action has nothing to do.
"""

from __future__ import annotations

from shoal.api.decisions import PendingKind
from shoal.core.nodes import FitMemo
from shoal.scheduler.actions.allocate import allocate_job
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.registry import Arguments
from shoal.scheduler.session import Session


class BackfillArguments(Arguments):
    pass


class Backfill:
    name = "backfill"

    def __init__(self, arguments: BackfillArguments) -> None:
        self.arguments = arguments

    def execute(self, session: Session) -> None:
        for head, *behind in session.blocked.values():
            self._backfill_behind(session, head, behind)

    def _backfill_behind(self, session: Session, head: JobInfo, behind: list[JobInfo]) -> None:
        excluded: set[int] = set()
        for group in head.groups_with_pending():
            excluded.update(s.ordinal for s in session.pool_for(group).nodes)
        short = head.reason.resource if head.reason is not None and head.reason.kind in (
            PendingKind.QUEUE_LIMIT, PendingKind.GUARANTEE) else None
        session.excluded_nodes = excluded
        # A private memo: bounds learnt with nodes excluded would be wrong without them.
        memo = FitMemo(session.cluster)
        try:
            for job in behind:
                if short is not None and any(
                        g.resources.get(short) > 0 for g in job.groups_with_pending()):
                    continue
                blocked_reason = job.reason
                job.reason = None
                if not allocate_job(session, memo, job) and job.holding == 0:
                    job.reason = blocked_reason
        finally:
            session.excluded_nodes = set()
