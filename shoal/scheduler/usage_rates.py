"""What each running task charges the usage ledger per second, kept per job (issue 18): the
drivers charge the ledger (`shoal.core.usage.UsageLedger.charged_rates`) at every instant
something happens, and a charge used to build a `Holding`, a key and two value objects per
running task (the `fairshare` profile spent a third of its replay there).

A job's rates move only with its spec (`JobInfo.job`, replaced when the drivers record what
it attained or admission resizes it), its queue or its user: they are worked out once per
job and group and reused until the job's spec object changes. What a charge reads per task
is then when it started, which it needs as it always did.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field

from shoal.api.flavors import unflavored
from shoal.api.objects import Job
from shoal.core.usage import TaskRate
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.model import user_of


@dataclass(slots=True)
class _JobRates:
    job: Job
    """The spec the rates were read from: a job whose spec object changed is read again."""
    queue: str
    by_group: dict[str, TaskRate | None] = field(default_factory=dict)


class UsageRates:
    """Each job's per-group `TaskRate`, kept from one charge to the next."""

    def __init__(self) -> None:
        self._jobs: dict[str, _JobRates] = {}

    def running(self, jobs: Collection[JobInfo]) -> Iterator[tuple[TaskRate | None, float | None]]:
        """What every running task of `jobs` charges per second, and when it started, in
        the order `SchedulerModel.holdings` lists them (the ledger's sums are added in it)."""
        kept = self._jobs
        for info in jobs:
            running = info.running
            if not running:
                continue
            rates = kept.get(info.job.name)
            if rates is None or rates.job is not info.job or rates.queue != info.queue:
                rates = kept[info.job.name] = _JobRates(info.job, info.queue)
            by_group = rates.by_group
            for task in running:
                group = task.ref.group
                if group in by_group:
                    rate = by_group[group]
                else:
                    rate = by_group[group] = TaskRate.of(
                        info.queue, user_of(info),
                        unflavored(info.job.group(group).resources))
                yield rate, task.started
        if len(kept) > 2 * len(jobs) + 64:
            self._prune(jobs)

    def _prune(self, jobs: Collection[JobInfo]) -> None:
        """Forget the jobs that left: the model's jobs are the ones kept."""
        live = {info.job.name for info in jobs}
        self._jobs = {name: rates for name, rates in self._jobs.items() if name in live}
