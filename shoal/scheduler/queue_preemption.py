"""Whom a waiting job may evict, as its virtual cluster decides (issue 16; Kueue's
ClusterQueue `preemption`). The preempt and reclaim actions ask this module; the policy is
always the PREEMPTOR's virtual cluster's (its `queue`), as in Kueue, never the victim's.

- `withinQueue` (the preempt action: victims in the preemptor's own virtual cluster):
  `Never` — none; `LowerPriority` (default) — jobs that rank strictly behind it (priority,
  then the order plugins: Shoal's behaviour before the field existed);
  `LowerOrNewerEqualPriority` — also jobs of equal priority (Kueue's words) that rank level
  with it and were submitted after it (later `(submitted, name)`). In a `fifo` queue, where
  priority orders nothing, every job ranks level: there it takes newer jobs of its own
  priority, never one of a higher priority. Nothing churns: the evicted job is newer than
  the one that took its place, so it can never take it back.
- `reclaimWithinParent` (the reclaim action, for a job *entitled* to its guarantee, i.e.
  one that does not borrow): `Never` — it takes nothing back, it waits; `LowerPriority` —
  only from borrowers of lower priority than its own; `Any` (default) — from any borrower.
- `borrowWithinParent` (the reclaim action, for a job that would have to *borrow* — go above
  what it is owed — to start; before it such a job reclaimed nothing): `LowerPriority` —
  it may evict jobs of lower priority than its own, and at most `maxPriorityThreshold`
  when that is set, from the same borrowing virtual clusters reclaim takes from (outside
  its line, above their own guarantee at every level below the one they share with it),
  and only what they borrowed. `Never` (default) — it waits.
- *A preemptor stays within its own quota* (Kueue refuses "preempt then borrow"): once a
  waiting job evicts its queue-mates, it is placed as if the profile lent nothing — in the
  quota tree's words, `check(lend=False)`: it may go above its guarantee only into capacity
  nobody is owed, never into another subtree's unused guarantee, which that subtree's
  reclaim would take back at once (and the queue-mates it evicted would have died for
  nothing). A job that fits without any eviction is placed as the profile allows, lending
  included; and when its virtual cluster's `borrowWithinParent` is `LowerPriority` it may
  preempt and then borrow (Kueue's "preemption while borrowing").

The profile's settings still bound all of this: the reclaim action does nothing without the
capacity plugin's `reclaim` or `elastic` mode, and under `elastic` it takes elastic surplus
only; a queue's policy only narrows what the profile allows — `borrowWithinParent` widens
reclaim to borrowing preemptors, but only where the profile reclaims at all.

Pure: policies are looked up in the scheduler model, built from the virtual clusters' specs.
"""

from __future__ import annotations

from shoal.api.queue_policy import BorrowPolicy, QueuePreemption, ReclaimWithinParent, WithinQueue
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.session import Session


def policy_of(session: Session, job: JobInfo) -> QueuePreemption:
    """The preemption policy of the virtual cluster the job waits in (defaults for `root`
    and for virtual clusters created by jobs, which declare none)."""
    return session.quota.get(job.queue).preemption


def within_queue_victim(policy: QueuePreemption, preemptor: JobInfo, victim: JobInfo,
                        behind: bool, level: bool) -> bool:
    """Whether `victim`, a job of the preemptor's own virtual cluster, may be preempted for
    it. `behind`: the victim ranks strictly behind the preemptor (the preempt action's rank);
    `level`: the two rank the same (then the priorities must be equal too)."""
    within = policy.within_queue
    if within is WithinQueue.NEVER:
        return False
    if behind:
        return True
    return within is WithinQueue.LOWER_OR_NEWER_EQUAL_PRIORITY and level \
        and victim.priority == preemptor.priority \
        and (victim.job.submitted, victim.name) > (preemptor.job.submitted, preemptor.name)


def newer_equal_allowed(policy: QueuePreemption) -> bool:
    """Whether jobs that do not rank behind the preemptor may still be its victims."""
    return policy.within_queue is WithinQueue.LOWER_OR_NEWER_EQUAL_PRIORITY


def may_borrow_after_preempting(policy: QueuePreemption) -> bool:
    """Whether a job that evicts its queue-mates may then run on lent capacity (another
    subtree's unused guarantee): only under `borrowWithinParent: LowerPriority`."""
    return policy.borrow_within_parent.policy is BorrowPolicy.LOWER_PRIORITY


def reclaims(policy: QueuePreemption, entitled: bool) -> bool:
    """Whether the reclaim action looks for victims at all for a job of this policy:
    `entitled` — it stays within what it is owed (`reclaimWithinParent`), else it would
    borrow (`borrowWithinParent`)."""
    if entitled:
        return policy.reclaim_within_parent is not ReclaimWithinParent.NEVER
    return policy.borrow_within_parent.policy is not BorrowPolicy.NEVER


def reclaim_victim(policy: QueuePreemption, preemptor: JobInfo, victim: JobInfo,
                   entitled: bool) -> bool:
    """Whether `victim`, a job of a borrowing virtual cluster outside the preemptor's line,
    may give up what it borrowed for the preemptor."""
    if entitled:
        reclaim = policy.reclaim_within_parent
        return reclaim is ReclaimWithinParent.ANY or (
            reclaim is ReclaimWithinParent.LOWER_PRIORITY
            and victim.priority < preemptor.priority)
    borrow = policy.borrow_within_parent
    threshold = borrow.max_priority_threshold
    return borrow.policy is BorrowPolicy.LOWER_PRIORITY \
        and victim.priority < preemptor.priority \
        and (threshold is None or victim.priority <= threshold)
