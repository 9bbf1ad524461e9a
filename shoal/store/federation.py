"""The durable half of the multi-cluster dispatcher (issue 19): multi-cluster jobs, their
copies on each member and their sealed secrets, as `shoal.federation.dispatcher` stores them
*before* acting — a copy's intent before its submission, a cancel before it is issued — so
that a restarted dispatcher finds every copy it may have sent and every cancel it owes.

`FederationRecords` reads and writes the `mc_*` tables; `McJob` and `McCopy` are what it
hands back. Every write is one transaction; times are arguments (the dispatcher's clock).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from shoal.api.federation import CopyState, DispatchPolicy
from shoal.store.engine import Store
from shoal.store.errors import AlreadyExistsError, NotFoundError
from shoal.store.models import MultiClusterCopyRow, MultiClusterJobRow, MultiClusterSecretRow

MAX_REASON = 1000
"""The most of a reason or an error stored (an answer never grows with a member's text)."""
ACTIVE_STATES = (CopyState.WAITING.value, CopyState.RUNNING.value)


class Verdict(StrEnum):
    KEPT = "kept"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class McCopy:
    """One copy of a job on one member in one dispatch round, as stored."""

    job: str
    round: int
    alias: str
    name: str
    remote_id: str | None
    state: CopyState
    member_state: str
    lost: bool
    intended_at: float
    submitted_at: float | None
    running_since: float | None
    ended_at: float | None
    verdict: Verdict | None
    verdict_reason: str
    cancel_requested_at: float | None
    cancels_issued: int
    last_error: str

    @property
    def live(self) -> bool:
        """Not seen final: it may hold resources on its member."""
        return not self.state.is_final


@dataclass(frozen=True, slots=True)
class McJob:
    """A multi-cluster job as stored, with its copies (every round, in order)."""

    name: str
    owner: str
    document: str
    policy: DispatchPolicy
    guard_time_s: float
    time_scale_s: float
    retries: int
    round: int
    state: CopyState
    kept: str | None
    reason: str
    submitted: float
    updated: float
    ended: float | None
    stop_requested: bool
    copies: tuple[McCopy, ...] = ()

    def copy(self, round_: int, alias: str) -> McCopy | None:
        return next((c for c in self.copies if c.round == round_ and c.alias == alias), None)


@dataclass(frozen=True, slots=True)
class NewMcJob:
    """What a submission stores."""

    name: str
    owner: str
    document: str
    policy: DispatchPolicy
    guard_time_s: float
    time_scale_s: float
    retries: int
    sealed_secrets: str | None
    submitted: float


@dataclass(frozen=True, slots=True)
class Observation:
    """What a member said of a copy at `at`: stored over the copy's last state; its
    running and end times are stamped once, when first seen."""

    state: CopyState
    member_state: str
    at: float
    lost: bool = False
    started_at: float | None = None
    """The member's own start time, where it gives one (not after `at`)."""


@dataclass(frozen=True, slots=True)
class CopyVerdictRecord:
    round: int
    alias: str
    kept: bool
    reason: str


@dataclass(frozen=True, slots=True)
class Decision:
    """The policy's answer as stored before it is acted on."""

    state: CopyState
    kept: str | None
    reason: str
    round: int
    at: float
    verdicts: tuple[CopyVerdictRecord, ...] = ()
    cancels: tuple[tuple[int, str], ...] = ()
    """(round, alias) of every copy to cancel: its `cancel_requested_at` set once."""


def cut_text(text: str) -> str:
    return text if len(text) <= MAX_REASON else text[:MAX_REASON - 1] + "…"


def _copy(row: MultiClusterCopyRow) -> McCopy:
    return McCopy(job=row.job, round=row.round, alias=row.alias, name=row.name,
                  remote_id=row.remote_id, state=CopyState(row.state),
                  member_state=row.member_state, lost=row.lost, intended_at=row.intended_at,
                  submitted_at=row.submitted_at, running_since=row.running_since,
                  ended_at=row.ended_at,
                  verdict=None if row.verdict is None else Verdict(row.verdict),
                  verdict_reason=row.verdict_reason,
                  cancel_requested_at=row.cancel_requested_at,
                  cancels_issued=row.cancels_issued, last_error=row.last_error)


def _job(row: MultiClusterJobRow, copies: list[MultiClusterCopyRow]) -> McJob:
    return McJob(name=row.name, owner=row.owner, document=row.document,
                 policy=DispatchPolicy(row.policy), guard_time_s=row.guard_time_s,
                 time_scale_s=row.time_scale_s, retries=row.retries, round=row.round,
                 state=CopyState(row.state), kept=row.kept, reason=row.reason,
                 submitted=row.submitted, updated=row.updated, ended=row.ended,
                 stop_requested=row.stop_requested,
                 copies=tuple(_copy(c) for c in sorted(copies, key=lambda c: (c.round, c.id))))


class FederationRecords:
    """Multi-cluster jobs in the store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # ---- jobs ---------------------------------------------------------------------------

    def create_job(self, new: NewMcJob) -> McJob:
        """Store a submitted job (WAITING, round 0, no copy yet); `AlreadyExistsError` when
        the name is taken."""
        try:
            with self.store.sessions.begin() as s:
                s.add(MultiClusterJobRow(
                    name=new.name, owner=new.owner, document=new.document,
                    policy=new.policy.value, guard_time_s=new.guard_time_s,
                    time_scale_s=new.time_scale_s, retries=new.retries, round=0,
                    state=CopyState.WAITING.value, kept=None, reason="submitted",
                    submitted=new.submitted, updated=new.submitted, ended=None,
                    stop_requested=False))
                s.flush()
                if new.sealed_secrets is not None:
                    s.add(MultiClusterSecretRow(job=new.name, sealed=new.sealed_secrets))
        except IntegrityError:
            raise AlreadyExistsError(f"multi-cluster job {new.name!r} already exists") from None
        job = self.get_job(new.name)
        assert job is not None
        return job

    def get_job(self, name: str) -> McJob | None:
        with self.store.reads.begin() as s:
            row = s.get(MultiClusterJobRow, name)
            if row is None:
                return None
            return _job(row, self._copies(s, [name]).get(name, []))

    def list_jobs(self, owner: str | None = None, *, active_only: bool = False
                  ) -> list[McJob]:
        """Jobs in submission order: `owner`'s only, when given; `active_only`: those the
        dispatcher still drives (not ended)."""
        with self.store.reads.begin() as s:
            query = select(MultiClusterJobRow).order_by(MultiClusterJobRow.submitted,
                                                        MultiClusterJobRow.name)
            if owner is not None:
                query = query.where(MultiClusterJobRow.owner == owner)
            if active_only:
                query = query.where(MultiClusterJobRow.ended.is_(None))
            rows = list(s.scalars(query))
            copies = self._copies(s, [r.name for r in rows])
            return [_job(r, copies.get(r.name, [])) for r in rows]

    def active_jobs(self) -> list[McJob]:
        return self.list_jobs(active_only=True)

    def sealed_secrets(self, name: str) -> str | None:
        with self.store.reads.begin() as s:
            row = s.get(MultiClusterSecretRow, name)
            return None if row is None else row.sealed

    def request_stop(self, name: str, at: float) -> McJob:
        with self.store.sessions.begin() as s:
            row = s.get(MultiClusterJobRow, name)
            if row is None:
                raise NotFoundError(f"no multi-cluster job {name!r}")
            if not row.stop_requested and row.ended is None:
                row.stop_requested = True
                row.updated = at
        job = self.get_job(name)
        assert job is not None
        return job

    def record_decision(self, name: str, decision: Decision) -> None:
        """Store the policy's answer — the job's state, its kept member, every verdict and
        every cancel asked for — in one transaction, before any of it is acted on. A cancel
        once asked for stays asked for; the job ends once its state is final and no copy
        of it is live."""
        with self.store.sessions.begin() as s:
            row = s.get(MultiClusterJobRow, name, with_for_update=True)
            if row is None:
                raise NotFoundError(f"no multi-cluster job {name!r}")
            copies = {(c.round, c.alias): c for c in self._copies(s, [name]).get(name, [])}
            for v in decision.verdicts:
                copy = copies.get((v.round, v.alias))
                if copy is not None:
                    copy.verdict = (Verdict.KEPT if v.kept else Verdict.CANCELLED).value
                    copy.verdict_reason = cut_text(v.reason)
            for key in decision.cancels:
                copy = copies.get(key)
                if copy is not None and copy.cancel_requested_at is None:
                    copy.cancel_requested_at = decision.at
            row.state = decision.state.value
            row.kept = decision.kept
            row.reason = cut_text(decision.reason)
            row.round = max(row.round, decision.round)
            row.updated = decision.at
            if decision.state.is_final and all(CopyState(c.state).is_final
                                               for c in copies.values()):
                row.ended = decision.at

    # ---- copies -------------------------------------------------------------------------

    def add_intent(self, job: str, round_: int, alias: str, name: str, at: float) -> McCopy:
        """Store that a copy is about to be submitted (no remote id yet); an intent already
        stored for (job, round, alias) is returned as it is."""
        with self.store.sessions.begin() as s:
            row = self._copy_row(s, job, round_, alias)
            if row is None:
                row = MultiClusterCopyRow(
                    job=job, round=round_, alias=alias, name=name, remote_id=None,
                    state=CopyState.WAITING.value, member_state="", lost=False,
                    intended_at=at, submitted_at=None, running_since=None, ended_at=None,
                    verdict=None, verdict_reason="", cancel_requested_at=None,
                    cancels_issued=0, last_error="")
                s.add(row)
                s.flush()
            return _copy(row)

    def set_remote_id(self, job: str, round_: int, alias: str, remote_id: str,
                      at: float) -> None:
        with self.store.sessions.begin() as s:
            row = self._copy_row(s, job, round_, alias)
            if row is not None and row.remote_id is None:
                row.remote_id = remote_id
                row.submitted_at = at
                row.last_error = ""

    def observe(self, job: str, round_: int, alias: str, seen: Observation) -> None:
        """Store what the member said: a final state is never undone (a copy seen ended
        stays ended), `running_since` and `ended_at` are stamped once."""
        with self.store.sessions.begin() as s:
            row = self._copy_row(s, job, round_, alias)
            if row is None or CopyState(row.state).is_final:
                return
            row.member_state = seen.member_state[:64]
            row.last_error = ""
            if seen.state in (CopyState.RUNNING, CopyState.SUCCEEDED) \
                    and row.running_since is None:
                started = seen.started_at
                row.running_since = seen.at if started is None else min(seen.at, started)
            if seen.state.is_final:
                row.ended_at = max(seen.at, row.running_since or seen.at)
                row.lost = seen.lost
            row.state = seen.state.value

    def note_error(self, job: str, round_: int, alias: str, error: str) -> None:
        with self.store.sessions.begin() as s:
            s.execute(update(MultiClusterCopyRow)
                      .where(MultiClusterCopyRow.job == job, MultiClusterCopyRow.round == round_,
                             MultiClusterCopyRow.alias == alias)
                      .values(last_error=cut_text(error)))

    def count_cancel(self, job: str, round_: int, alias: str) -> None:
        """One more cancel issued to the member for this copy."""
        with self.store.sessions.begin() as s:
            row = self._copy_row(s, job, round_, alias)
            if row is not None:
                row.cancels_issued += 1

    # ---- reading ------------------------------------------------------------------------

    @staticmethod
    def _copy_row(s: Session, job: str, round_: int, alias: str
                  ) -> MultiClusterCopyRow | None:
        return s.scalars(select(MultiClusterCopyRow).where(
            MultiClusterCopyRow.job == job, MultiClusterCopyRow.round == round_,
            MultiClusterCopyRow.alias == alias)).one_or_none()

    @staticmethod
    def _copies(s: Session, names: list[str]) -> dict[str, list[MultiClusterCopyRow]]:
        found: dict[str, list[MultiClusterCopyRow]] = {}
        if not names:
            return found
        for start in range(0, len(names), 500):
            chunk = names[start:start + 500]
            for row in s.scalars(select(MultiClusterCopyRow)
                                 .where(MultiClusterCopyRow.job.in_(chunk))):
                found.setdefault(row.job, []).append(row)
        return found
