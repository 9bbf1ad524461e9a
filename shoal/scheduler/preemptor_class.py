"""Preemptors by class (issue 18): waiting jobs that put the preempt and reclaim actions the
same question get the same answer, so within one execution of an action the question is
asked once per class until the answer could change.

Under backlog thousands of jobs wait, most of a few shapes (Philly: 1, 2, 4, 8 GPUs per task
in 15 virtual clusters), and each one used to look for victims among all running jobs. A
job's *class* is everything about it that its search for victims reads: its virtual cluster
and the one it is charged to, its user (per-user quotas), its priority and priority class,
its rank as the action ranks it, its gang minimum, each pending task group's request,
selector, pool and own minima and which of its tasks wait, its elastic surplus, and the
nodes a starving job's reservation keeps it off. Two jobs of one class that meet the same
cluster, quota tree and victims get the same verdict.

A verdict is remembered only when the search evicted and placed nothing, and only until the
action commits anything (`Generation`: the session's binds, evictions and resizes so far):
then the next job of the class is skipped, with the notes the first one got
(`shoal.scheduler.held_back`) replayed and the quota tree's lending left as the search left
it. Whatever the action cannot vouch for goes uncached: a job holding or having ended
tasks (what it holds enters its gang count and could be a victim of itself), a job with a
job-scoped virtual cluster, profiles with victim-selection or task-order plugins (they
read the job itself), and virtual clusters whose `withinQueue` lets a job evict newer jobs
of its own rank (the answer then depends on its submission time).

Pure and per execution: a class's verdict never outlives the action's execution.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.model import user_of
from shoal.scheduler.session import Session

Generation = tuple[int, int, int]
"""How many binds, evictions and resizes the session has decided: it moves with every
statement an action commits."""


def generation(session: Session) -> Generation:
    decisions = session.decisions
    return (len(decisions.binds), len(decisions.evictions), len(decisions.resizes))


@dataclass(frozen=True, slots=True)
class Verdict:
    """A search that evicted and placed nothing: when, and what it left behind."""

    generation: Generation
    notes: tuple[str, ...]
    """What it noted on the job's reason (`Session.hold_back`), in order."""
    lending: bool
    """The quota tree's lending as the search left it (`Preempt.execute` restores it)."""


def preemptor_class(session: Session, job: JobInfo, rank: tuple[Any, ...],
                    held: frozenset[int]) -> Hashable | None:
    """The job's class for a search ranked `rank` and kept off `held` (a starving job's
    reservation), or None when the search reads something of the job the class does not
    say (the module's text)."""
    if job.running or job.holding or job.ended or job.stopping \
            or job.job.virtual_cluster is not None or job.job.sub_clusters:
        return None
    hooks = session.hooks
    if hooks.victim_selections or hooks.task_orders:
        return None
    groups = tuple(
        (group.name, group.replicas, group.resources,
         tuple(sorted(group.node_selector.items())), group.min_available, group.min_count,
         session.pool_key(group), tuple(job.pending[group.name]))
        for group in job.groups_with_pending())
    spec = job.job
    return (job.queue, job.account, user_of(job), job.priority, spec.priority_class,
            spec.scheduler_name, spec.min_available, spec.min_resources, spec.elastic,
            job.gang_minimum, job.floors, rank, groups, tuple(job.surplus), held)


class PreemptorClasses:
    """The verdicts of one execution of an action, per class."""

    def __init__(self) -> None:
        self._verdicts: dict[Hashable, Verdict] = {}
        self.skipped = 0
        """Searches answered by a verdict (for benchmarks)."""

    def verdict(self, key: Hashable, now: Generation) -> Verdict | None:
        """The class's verdict if nothing was committed since it was given."""
        found = self._verdicts.get(key)
        if found is None or found.generation != now:
            return None
        self.skipped += 1
        return found

    def remember(self, key: Hashable, verdict: Verdict) -> None:
        self._verdicts[key] = verdict
