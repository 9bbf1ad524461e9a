"""The live control plane's decayed usage (issue 17, `shoal.core.usage`): charged for what
runs before every cycle, on the loop's clock, and kept in the store so that a restart goes on
from it (`shoal.store.usage`).

Written at most every `WRITE_INTERVAL` seconds, or at once when a user appears or goes:
nothing is lost in between for tasks that
still run — after a restart they are charged again from the stored ledger's time — only the
last stretch of tasks that ended since the last write. Usage only orders work, so a failed
write is logged and scheduling goes on.
"""

from __future__ import annotations

import logging

from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.plugins.usage import usage_half_life
from shoal.scheduler.profile import Profile
from shoal.scheduler.usage_rates import UsageRates
from shoal.store.usage import UsageRecords

log = logging.getLogger(__name__)

WRITE_INTERVAL = 30.0
"""Seconds between two writes of the ledger to the store."""


class UsageKeeper:
    def __init__(self, repository: UsageRecords, profile: Profile) -> None:
        self.repository = repository
        self.half_life = usage_half_life(profile)
        """The profile's `usage` plugin's `halfLife`, or the default."""
        self._written: float | None = None
        self._rates = UsageRates()

    def restore(self, model: SchedulerModel) -> None:
        """Give a model built at start the stored ledger."""
        model.usage = self.repository.load_usage(self.half_life)

    def carry(self, old: SchedulerModel | None, new: SchedulerModel) -> None:
        """A model rebuilt from the store keeps the ledger of the one it replaces."""
        if old is not None:
            new.usage = old.usage

    def charge(self, model: SchedulerModel) -> None:
        """Charge what runs up to `model.now`; write the ledger when it is due."""
        before = model.usage
        model.usage = model.usage.charged_rates(self._rates.running(model.jobs.values()),
                                                model.now)
        written = self._written
        if written is not None and written <= model.now < written + WRITE_INTERVAL \
                and model.usage.entries.keys() == before.entries.keys():
            return  # nobody new and not due: what runs on is charged again from the store
        try:
            self.repository.record_usage(model.usage)
        except Exception:
            log.exception("cannot record usage in the store; it is kept in memory")
            return
        self._written = model.now
