"""Two models of one 8-CPU node driven in step for the reasons-report tests: a kept model
that reports its reasons as changes to a ledger, and one that judges every job afresh,
whose `close` the ledger must then equal after every cycle."""

from __future__ import annotations

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup, VirtualCluster
from shoal.scheduler import Profile
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.reason_report import ReasonChanges, ReasonLedger
from shoal.scheduler.session import Hooks, Session


def job(name: str, at: float, cpus: int = 3) -> Job:
    return Job(name, (TaskGroup("w", 1, Resources.of(cpu=1_000 * cpus, memory=1_000)),),
               queue="a", scheduler_name=SchedulerName.SHOAL, submitted=at)


def models(jobs: int) -> tuple[SchedulerModel, SchedulerModel]:
    """A kept model and one that judges every job afresh: one 8-CPU node, `jobs` jobs of 3
    CPUs, submitted in name order."""
    nodes = [Node("n0", Resources.of(cpu=8_000, memory=64_000))]
    kept, fresh = (SchedulerModel(nodes, [VirtualCluster("a")]) for _ in range(2))
    fresh.incremental = False
    for model in (kept, fresh):
        model.add_jobs([job(f"j{i:03d}", float(i)) for i in range(jobs)])
    return kept, fresh


def cycle(profile: Profile, hooks: Hooks, kept: SchedulerModel, fresh: SchedulerModel,
          ledger: ReasonLedger) -> tuple[ReasonChanges, Session]:
    """One cycle on each, with the same `hooks` (the profile's plugins) every cycle, as a
    driver keeps them: the kept one reports to the ledger, which must then hold what the
    fresh one's `close` gives; the changes, and the reporting session."""
    reporting = Session(kept, hooks)  # one session at a time: plugins open per session
    for action in profile.actions():
        action.execute(reporting)
    changes = reporting.report(ledger)
    ledger.apply(changes)
    closing = Session(fresh, hooks)
    for action in profile.actions():
        action.execute(closing)
    assert ledger.reasons() == closing.close().pending_by_job()
    return changes, reporting
