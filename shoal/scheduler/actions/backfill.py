"""The backfill action: start jobs behind the blocked head of a strictly ordered queue when
doing so does not delay the head.

Two ways to know that, chosen by the `reservation` argument:

- `pools` (default; no runtime estimates needed): a job behind the head may start only on
  nodes outside every node pool the head could use (a node of its pools too small for any
  of its tasks counts as outside), and, when the head is held back by a
  quota limit, only if it asks for none of the resource that limit is short of. It takes
  nothing the head could ever have had.
- `estimates` (EASY backfill, as Slurm's backfill with time limits): from the running
  tasks' expected ends (start + the job's `runtime_estimate`), find the *shadow time* at which
  enough GPUs of the head's pool will be free for it, and the *extra* GPUs it will leave
  then. A job may start now if it fits and either ends before the shadow time or needs no
  more than the extra GPUs (which it then uses up). Counting is in GPUs, the scarce resource,
  over the head's pool as a whole; tasks without an estimate are taken never to end.
  Under strict FIFO over the whole cluster the line is walked by job class, not job by job
  (`shoal.scheduler.actions.easy_walk`): the same tries, in the same order.

Without `allocate.strict`, a job is blocked only behind a starving job's reservation (the
priority plugin's aging, `shoal.scheduler.aging`); with neither, that part has nothing to do.

Then, in every profile that runs it, backfill places the best-effort tasks — of task groups
that request no resources — which allocate leaves alone (as Volcano's backfill does): every
waiting job's, in job order, a gang made only of them as a gang (its minimum in one
statement), the others task by task. They take nothing any job could use but a node's task
slot (`capacity.pods`), which is why they come last. Jobs behind a blocked head are served
too: a best-effort task cannot delay the head except by the last slot of a node with a task
limit. An elastic job whose elastic group is best-effort is grown (or repaired) here, one
allowed size at a time, by the elastic action's rules (`actions.elastic.resize_best_effort`),
not by the elastic action.
"""

from __future__ import annotations

from enum import StrEnum

from shoal.api.decisions import PendingKind
from shoal.api.time_limits import runtime_estimate
from shoal.core.nodes import FitMemo
from shoal.scheduler.actions.allocate import (
    allocate_job,
    head_nodes,
    is_best_effort,
    place_one_by_one,
)
from shoal.scheduler.actions.easy_walk import walk_line, walkable
from shoal.scheduler.actions.elastic import resize_best_effort
from shoal.scheduler.gang_choice import GangNeed, least_gpus
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.partial_admission import admit
from shoal.scheduler.registry import Arguments
from shoal.scheduler.session import Session
from shoal.scheduler.shadow import fresh_shadow


class Reservation(StrEnum):
    POOLS = "pools"
    ESTIMATES = "estimates"


class BackfillArguments(Arguments):
    reservation: Reservation = Reservation.POOLS


class Backfill:
    name = "backfill"

    def __init__(self, arguments: BackfillArguments) -> None:
        self.reservation = arguments.reservation

    def execute(self, session: Session) -> None:
        line = walkable(session) if self.reservation is Reservation.ESTIMATES else None
        if line is not None:
            # Strict FIFO's line, left unwritten, walked by class (`actions.easy_walk`).
            walk_line(session, line, shadow_time(session, line.head))
            place_best_effort(session)
            return
        for head, *behind in session.blocked.values():
            if self.reservation is Reservation.ESTIMATES:
                self._easy(session, head, behind)
            else:
                self._outside_head_pools(session, head, behind)
        place_best_effort(session)

    # ---- pools -------------------------------------------------------------------------------

    def _outside_head_pools(self, session: Session, head: JobInfo, behind: list[JobInfo]
                            ) -> None:
        excluded = head_nodes(session, head)
        short = head.reason.resource if head.reason is not None and head.reason.kind in (
            PendingKind.QUEUE_LIMIT, PendingKind.GUARANTEE) else None
        with session.keeping_off(excluded):
            for job in behind:
                if short is not None and any(
                        g.resources.get(short) > 0 for g in job.groups_with_pending()):
                    continue
                _try(session, session.fit_memo, job)

    # ---- estimates (EASY) --------------------------------------------------------------------

    def _easy(self, session: Session, head: JobInfo, behind: list[JobInfo]) -> None:
        shadow, extra = shadow_time(session, head)
        for job in behind:
            demand = sum(g.resources.gpu * len(job.pending[g.name])
                         for g in job.groups_with_pending())
            estimate = runtime_estimate(job.job)
            ends_in_time = estimate is not None and session.now + estimate <= shadow
            if not ends_in_time and demand > extra:
                continue
            if _try(session, session.fit_memo, job) and not ends_in_time:
                extra -= demand


def place_best_effort(session: Session) -> None:
    """Place the waiting jobs' best-effort tasks (module docstring). A job that gave up tasks
    to preempt or reclaim in this cycle waits for the next, as in allocate."""
    memo = session.fit_memo
    # Without a waiting job that has a best-effort group there is none to place, and the
    # candidates (which a class walk writes out only when read) are not needed.
    some = session.model.waiting.with_best_effort
    jobs = [j for j in (session.candidates if some else []) if j.pending
            and j.name not in session.preempted
            and any(is_best_effort(g) for g in j.groups_with_pending())
            and not _awaits_admission(j)]
    for job in sorted(jobs, key=session.job_order_key):
        if job.admits_partially():
            # Made only of best-effort tasks, its first start is still an admission: whole
            # or in part, every group at least its minCount, in one statement.
            admit(session, memo, job)
            continue
        allocate_job(session, memo, job, best_effort=True)
        if session.is_gang(job) and job.pending and session.job_ready(job):
            place_one_by_one(session, memo, job, best_effort=True)  # its surplus
    resize_best_effort(session)  # elastic jobs whose elastic group is best-effort


def _awaits_admission(job: JobInfo) -> bool:
    """Whether the job's first start is an admission (`JobInfo.admits_partially`) that
    allocate has not made: groups that request resources wait. Its best-effort tasks wait
    with them — started alone, they would start the job below its groups' `minCount`."""
    return job.admits_partially() and not all(
        is_best_effort(g) for g in job.groups_with_pending())


def shadow_time(session: Session, head: JobInfo) -> tuple[float, int]:
    """When the head's pool will have enough free GPUs for the head, and how many GPUs beyond
    its need will be free then (`shoal.scheduler.shadow`: kept between cycles by a model
    that keeps what it can)."""
    need = _head_demand(session, head)
    if session.model.incremental:
        return session.model.shadows.shadow(session, head, need)
    return fresh_shadow(session, head, need)


def _head_demand(session: Session, head: JobInfo) -> int:
    # The fewest GPUs any choice of its missing tasks asks (`shoal.scheduler.gang_choice`).
    need = GangNeed.of(session, head, at_least=1) if session.is_gang(head) else GangNeed(1)
    return least_gpus(head, need)


def _try(session: Session, memo: FitMemo, job: JobInfo) -> bool:
    blocked_reason = job.reason
    job.reason = None
    placed = allocate_job(session, memo, job)
    if not placed and job.holding == 0:
        job.reason = blocked_reason
    return placed
