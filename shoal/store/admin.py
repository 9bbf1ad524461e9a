"""Admin changes to what exists (issue 21): users updated and deleted, their tokens issued
and revoked, virtual clusters deleted or drained, priority classes replaced and deleted,
nodes cordoned, drained and uncordoned, a job's priority class changed — the half of
`Repository` (a base class of it) that `shoal.server.admin` and the control loop write
through. Each change is checked, made and written to the audit log (`shoal.store.audit`) in
one transaction: what refuses it raises `AdminConflictError` (the API's 409) naming why.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from shoal.api import Job, PriorityClass, VirtualCluster
from shoal.api.queue_policy import QueueStatus
from shoal.store import convert
from shoal.store.accounts import User, _user, hash_token
from shoal.store.audit import SYSTEM_ACTOR, AuditNote
from shoal.store.cache import ReadThroughCache
from shoal.store.engine import Store
from shoal.store.errors import NotFoundError
from shoal.store.job_controls import ControlConflictError
from shoal.store.job_queries import TERMINAL_JOB_STATES
from shoal.store.models import (
    EventRow,
    JobRow,
    NodeRow,
    PriorityClassRow,
    TokenRow,
    UserRow,
    VirtualClusterRow,
)
from shoal.store.nodes import NodeCondition, NodeRecord

#: The event a job's history gets when an admin changes its priority class.
PRIORITY_CHANGED = "PriorityChanged"
#: How many jobs a refusal names before it says how many more there are.
NAMED_JOBS = 5


class AdminConflictError(ControlConflictError):
    """A change what exists now does not allow (the API's 409); the message says why. A
    control conflict: the control loop's `_ask` hands it back to the API as it is."""


class AdminChanges:
    """`Repository` supplies the store, the clock, the caches and `_audit`."""

    store: Store
    clock: Callable[[], float]
    _catalog: ReadThroughCache[tuple[Any, ...]]
    _tokens: ReadThroughCache[User | None]

    def _audit(self, s: Session, note: AuditNote | None) -> None:
        raise NotImplementedError

    # ---- users ---------------------------------------------------------------------------

    def list_users(self) -> list[User]:
        with self.store.reads.begin() as s:
            return [_user(r) for r in s.scalars(select(UserRow).order_by(UserRow.name))]

    def update_user(self, name: str, note: AuditNote, *, admin: bool | None = None,
                    queues: Iterable[str] | None = None) -> User:
        """Change a user's admin flag and/or queues; what is not given stays."""
        with self.store.sessions.begin() as s:
            row = self._user_row(s, name)
            if admin is not None:
                row.admin = admin
            if queues is not None:
                row.queues = list(queues)
            self._audit(s, note)
            s.flush()
            user = _user(row)
        self._tokens.invalidate()  # the rights cached with its tokens changed
        return user

    def delete_user(self, name: str, note: AuditNote) -> int:
        """Delete a user and revoke every token of theirs (their jobs' tokens too); their
        jobs are kept. How many tokens were revoked."""
        with self.store.sessions.begin() as s:
            row = self._user_row(s, name)
            revoked = len(s.scalars(delete(TokenRow).where(TokenRow.user_id == row.id)
                                    .returning(TokenRow.id)).all())
            s.delete(row)
            self._audit(s, note)
        self._tokens.invalidate()
        return revoked

    def issue_user_token(self, name: str, note: AuditNote) -> str:
        """A new token for user `name` (the text is returned once, never stored)."""
        token = secrets.token_urlsafe(32)
        with self.store.sessions.begin() as s:
            row = self._user_row(s, name)
            s.add(TokenRow(user_id=row.id, token_hash=hash_token(token), job=None,
                           created=self.clock()))
            self._audit(s, note)
        self._tokens.invalidate()
        return token

    def revoke_user_tokens(self, name: str, note: AuditNote) -> int:
        """Revoke the user's own tokens (not those of their jobs' tasks, which end with
        their jobs): a request with one gets 401 from now on. How many."""
        with self.store.sessions.begin() as s:
            row = self._user_row(s, name)
            revoked = len(s.scalars(delete(TokenRow).where(
                TokenRow.user_id == row.id, TokenRow.job.is_(None)).returning(TokenRow.id)
            ).all())
            self._audit(s, note)
        self._tokens.invalidate()
        return revoked

    @staticmethod
    def _user_row(s: Session, name: str) -> UserRow:
        row = s.scalar(select(UserRow).where(UserRow.name == name))
        if row is None:
            raise NotFoundError(f"no user {name!r}")
        return row

    # ---- virtual clusters ----------------------------------------------------------------

    def delete_virtual_cluster(self, name: str, note: AuditNote) -> None:
        """Delete a stored virtual cluster that holds nothing: refused while child clusters
        or jobs not ended are in it."""
        with self.store.sessions.begin() as s:
            row = self._vc_row(s, name)
            reason = _in_use(s, name)
            if reason:
                raise AdminConflictError(
                    f"virtual cluster {name!r} cannot be deleted: {reason}; delete with "
                    "drain=true (`shoal vc delete --drain`) to close it and delete it once "
                    "its jobs have ended")
            s.delete(row)
            self._audit(s, note)
        self._catalog.invalidate()

    def drain_virtual_cluster(self, name: str, note: AuditNote) -> VirtualCluster:
        """Close a virtual cluster and mark it to be deleted once its last job has ended
        (`delete_drained_virtual_clusters`). Refused while it has child clusters."""
        with self.store.sessions.begin() as s:
            row = self._vc_row(s, name)
            children = _children(s, name)
            if children:
                raise AdminConflictError(
                    f"virtual cluster {name!r} has child clusters ({', '.join(children)}): "
                    "delete them first")
            row.state = QueueStatus.CLOSED.value
            row.deleting = True
            self._audit(s, note)
            s.flush()
            vc = convert.vc_from_row(row)
        self._catalog.invalidate()
        return vc

    def delete_drained_virtual_clusters(self) -> list[str]:
        """Delete the virtual clusters marked to be deleted that hold no job not ended any
        more (the control loop asks); their names."""
        done: list[str] = []
        with self.store.sessions.begin() as s:
            for row in s.scalars(select(VirtualClusterRow).where(
                    VirtualClusterRow.deleting.is_(True)).order_by(VirtualClusterRow.name)):
                if not _in_use(s, row.name):
                    s.delete(row)
                    self._audit(s, AuditNote(SYSTEM_ACTOR, "vc.delete", row.name,
                                             "drained: its last job has ended"))
                    done.append(row.name)
        if done:
            self._catalog.invalidate()
        return done

    def deleting_virtual_clusters(self) -> set[str]:
        with self.store.reads.begin() as s:
            return set(s.scalars(select(VirtualClusterRow.name).where(
                VirtualClusterRow.deleting.is_(True))))

    @staticmethod
    def _vc_row(s: Session, name: str) -> VirtualClusterRow:
        row = s.get(VirtualClusterRow, name)
        if row is None:
            raise NotFoundError(f"no stored virtual cluster {name!r}")
        return row

    # ---- priority classes ----------------------------------------------------------------

    def replace_priority_class(self, pc: PriorityClass, note: AuditNote) -> None:
        with self.store.sessions.begin() as s:
            row = s.get(PriorityClassRow, pc.name)
            if row is None:
                raise NotFoundError(f"no stored priority class {pc.name!r}")
            s.add(convert.priority_class_to_row(pc, row))
            self._audit(s, note)
        self._catalog.invalidate()

    def delete_priority_class(self, name: str, note: AuditNote) -> None:
        """Refused while jobs that have not ended use it."""
        with self.store.sessions.begin() as s:
            row = s.get(PriorityClassRow, name)
            if row is None:
                raise NotFoundError(f"no stored priority class {name!r}")
            users = _live_jobs(s, JobRow.priority_class == name)
            if users:
                raise AdminConflictError(
                    f"priority class {name!r} is used by jobs not ended: {users}")
            s.delete(row)
            self._audit(s, note)
        self._catalog.invalidate()

    # ---- jobs ----------------------------------------------------------------------------

    def set_job_priority(self, name: str, priority_class: str | None, note: AuditNote
                         ) -> Job:
        """Give a job that has not ended another priority class (None: the default one),
        with an event in its history naming who asked."""
        with self.store.sessions.begin() as s:
            row = s.scalar(select(JobRow).where(JobRow.name == name).with_for_update())
            if row is None:
                raise NotFoundError(f"no job {name!r}")
            if row.state in TERMINAL_JOB_STATES:
                raise AdminConflictError(f"job {name!r} has already ended: {row.state}")
            before = row.priority_class
            row.priority_class = priority_class
            row.updated = self.clock()
            s.add(EventRow(job_id=row.id, time=self.clock(), kind=PRIORITY_CHANGED,
                           cause=f"priority class {before or 'default'} -> "
                                 f"{priority_class or 'default'} by {note.actor}"))
            self._audit(s, note)
            s.flush()
            return convert.job_from_row(row, with_tasks=False)

    # ---- nodes ---------------------------------------------------------------------------

    def set_node_service(self, name: str, note: AuditNote | None, *, cordoned: bool,
                         draining: bool = False) -> NodeRecord:
        """Cordon a node (`cordoned`; `draining`: its tasks are to be evicted too) or
        uncordon it (which ends a drain)."""
        with self.store.sessions.begin() as s:
            row = s.get(NodeRow, name)
            if row is None:
                raise NotFoundError(f"no node {name!r}")
            row.schedulable = not cordoned
            row.draining = cordoned and (draining or row.draining)
            self._audit(s, note)
            s.flush()
            record = NodeRecord(convert.node_from_row(row),
                                NodeCondition(row.ready, row.reason), row.draining)
        self._catalog.invalidate()
        return record

    def draining_nodes(self) -> list[str]:
        with self.store.reads.begin() as s:
            return list(s.scalars(select(NodeRow.name).where(NodeRow.draining.is_(True))
                                  .order_by(NodeRow.name)))

    def node_drained(self, name: str) -> None:
        """The drain of node `name` is over: nothing of it is left to evict."""
        with self.store.sessions.begin() as s:
            s.execute(update(NodeRow).where(NodeRow.name == name).values(draining=False))
        self._catalog.invalidate()


def _children(s: Session, name: str) -> list[str]:
    return list(s.scalars(select(VirtualClusterRow.name).where(
        VirtualClusterRow.parent == name).order_by(VirtualClusterRow.name)))


def _live_jobs(s: Session, which: Any) -> str:
    """The jobs not ended that `which` selects, named (a few) and counted; empty: none."""
    live = JobRow.state.not_in(TERMINAL_JOB_STATES)
    count = s.scalar(select(func.count()).select_from(JobRow).where(live, which)) or 0
    if not count:
        return ""
    names = list(s.scalars(select(JobRow.name).where(live, which)
                           .order_by(JobRow.submitted, JobRow.name).limit(NAMED_JOBS)))
    more = f" and {count - len(names)} more" if count > len(names) else ""
    return f"{', '.join(names)}{more}"


def _in_use(s: Session, name: str) -> str:
    """Why virtual cluster `name` cannot be deleted now; empty when it can."""
    children = _children(s, name)
    if children:
        return f"it has child clusters ({', '.join(children)})"
    jobs = _live_jobs(s, JobRow.queue == name)
    return f"jobs not ended are in it ({jobs})" if jobs else ""
