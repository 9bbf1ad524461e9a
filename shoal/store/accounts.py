"""Users and their bearer tokens: who may call the API, and as whom.

Tokens are stored only as their sha256 digest. A token is a user's, or a *job's*: issued by
the control plane for the tasks of one running job (`SHOAL_TOKEN` in their environment), it
acts as the job's user without admin rights, may also manage the job's own virtual cluster
(seed 003's sub-clusters), and is revoked when the job ends (`revoke_job_tokens`).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlalchemy import bindparam, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from shoal.api import JobState
from shoal.store.audit import AuditNote
from shoal.store.cache import ReadThroughCache
from shoal.store.driver_writes import execute_many
from shoal.store.engine import Store
from shoal.store.errors import AlreadyExistsError, NotFoundError
from shoal.store.models import JobRow, TokenRow, UserRow

#: How stale a token's `last_used` may get before a request updates it (seconds).
TOKEN_USE_RESOLUTION = 60.0
#: How long a token's user is remembered; a token revoked by another process works at most
#: this much longer (one revoked through this process stops at once).
TOKEN_CACHE_TTL = 10.0
_ENDED = tuple(s.value for s in JobState if s.terminal)
# The control loop's token writes, built once with their `IN` lists as parameters: each
# launching cycle issues its jobs' tokens and each poll revokes the ended jobs', and
# building a statement (its columns coerced, its cache key) cost more than running it.
_USER_IDS = select(UserRow.name, UserRow.id).where(
    UserRow.name.in_(bindparam("names", expanding=True)))
_INSERT_TOKENS = insert(TokenRow)
_REVOKE_OF = delete(TokenRow).where(TokenRow.job.in_(bindparam("names", expanding=True))) \
    .returning(TokenRow.id)


@dataclass(frozen=True, slots=True)
class User:
    """Who a request comes from. `job`: the request carries a job's token (a task calls);
    then `admin` is False whatever the user's own rights."""

    name: str
    admin: bool = False
    queues: tuple[str, ...] = ()
    job: str | None = None


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Accounts:
    """The users-and-tokens half of `Repository` (which supplies `store` and `clock`)."""

    store: Store
    clock: Callable[[], float]
    _tokens: ReadThroughCache[User | None]

    def _audit(self, s: Session, note: AuditNote | None) -> None:
        raise NotImplementedError

    def create_user(self, name: str, admin: bool = False, queues: Iterable[str] = (),
                    note: AuditNote | None = None) -> User:
        """`note`: the admin change to audit with it (`shoal.store.audit`), if one."""
        user = User(name=name, admin=admin, queues=tuple(queues))
        try:
            with self.store.sessions.begin() as s:
                if s.scalar(select(UserRow.id).where(UserRow.name == name)) is not None:
                    raise AlreadyExistsError(f"user {name!r} exists already")
                s.add(UserRow(name=name, admin=admin, queues=list(user.queues),
                              created=self.clock()))
                self._audit(s, note)
        except IntegrityError:
            raise AlreadyExistsError(f"user {name!r} exists already") from None
        return user

    def get_user(self, name: str) -> User | None:
        with self.store.reads.begin() as s:
            row = s.scalar(select(UserRow).where(UserRow.name == name))
            return None if row is None else _user(row)

    def issue_token(self, user: str, *, job: str | None = None) -> str:
        """A new bearer token for `user` (for the tasks of `job`, if given: see the module's
        docstring): the text is returned once and never stored."""
        token = secrets.token_urlsafe(32)
        with self.store.sessions.begin() as s:
            user_id = s.scalar(select(UserRow.id).where(UserRow.name == user))
            if user_id is None:
                raise NotFoundError(f"no user {user!r}")
            s.add(TokenRow(user_id=user_id, token_hash=hash_token(token), job=job,
                           created=self.clock()))
        self._tokens.invalidate()  # a miss on this token may be cached
        return token

    def issue_job_tokens(self, jobs: Iterable[tuple[str, str]]) -> dict[str, str]:
        """A new token for each (user, job), all in one transaction: job → token text.
        A job whose user does not exist gets none (it is left out)."""
        wanted = {job: user for user, job in jobs}
        if not wanted:
            return {}
        now = self.clock()
        out: dict[str, str] = {}
        with self.store.sessions.begin() as s:
            connection = s.connection()  # Core: the ORM's set-up cost more than the rows
            users = sorted(set(wanted.values()))
            found = connection.execute(_USER_IDS, {"names": users})
            ids = {name: user_id for name, user_id in found}
            rows = []
            for job, user in wanted.items():
                if user in ids:
                    out[job] = secrets.token_urlsafe(32)
                    rows.append({"user_id": ids[user], "token_hash": hash_token(out[job]),
                                 "job": job, "created": now})
            # On SQLite straight on the driver's cursor (`driver_writes`); tokens are no
            # table the job change feed follows.
            execute_many(connection, _INSERT_TOKENS, rows)
        self._tokens.invalidate()
        return out

    def authenticate(self, token: str) -> User | None:
        """The user a bearer token belongs to, or None; cached (see `shoal.store.cache`) for
        up to TOKEN_CACHE_TTL seconds. When a token was last used is recorded at most every
        `TOKEN_USE_RESOLUTION` seconds: a write per request would queue every API call behind
        the store's write lock for a timestamp nobody needs to the second."""
        if not token:
            return None
        digest = hash_token(token)
        return self._tokens.get(digest, lambda: self._authenticate(digest))

    def _authenticate(self, digest: str) -> User | None:
        with self.store.reads.begin() as s:
            found = s.execute(select(TokenRow.id, TokenRow.last_used, TokenRow.job, UserRow)
                              .join(UserRow, UserRow.id == TokenRow.user_id)
                              .where(TokenRow.token_hash == digest)).first()
            if found is None:
                return None
            token_id, last_used, job, user_row = found
            user = _user(user_row, job)
        now = self.clock()
        if last_used is None or now - last_used >= TOKEN_USE_RESOLUTION:
            with self.store.sessions.begin() as s:
                s.execute(update(TokenRow).where(TokenRow.id == token_id)
                          .values(last_used=now))
        return user

    def revoke_token(self, token: str) -> bool:
        with self.store.sessions.begin() as s:
            row = s.scalar(select(TokenRow).where(TokenRow.token_hash == hash_token(token)))
            if row is None:
                return False
            s.delete(row)
        self._tokens.invalidate()
        return True

    def revoke_tokens_of(self, jobs: Iterable[str]) -> int:
        """Revoke the tokens of these jobs' tasks, in one transaction; how many."""
        names = sorted(set(jobs))
        revoked = 0
        if not names:
            return 0
        with self.store.sessions.begin() as s:
            connection = s.connection()
            for first in range(0, len(names), 500):  # under SQLite's bound parameters
                chunk = names[first:first + 500]
                revoked += len(connection.execute(_REVOKE_OF, {"names": chunk}).all())
        self._tokens.invalidate()
        return revoked

    def revoke_job_tokens(self, job: str | None = None) -> int:
        """Revoke the tokens issued for `job`'s tasks; with no job, those of every job that
        has ended or no longer exists (what a control plane that stopped before revoking
        left). Returns how many were revoked."""
        with self.store.sessions.begin() as s:
            if job is not None:
                which = TokenRow.job == job
            else:
                live = select(JobRow.name).where(JobRow.state.not_in(_ENDED))
                which = TokenRow.job.is_not(None) & TokenRow.job.not_in(live)
            revoked = s.scalars(delete(TokenRow).where(which).returning(TokenRow.id)).all()
        self._tokens.invalidate()
        return len(revoked)


def _user(row: UserRow, job: str | None = None) -> User:
    return User(name=row.name, admin=row.admin and job is None, queues=tuple(row.queues),
                job=job)
