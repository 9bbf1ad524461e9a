"""The preempt action: evict running jobs of a virtual cluster so that a waiting job of the
same virtual cluster that ranks ahead of them can start.

Job-level, gang-aware and all-or-nothing (seed 001: "if the preempted tasks cannot meet the
scheduling requirements … preemption will not be performed"). For each job P still not
ready after allocation (holding nothing, or a gang below its minimum; not `Unschedulable`,
not `Blocked` behind the head of a strictly ordered queue), in job order:

- *Candidates* are jobs V of P's virtual cluster (across virtual clusters it would be
  reclaim, another action) that hold tasks placed before this cycle, that every victim-
  selection plugin lets go whole, and that rank strictly behind P. Ranking compares the keys
  of the job-order plugins *except* those that also decide readiness (gang): the gang key
  ranks a job by how far its placement got, which would put every waiting job ahead of every
  running one; and the session's final tie-breaks (submission, name) are left out too, so
  equal keys never preempt each other. Candidates are taken worst first (reverse rank; ties:
  the most recently started first), and only those that free something P can use: a task on
  a node of P's node pools, or — when P's virtual cluster is at a quota limit — anything.
- In one statement, whole victims are evicted one at a time (every task each holds). Once
  the free GPUs of P's pools could cover the gang's demand, and every task group could fit
  node by node, P's missing tasks (`min_tasks`, as allocate takes them) are placed in the
  same statement. If P fits, victims that turn out not to be needed are spared (tried best
  ranked first), and the statement is committed; if P does not fit even with every
  candidate evicted, nothing is evicted.

A committed statement becomes `Evict` and `Bind` decisions through the session's ledger, and
the model requeues the victims' tasks (they are waiting again, pending). A victim is not
placed again, nor used as a preemptor, in the same cycle; a job placed in this cycle is never
a victim. Trial placements use a private `FitMemo`: evictions release capacity, so the
cycle's bounds do not describe them.

This module owns the action and its arguments. Drivers own what an eviction costs the victim
(lost work, its attained service carried into its next run).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import Field

from shoal.api.decisions import PendingKind, PendingReason
from shoal.api.lifecycle import TaskState
from shoal.api.objects import TaskGroup
from shoal.api.resources import total
from shoal.core.nodes import FitMemo
from shoal.core.statement import Statement
from shoal.scheduler.fitting import place_replicas
from shoal.scheduler.framework import JobOrder
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.registry import Arguments
from shoal.scheduler.session import Session

#: A preemptor's reason kinds that rule preemption out: it could never run, or a strictly
#: ordered queue holds it behind its head.
_NOT_PREEMPTING = (PendingKind.UNSCHEDULABLE, PendingKind.BLOCKED)


class PreemptArguments(Arguments):
    max_preemptors: int | None = Field(
        default=None, ge=1,
        description="at most this many jobs start by evicting others per cycle "
                    "(default: no limit)")


class Preempt:
    name = "preempt"

    def __init__(self, arguments: PreemptArguments) -> None:
        self.max_preemptors = arguments.max_preemptors

    def execute(self, session: Session) -> None:
        cycle = _Preemption(session)
        started = 0
        for job in sorted(session.candidates, key=session.job_order_key):
            if self.max_preemptors is not None and started >= self.max_preemptors:
                break
            if cycle.wants(job) and cycle.preempt_for(job):
                started += 1


Wanted = list[tuple[TaskGroup, list[int]]]


class _Preemption:
    """One execution of the action: what it has evicted and placed so far."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.memo = FitMemo(session.cluster)
        self.task_order = session.task_order()
        readiness = {id(p) for p in session.hooks.job_readies}
        self.rank_orders: list[JobOrder] = [
            p for p in session.hooks.job_orders if id(p) not in readiness]
        self.fresh = {b.task.job for b in session.decisions.binds}
        """Jobs placed (wholly or partly) in this cycle: never victims."""
        self.evicted: set[str] = set()
        """Jobs evicted in this cycle: neither placed again nor preemptors."""
        self._ranks: dict[str, tuple[Any, ...]] = {}
        self._running: dict[str, list[JobInfo]] | None = None

    # ---- who ------------------------------------------------------------------------------

    def wants(self, job: JobInfo) -> bool:
        """Whether the job should look for victims: still not ready, could run at all."""
        session = self.session
        if job.name in self.evicted or not job.pending or session.job_ready(job):
            return False
        if job.reason is not None and job.reason.kind in _NOT_PREEMPTING:
            return False
        return session.min_tasks(job) > 0

    def rank(self, job: JobInfo) -> tuple[Any, ...]:
        key = self._ranks.get(job.name)
        if key is None:
            key = ()
            for plugin in self.rank_orders:
                key += plugin.job_order_key(job)
            self._ranks[job.name] = key
        return key

    def running(self, queue: str) -> list[JobInfo]:
        """Jobs of the virtual cluster holding tasks when the action began, worst first."""
        if self._running is None:
            session = self.session
            now = session.now
            by_queue: dict[str, list[tuple[tuple[Any, ...], JobInfo]]] = {}
            for job in session.jobs.values():
                if not job.running or job.name in self.fresh:
                    continue
                latest = max(now if t.started is None else t.started for t in job.running)
                by_queue.setdefault(job.queue, []).append(
                    ((self.rank(job), latest, session.job_order_key(job)), job))
            self._running = {
                q: [job for _, job in sorted(entries, key=lambda e: e[0], reverse=True)]
                for q, entries in by_queue.items()}
        return self._running.get(queue, [])

    def candidates(self, preemptor: JobInfo) -> Iterator[JobInfo]:
        """Victim candidates for the preemptor, worst first."""
        rank = self.rank(preemptor)
        selections = self.session.hooks.victim_selections
        for job in self.running(preemptor.queue):
            if self.rank(job) <= rank:
                break  # the list is worst first: no later job ranks behind the preemptor
            if job is preemptor or not job.running or job.name in self.evicted \
                    or job.name in self.fresh:
                continue
            if any(t.state is TaskState.RELEASING for t in job.running):
                continue  # already stopping: its resources come back without an eviction
            if any(len(s.victims(preemptor, job.running)) != len(job.running)
                   for s in selections):
                continue  # whole jobs only: a job with a protected task is no candidate
            yield job

    # ---- how ------------------------------------------------------------------------------

    def preempt_for(self, preemptor: JobInfo) -> bool:
        """Place the preemptor's missing tasks, evicting candidates if need be; True if it
        evicted anything to do so."""
        session = self.session
        cluster = session.cluster
        wanted = preemptor.first_pending(session.min_tasks(preemptor), self.task_order)
        if not wanted:
            return False
        nodes: set[int] = set()
        for group, _ in wanted:
            pool = session.pool_for(group)
            if not pool.nodes:
                return False
            nodes.update(s.ordinal for s in pool.nodes)
        demand = sum(g.resources.gpu * len(indices) for g, indices in wanted)
        free = sum(cluster.states[o].gpu for o in nodes)

        # Allocation turned the job down; since then only this action's evictions have freed
        # anything. What an earlier preemption freed beyond its need may be enough already.
        if self.evicted and free >= demand and self._could_fit(wanted):
            statement = session.statement()
            if self._place(statement, preemptor, wanted):
                statement.commit()
                self.fresh.add(preemptor.name)
                return False
            statement.discard()

        quota_bound = session.allocatable(
            preemptor.account, total(g.resources.scale(len(ix)) for g, ix in wanted)) is not None
        useful: list[tuple[JobInfo, int]] = []
        for job in self.candidates(preemptor):
            states = [cluster.by_name[t.node] for t in job.running]
            if quota_bound or any(s.ordinal in nodes for s in states):
                gain = sum(job.job.group(t.ref.group).resources.gpu
                           for t, s in zip(job.running, states, strict=True)
                           if s.ordinal in nodes)
                useful.append((job, gain))
        if not useful or free + sum(g for _, g in useful) < demand:
            return False
        gains = {job.name: gain for job, gain in useful}

        chosen: list[JobInfo] = []
        statement = session.statement()
        fits = False
        for job, _ in useful:
            self._evict(statement, job, preemptor)
            chosen.append(job)
            if not self._worth_trying(free, gains, chosen, demand, wanted):
                continue
            if self._place(statement, preemptor, wanted):
                fits = True
                break
            # The failed placement left allocations in the statement: start it again with
            # the evictions only.
            statement.discard()
            statement = session.statement()
            for victim in chosen:
                self._evict(statement, victim, preemptor)
        if not fits:
            statement.discard()
            return False

        if len(chosen) > 1:
            statement.discard()
            chosen = self._spare(preemptor, wanted, free, gains, demand, chosen)
            statement = session.statement()
            for victim in chosen:
                self._evict(statement, victim, preemptor)
            if not self._place(statement, preemptor, wanted):  # pragma: no cover - tried
                statement.discard()
                return False
        statement.commit()
        self.fresh.add(preemptor.name)
        for victim in chosen:
            self.evicted.add(victim.name)
            victim.reason = PendingReason(
                PendingKind.INSUFFICIENT_RESOURCES,
                f"preempted in this cycle by job {preemptor.name!r}, which ranks ahead of it "
                f"in virtual cluster {preemptor.queue!r}", queue=preemptor.queue)
        return True

    def _spare(self, preemptor: JobInfo, wanted: Wanted, free: int, gains: dict[str, int],
               demand: int, chosen: list[JobInfo]) -> list[JobInfo]:
        """Drop the victims the preemptor does not need, trying the best ranked first. The
        last one chosen is needed: without it the others were tried and did not do."""
        keep = list(chosen)
        for spared in reversed(chosen[:-1]):
            trial = [j for j in keep if j is not spared]
            statement = self.session.statement()
            for victim in trial:
                self._evict(statement, victim, preemptor)
            ok = self._worth_trying(free, gains, trial, demand, wanted) and \
                self._place(statement, preemptor, wanted)
            statement.discard()
            if ok:
                keep = trial
        return keep

    def _worth_trying(self, free: int, gains: dict[str, int], victims: list[JobInfo],
                      demand: int, wanted: Wanted) -> bool:
        return free + sum(gains[j.name] for j in victims) >= demand and \
            self._could_fit(wanted)

    def _could_fit(self, wanted: Wanted) -> bool:
        """A necessary condition, node by node: each group's replicas fit its pool's free
        capacity (ignoring the other groups)."""
        session = self.session
        excluded = session.excluded_nodes
        for group, indices in wanted:
            request = group.resources
            if request.is_zero():
                continue
            room = 0
            for state in session.pool_for(group).nodes:
                if state.ordinal not in excluded:
                    room += state.how_many(request)
                    if room >= len(indices):
                        break
            if room < len(indices):
                return False
        return True

    def _place(self, statement: Statement, job: JobInfo, wanted: Wanted) -> bool:
        for group, indices in wanted:
            if place_replicas(self.session, self.memo, statement, job, group,
                              indices) is not None:
                return False
        return True

    def _evict(self, statement: Statement, victim: JobInfo, preemptor: JobInfo) -> None:
        cluster = self.session.cluster
        reason = (f"preempted by job {preemptor.name!r}, which ranks ahead of it in virtual "
                  f"cluster {preemptor.queue!r}")
        for task in victim.running:
            statement.evict(task.ref, victim.account, cluster.by_name[task.node],
                            victim.job.group(task.ref.group).resources, task.gpus, reason)
