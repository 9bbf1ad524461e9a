"""Why a waiting job evicts nothing although it could have (issue 16): the words the preempt
and reclaim actions append to its pending reason.

A job kept from preempting by its priority class (`preemptionPolicy: Never`) or by its
virtual cluster's preemption policy (`withinQueue`, `reclaimWithinParent`,
`borrowWithinParent`: `shoal.scheduler.queue_preemption`) waits for room like any other
job, and allocate's reason says what room it lacks ("… 0 gpu free"). That is true but not
the whole truth when running jobs the action would otherwise have taken stand on that room:
a user then asks why nothing was preempted. So when an action that runs in the profile
finds such *excluded* candidates — victims the most permissive value of the field would
have offered, enough with what is free to cover what the job needs — it notes why it took
none; the session appends the notes to the job's reason when the cycle closes
(`Session.close`). The reason's kind stays (the cause is still lack of room).

Bounded: one note per cause, at most `Session.hold_back`'s two per job, each naming one class or one
virtual cluster.

Pure: the words, and `could_evict`, the test the actions apply before they note anything.
"""

from __future__ import annotations

from dataclasses import replace

from shoal.api.queue_policy import (
    BorrowPolicy,
    BorrowWithinParent,
    QueuePreemption,
    ReclaimWithinParent,
    WithinQueue,
)
from shoal.scheduler.gang_choice import GangNeed, least_gpus
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.session import Session
from shoal.scheduler.victims import VictimUnit


def priority_class_note(priority_class: str) -> str:
    """The job's priority class says `preemptionPolicy: Never`."""
    return f"its priority class {priority_class!r} never preempts (preemptionPolicy: Never)"


def widest_within_queue(policy: QueuePreemption) -> QueuePreemption:
    """What the preempt action would have offered without a restrictive `withinQueue`:
    `Never` compared with Shoal's default, `LowerPriority` (the newer-equal value only
    widens it, and the default is what a queue that says nothing gets)."""
    if policy.within_queue is WithinQueue.NEVER:
        return replace(policy, within_queue=WithinQueue.LOWER_PRIORITY)
    return policy


def widest_reclaim(policy: QueuePreemption, entitled: bool) -> QueuePreemption:
    """What the reclaim action would have offered under the most permissive value of the
    field that governs the job: `reclaimWithinParent: Any` for a job owed its guarantee,
    `borrowWithinParent: LowerPriority` without threshold for one that would borrow."""
    if entitled:
        return replace(policy, reclaim_within_parent=ReclaimWithinParent.ANY)
    return replace(policy, borrow_within_parent=BorrowWithinParent(BorrowPolicy.LOWER_PRIORITY))


def within_queue_note(queue: str, policy: QueuePreemption) -> str | None:
    """Why the preempt action took nothing in the job's own virtual cluster."""
    if policy.within_queue is WithinQueue.NEVER:
        return f"virtual cluster {queue!r} preempts nothing within itself (withinQueue: Never)"
    return None


def reclaim_note(queue: str, policy: QueuePreemption, entitled: bool) -> str | None:
    """Why the reclaim action took nothing from other virtual clusters' borrowers."""
    if entitled:
        reclaim = policy.reclaim_within_parent
        if reclaim is ReclaimWithinParent.NEVER:
            return (f"virtual cluster {queue!r} takes none of its guarantee back "
                    "(reclaimWithinParent: Never)")
        if reclaim is ReclaimWithinParent.LOWER_PRIORITY:
            return (f"virtual cluster {queue!r} takes its guarantee back only from "
                    "lower-priority borrowers (reclaimWithinParent: LowerPriority)")
        return None
    borrow = policy.borrow_within_parent
    if borrow.policy is BorrowPolicy.NEVER:
        return (f"virtual cluster {queue!r} preempts nothing in order to borrow "
                "(borrowWithinParent: Never)")
    if borrow.max_priority_threshold is not None:
        return (f"virtual cluster {queue!r} borrows only ahead of lower-priority borrowers "
                f"of priority at most {borrow.max_priority_threshold} "
                "(borrowWithinParent: LowerPriority)")
    return None


def unit_key(unit: VictimUnit) -> tuple[str, ...]:
    """A unit as its tasks: the same unit listed twice (victim-selection plugins list units
    anew for each preemptor) is one."""
    return tuple(str(t.ref) for t in unit.tasks)


def could_evict(session: Session, preemptor: JobInfo, need: GangNeed, quota_bound: bool,
                offered: list[VictimUnit], excluded: list[VictimUnit]) -> bool:
    """Whether, with the `excluded` units offered too, the action would have gone on to
    evict: one of them frees something the preemptor can use (as the preempt action judges
    it: a task on its node pools, or anything when its quota holds it), and with what is
    free they cover the fewest GPUs any choice of its tasks needs. A necessary condition
    only: the trial placements are not run for a job that will not evict."""
    cluster = session.cluster
    nodes: set[int] = set()
    for group in preemptor.groups_with_pending():
        nodes.update(s.ordinal for s in session.pool_for(group).nodes)

    def on_pools(unit: VictimUnit) -> int:
        return sum(unit.job.job.group(t.ref.group).resources.gpu for t in unit.tasks
                   if cluster.by_name[t.node].ordinal in nodes)

    def helps(unit: VictimUnit) -> bool:
        return quota_bound or any(cluster.by_name[t.node].ordinal in nodes
                                  for t in unit.tasks)

    if not any(helps(u) for u in excluded):
        return False
    free = sum(cluster.states[o].gpu for o in nodes)
    gained = sum(on_pools(u) for u in [*offered, *excluded] if helps(u))
    return free + gained >= least_gpus(preemptor, need)
