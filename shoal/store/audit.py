"""The audit log: every admin change — who made it, when, what, on what, a short detail —
as the store keeps it (`audit_log`), and how `GET /api/v1/audit` reads it, newest first.

A change is written by `AuditLog._audit` in the transaction of the change itself wherever
the store makes the change (`shoal.store.admin`), so a change is never stored without its
entry, nor an entry without its change. Actions are dotted `<kind>.<verb>` (`node.drain`,
`user.token.revoke`, …); the control loop's own follow-ups are written as actor `shoal`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from shoal.store.engine import Store
from shoal.store.models import HISTORY_SUFFIX, NAME, AuditRow

#: The longest detail stored (a change's summary, not its document).
DETAIL_CHARS = 1000
#: The actor of what the control loop does on its own after an admin asked for it.
SYSTEM_ACTOR = "shoal"


@dataclass(frozen=True, slots=True)
class AuditNote:
    """One change to record: `actor` did `action` (`vc.delete`) on `target`."""

    actor: str
    action: str
    target: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One recorded change; `id` orders them (and pages them: `after`)."""

    id: int
    at: float
    actor: str
    action: str
    target: str
    detail: str


class AuditLog:
    """The audit half of `Repository` (which supplies `store` and `clock`)."""

    store: Store
    clock: Callable[[], float]

    def _audit(self, s: Session, note: AuditNote | None) -> None:
        """Record `note` in transaction `s` (nothing for None: a change nobody asked for)."""
        if note is not None:
            s.add(AuditRow(at=self.clock(), actor=note.actor[:NAME], action=note.action[:64],
                           target=note.target[:NAME + HISTORY_SUFFIX],
                           detail=note.detail[:DETAIL_CHARS]))

    def record_audit(self, note: AuditNote) -> None:
        """Record a change made in a transaction of its own."""
        with self.store.sessions.begin() as s:
            self._audit(s, note)

    def audit_entries(self, limit: int, *, before: int | None = None,
                      actor: str | None = None, action: str | None = None
                      ) -> list[AuditEntry]:
        """At most `limit` entries, newest first, older than entry `before` if given, of
        `actor` and of `action` (exact, or every action under a prefix ending in `.`)."""
        query = select(AuditRow)
        if before is not None:
            query = query.where(AuditRow.id < before)
        if actor is not None:
            query = query.where(AuditRow.actor == actor)
        if action is not None:
            query = query.where(AuditRow.action.startswith(action, autoescape=True)
                                if action.endswith(".") else AuditRow.action == action)
        with self.store.reads.begin() as s:
            return [AuditEntry(r.id, r.at, r.actor, r.action, r.target, r.detail)
                    for r in s.scalars(query.order_by(AuditRow.id.desc()).limit(limit))]
