"""The registry the super scheduler reads (issue 19): the clusters file's members — fixed
while the server runs, read-only through the API ("declared in file") — and after them the
members admins declared through the API (`shoal.store.federation_members`), read from the
store each time, so that a member added, changed or removed is used at the dispatcher's
next pass without a restart.

An API-declared member's token is sealed in the store with the server's key
(`SealedCredentials`) and opened only when an adapter is built for the member.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from shoal.api.federation import MemberCluster
from shoal.federation.members.contract import MemberCredentials
from shoal.federation.registry import ClusterEntry, ClusterRegistry, CredentialsError
from shoal.store.federation_members import DeclaredMember, MemberRecords
from shoal.store.federation_secrets import KEY_FILE, SealError, SecretBox

log = logging.getLogger(__name__)

TOKEN_KEY = "token"
"""The name a member's token is sealed under (`SecretBox` seals name → value pairs)."""


@dataclass(frozen=True, slots=True)
class SealedCredentials:
    """An API-declared member's credentials: its user, and its token sealed (or None)."""

    alias: str
    user: str | None
    sealed: str | None = field(repr=False)
    box: SecretBox = field(repr=False, compare=False)

    def resolve(self, environ: Mapping[str, str] | None = None) -> MemberCredentials:
        """The member's credentials, the token unsealed now (`CredentialsError` when the
        server's key changed)."""
        if self.sealed is None:
            return MemberCredentials(user=self.user)
        try:
            opened = dict(self.box.open(self.sealed))
        except SealError:
            raise CredentialsError(
                f"cluster {self.alias!r}: spec.credentials.token: sealed with another key "
                f"(was {KEY_FILE} replaced?); set it again with `shoal mc cluster set "
                f"{self.alias} --token-file FILE`") from None
        return MemberCredentials(user=self.user, token=opened.get(TOKEN_KEY))


def seal_token(box: SecretBox, token: str) -> str:
    return box.seal(((TOKEN_KEY, token),))


def declared_entry(member: DeclaredMember, box: SecretBox) -> ClusterEntry:
    return ClusterEntry(
        MemberCluster(alias=member.alias, uri=member.uri, kind=member.kind,
                      priority=member.priority, gpu_type=member.gpu_type),
        SealedCredentials(member.alias, member.user, member.sealed_token, box))


class MemberDirectory:
    """The file's members and the API-declared ones, as one `ClusterRegistry`."""

    def __init__(self, file_registry: ClusterRegistry, records: MemberRecords,
                 box: SecretBox) -> None:
        self.file_registry = file_registry
        self.records = records
        self.box = box
        self._file_aliases = frozenset(e.member.alias for e in file_registry)
        self._shadowed: set[str] = set()

    def in_file(self, alias: str) -> bool:
        return alias in self._file_aliases

    def current(self) -> ClusterRegistry:
        """The registry now: the file's members first, then the declared ones in the order
        they were declared."""
        entries = list(self.file_registry.entries)
        for member in self.records.list_members():
            # The API refuses an alias of the file; one declared before the file named it
            # too (a restart with another file) yields to the file, said once.
            if member.alias in self._file_aliases:
                if member.alias not in self._shadowed:
                    log.warning("cluster %r is declared both in the clusters file and through "
                                "the API; the file's is used (remove the other with "
                                "`shoal mc cluster remove`)", member.alias)
                    self._shadowed.add(member.alias)
                continue
            entries.append(declared_entry(member, self.box))
        return ClusterRegistry(tuple(entries))
