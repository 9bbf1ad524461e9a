"""The control plane's decayed usage ledger as the store keeps it (issue 17): one row per
(virtual cluster, user), written whole as the ledger is charged and read back at a restart,
so usage outlives the process — the half of `Repository` (a base class of it) that
`shoal.control.usage_charge` writes. The values mean what `shoal.core.usage` says.
"""

from __future__ import annotations

from sqlalchemy import delete, select

from shoal.core.usage import UsageKey, UsageLedger, Used
from shoal.store.engine import Store
from shoal.store.models import UsageRow


class UsageRecords:
    """The usage half of `Repository` (which supplies `store`)."""

    store: Store

    def load_usage(self, half_life: float) -> UsageLedger:
        """The stored ledger, decaying from now on with `half_life`; an empty one (never
        charged) when nothing is stored. Rows charged at different times (written by an
        older version) are brought to the latest."""
        with self.store.reads.begin() as s:
            rows = list(s.scalars(select(UsageRow)))
        if not rows:
            return UsageLedger(half_life)
        at = max(r.at for r in rows)
        entries = {UsageKey(r.vc, r.user): Used(r.gpu_seconds, r.cpu_seconds, r.memory_seconds)
                   .scaled(UsageLedger(r.half_life, r.at).factor(at)) for r in rows}
        return UsageLedger(half_life, at, entries)

    def record_usage(self, ledger: UsageLedger) -> None:
        """Replace the stored ledger with `ledger`, in one transaction."""
        if ledger.at is None:
            return  # never charged: nothing to keep
        with self.store.sessions.begin() as s:
            s.execute(delete(UsageRow))
            s.add_all(UsageRow(vc=k.vc, user=k.user, gpu_seconds=v.gpu, cpu_seconds=v.cpu,
                               memory_seconds=v.memory, at=ledger.at,
                               half_life=ledger.half_life)
                      for k, v in sorted(ledger.entries.items()))
