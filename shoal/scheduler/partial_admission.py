"""Partial admission (Kueue's PodSet `minCount`): a job that does not fit whole starts with
fewer replicas of a group that allows it, and the rest of that group never runs.

A job with a `min_count` on one of its task groups is *admitted* while none of its tasks has
started (`JobInfo.admits_partially`); a group whose `min_count` is below its replicas is
*reducible*. Its first start is all at once, gang or not:

1. the whole job (every pending task, the elastic surplus aside) in one statement; if that
   fits, it starts whole and nothing is reduced;
2. otherwise its fixed groups whole, then each reducible group as many replicas as fit now,
   at least its `min_count` (and its own `minAvailable`), all in one statement. If one
   falls short, nothing is placed and the job waits.

A partial admission reduces the job for good, as Kueue lowers a Job's parallelism when it
admits it: the group's other replicas are dropped from what the job wants, the job's
replicas become the admitted count (so its `minAvailable` is clipped to what was admitted,
and its completion counts only the admitted tasks), and a `Resize` with
`partial_admission` set tells the drivers, which store the new size.

Only allocation (and backfill, which allocates) admits in part, on capacity that is free.
Preempt and reclaim free room for the job's *least* admission (`gang_choice.least_admission`:
every group's least count, all at once — and a gang's whole gang minimum, as they do not
reduce it), so no start of the job is below its `minCount`; a job they start keeps all its
replicas, the rest placed later as they fit (a gang's as surplus). Enqueue judges a job
feasible by its least admission alone: allocation may start it reduced.
"""

from __future__ import annotations

from dataclasses import replace

from shoal.api.decisions import PendingKind, PendingReason, Resize
from shoal.core.nodes import FitMemo
from shoal.core.statement import Statement
from shoal.scheduler.fitting import place_replicas
from shoal.scheduler.gang_choice import place_up_to
from shoal.scheduler.jobs import JobInfo, reducible
from shoal.scheduler.session import Session


def admit(session: Session, memo: FitMemo, job: JobInfo) -> bool:
    """Start the job whole, or else in part (the module's text); True if it started. When it
    does not, `job.reason` says why."""
    statement = session.statement()
    whole: PendingReason | None = None
    for group in job.groups_with_pending():
        whole = place_replicas(session, memo, statement, job, group,
                               list(job.pending[group.name]))
        if whole is not None:
            break
    if whole is None:
        statement.commit()
        return True
    statement.discard()
    if not any(reducible(g) for g in job.groups_with_pending()):
        job.reason = whole  # minCount is all its replicas: whole or not at all
        return False
    statement = session.statement()
    admitted = _place_in_part(session, statement, job)
    if admitted is None:
        statement.discard()
        job.reason = _short_reason(job, whole)
        return False
    _reduce(session, job, admitted)
    statement.commit()
    return True


def _place_in_part(session: Session, statement: Statement, job: JobInfo
                   ) -> dict[str, int] | None:
    """Place the fixed groups whole, then as many of each reducible group as fit (at least
    its least admitted count); how many of each reducible group, or None if one fell short.
    Fixed groups go first: a reducible group placed before them could take the room they
    need in full. No fit bound is learned here: the statement is tentative throughout."""
    trial = FitMemo(session.cluster)
    groups = job.groups_with_pending()
    for group in groups:
        if not reducible(group) and place_replicas(
                session, trial, statement, job, group, list(job.pending[group.name])):
            return None
    admitted: dict[str, int] = {}
    for group in groups:
        if reducible(group):
            placed = place_up_to(session, trial, statement, job, group,
                                 list(job.pending[group.name]))
            if placed < job.least_admitted(group):
                return None
            admitted[group.name] = placed
    return admitted


def _reduce(session: Session, job: JobInfo, admitted: dict[str, int]) -> None:
    """The job now has `admitted` replicas of each reducible group, for good: the others are
    no longer wanted, its `Job` says the new size, and a `Resize` tells the drivers."""
    sizes = {g.name: admitted.get(g.name, g.replicas) for g in job.job.groups}
    for group in job.job.groups:
        size = sizes[group.name]
        if size < group.replicas:
            job.pending.pop(group.name, None)  # the placed ones were already taken
            session.decisions.resizes.append(Resize(
                job.name, group.name, size,
                f"partially admitted: {size} of {group.replicas} replicas fit "
                f"(minCount {group.min_count})", partial_admission=True))
    job.job = replace(job.job, groups=tuple(replace(g, replicas=sizes[g.name])
                                            for g in job.job.groups))
    job.note_change()
    job.gang_minimum = job.job.gang_minimum


def _short_reason(job: JobInfo, whole: PendingReason) -> PendingReason:
    """Why a job admissible in part waits: it fits neither whole nor at its least."""
    least = ", ".join(f"{job.least_admitted(g)} of {g.name}"
                      for g in job.job.groups if reducible(g))
    kind = PendingKind.GANG if whole.kind is PendingKind.INSUFFICIENT_RESOURCES \
        and job.job.gang else whole.kind
    return PendingReason(
        kind, f"cannot start whole, nor partially admitted (at least {least}, minCount): "
              f"{whole.message}",
        resource=whole.resource, queue=whole.queue, predicate=whole.predicate)
