"""Member clusters declared through the API (issue 19: "declared in a file or through the
API (admins)"): the `mc_clusters` table, read by the super scheduler at every dispatch pass
beside the clusters file's members (`shoal.federation.directory`).

A member's token is stored only sealed (`shoal.store.federation_secrets.SecretBox`, sealed
by the caller): this module never sees it in plain text, and `DeclaredMember`'s repr hides
even the sealed form.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from shoal.api.federation import ClusterKind
from shoal.store.engine import Store
from shoal.store.errors import AlreadyExistsError, NotFoundError
from shoal.store.models import MemberClusterRow


@dataclass(frozen=True, slots=True)
class DeclaredMember:
    """One API-declared member as stored; `sealed_token` is the token sealed, or None."""

    alias: str
    uri: str
    kind: ClusterKind
    gpu_type: str | None
    priority: int
    user: str | None
    sealed_token: str | None = field(repr=False)
    created: float
    updated: float
    updated_by: str


@dataclass(frozen=True, slots=True)
class MemberChange:
    """What a change sets; a field left None keeps what is stored (`clear_gpu_type` unsets
    the GPU type, which None cannot say)."""

    uri: str | None = None
    gpu_type: str | None = None
    clear_gpu_type: bool = False
    priority: int | None = None
    user: str | None = None
    sealed_token: str | None = field(default=None, repr=False)


def _member(row: MemberClusterRow) -> DeclaredMember:
    return DeclaredMember(alias=row.alias, uri=row.uri, kind=ClusterKind(row.kind),
                          gpu_type=row.gpu_type, priority=row.priority, user=row.user,
                          sealed_token=row.sealed_token, created=row.created,
                          updated=row.updated, updated_by=row.updated_by)


class MemberRecords:
    """The API-declared members in the store; every write is one transaction."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def list_members(self) -> list[DeclaredMember]:
        """In the order they were declared (then by alias)."""
        with self.store.reads.begin() as s:
            rows = s.scalars(select(MemberClusterRow).order_by(MemberClusterRow.created,
                                                               MemberClusterRow.alias))
            return [_member(r) for r in rows]

    def get_member(self, alias: str) -> DeclaredMember | None:
        with self.store.reads.begin() as s:
            row = s.get(MemberClusterRow, alias)
            return None if row is None else _member(row)

    def add_member(self, member: DeclaredMember) -> DeclaredMember:
        """`AlreadyExistsError` when the alias is taken."""
        try:
            with self.store.sessions.begin() as s:
                s.add(MemberClusterRow(**{f.name: getattr(member, f.name)
                                          for f in dataclasses.fields(member)
                                          if f.name != "kind"}, kind=member.kind.value))
        except IntegrityError:
            raise AlreadyExistsError(f"cluster {member.alias!r} already exists") from None
        return member

    def change_member(self, alias: str, change: MemberChange, at: float, by: str
                      ) -> DeclaredMember:
        """Apply `change`; `NotFoundError` when no member has the alias."""
        with self.store.sessions.begin() as s:
            row = s.get(MemberClusterRow, alias, with_for_update=True)
            if row is None:
                raise NotFoundError(f"no cluster {alias!r} declared through the API")
            if change.uri is not None:
                row.uri = change.uri
            if change.clear_gpu_type:
                row.gpu_type = None
            elif change.gpu_type is not None:
                row.gpu_type = change.gpu_type
            if change.priority is not None:
                row.priority = change.priority
            if change.user is not None:
                row.user = change.user
            if change.sealed_token is not None:
                row.sealed_token = change.sealed_token
            row.updated = at
            row.updated_by = by
            s.flush()
            return _member(row)

    def remove_member(self, alias: str) -> None:
        """`NotFoundError` when no member has the alias."""
        with self.store.sessions.begin() as s:
            row = s.get(MemberClusterRow, alias)
            if row is None:
                raise NotFoundError(f"no cluster {alias!r} declared through the API")
            s.delete(row)
