"""Admins declare, change and remove member clusters through the API (issue 19): the
document read (the clusters file's `kind: Cluster`, with the token itself in
`spec.credentials.token` — stored sealed — and never a `tokenFile` or `tokenEnv`: the server
reads no file and no variable a caller names), the checks, and an audit line per change.

Members of the clusters file are read-only here ("declared in file"); an alias of the file
is refused. A member is removed only while no job that has not ended has a copy there or
names it: its copies would be orphaned, and its jobs could no longer be driven (409 naming
the jobs; stop them, or wait for them to end).

Every problem is reported at once by field path, as the file's are; no message quotes what
a credentials field holds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from shoal.federation.directory import MemberDirectory, seal_token
from shoal.federation.intake import restore
from shoal.federation.registry import (
    MAX_MEMBERS,
    MAX_TOKEN_BYTES,
    ClusterEntry,
    entry_of,
)
from shoal.spec.errors import DocRef, IssueLog, SpecError, SpecIssue, quote
from shoal.spec.limits import Limits
from shoal.spec.reading import UnreadableError, yaml_documents
from shoal.store.errors import AlreadyExistsError, NotFoundError
from shoal.store.federation import FederationRecords, McJob
from shoal.store.federation_members import DeclaredMember, MemberChange

log = logging.getLogger(__name__)

MAX_DOCUMENT_BYTES = 64 * 1024
_LIMITS = Limits(max_depth=8, max_items=64, max_values=1_000)
_BY_REFERENCE = {"tokenFile", "tokenEnv"}
_CHANGEABLE = ("uri", "gpuType", "priority", "credentials")
MAX_JOBS_NAMED = 20


class FileMemberError(Exception):
    """The member is declared in the clusters file: read-only through the API."""


class MemberInUseError(Exception):
    """Jobs that have not ended use the member; `jobs` names them."""

    def __init__(self, alias: str, jobs: list[str]) -> None:
        shown = ", ".join(repr(j) for j in jobs[:MAX_JOBS_NAMED])
        more = f" and {len(jobs) - MAX_JOBS_NAMED} more" if len(jobs) > MAX_JOBS_NAMED else ""
        super().__init__(f"cluster {alias!r} is used by multi-cluster jobs that have not "
                         f"ended: {shown}{more}; stop them (`shoal mc stop NAME`) or wait "
                         "for them to end, then remove it")
        self.jobs = jobs


@dataclass(frozen=True, slots=True)
class Declaration:
    """A member as an admin declared it, its token (if any) not yet sealed."""

    entry: ClusterEntry
    token: str | None = field(repr=False)


def read_declaration(text: str, source: str = "request") -> Declaration:
    """The member one `kind: Cluster` document (YAML or JSON) declares; `SpecError` with
    every problem by field path."""
    log_ = IssueLog()
    if len(text.encode("utf-8", "replace")) > MAX_DOCUMENT_BYTES:
        _refuse(source, f"is longer than {MAX_DOCUMENT_BYTES} bytes; one Cluster document is "
                        "expected")
    try:
        documents = list(yaml_documents(source, text, log_, _LIMITS))
    except UnreadableError:
        log_.raise_if_any()
        raise
    if len(documents) != 1:
        _refuse(source, f"holds {len(documents)} documents; declare one Cluster at a time")
    number, data = documents[0]
    where = DocRef(source, number, "Cluster")
    if not isinstance(data, dict):
        _refuse(source, f"must be a Cluster document (a mapping), got {type(data).__name__}")
    metadata = data.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("name") is None:
        log_.add(where, "metadata.name", "required through the API: the alias names the "
                                         "cluster in `PUT` and `DELETE /api/v1/clusters/ALIAS`")
    data, token = _take_token(log_, where, data)
    entry = entry_of(log_, where, data, None)
    log_.raise_if_any()
    assert entry is not None
    return Declaration(entry, token)


def _take_token(log_: IssueLog, where: DocRef, data: dict[Any, Any], *, whole: bool = True
                ) -> tuple[dict[Any, Any], str | None]:
    """`data` (a whole document, or its `spec` alone) without `spec.credentials.token`
    (nor what is refused), and the token."""
    spec = data.get("spec") if whole else data
    creds = spec.get("credentials") if isinstance(spec, dict) else None
    if not isinstance(creds, dict):
        return data, None
    path = "spec.credentials"
    for key in sorted(_BY_REFERENCE & set(creds)):
        log_.add(where, f"{path}.{key}", "not accepted through the API: the server reads no "
                 "file or environment variable a caller names; send the token itself as "
                 f"{path}.token (it is stored sealed, never returned)")
    token = creds.get("token")
    if "token" in creds and not _good_token(token):
        # Never quote it: it is a token, or a misplaced one.
        log_.add(where, f"{path}.token", f"must be one word of at most {MAX_TOKEN_BYTES} "
                 "bytes: no spaces, line breaks or control characters")
    kept = {k: v for k, v in creds.items() if k != "token" and k not in _BY_REFERENCE}
    assert isinstance(spec, dict)
    rest = {**spec, "credentials": kept}
    return ({**data, "spec": rest} if whole else rest), (token if _good_token(token) else None)


def _good_token(token: Any) -> bool:
    return (isinstance(token, str) and 0 < len(token.encode()) <= MAX_TOKEN_BYTES
            and all(c.isprintable() and not c.isspace() for c in token))


def _refuse(source: str, message: str) -> NoReturn:
    raise SpecError([SpecIssue(source, 0, "Cluster", None, "", message)])


class MemberAdmin:
    """Add, change and remove API-declared members, each change audited."""

    def __init__(self, directory: MemberDirectory, jobs: FederationRecords,
                 clock: Callable[[], float]) -> None:
        self.directory = directory
        self.jobs = jobs
        self.clock = clock

    def add(self, text: str, by: str) -> ClusterEntry:
        """`SpecError`, `FileMemberError`, `AlreadyExistsError`."""
        declared = read_declaration(text)
        member = declared.entry.member
        self._not_in_file(member.alias)
        if len(self.directory.current()) >= MAX_MEMBERS:
            raise AlreadyExistsError(f"the registry holds {MAX_MEMBERS} clusters already")
        box = self.directory.box
        now = self.clock()
        self.directory.records.add_member(DeclaredMember(
            alias=member.alias, uri=member.uri, kind=member.kind, gpu_type=member.gpu_type,
            priority=member.priority, user=declared.entry.credentials.user,
            sealed_token=None if declared.token is None else seal_token(box, declared.token),
            created=now, updated=now, updated_by=by))
        _audit(by, "added", member.alias, _describe(declared.entry, declared.token is not None))
        return self.directory.current().get(member.alias)

    def change(self, alias: str, text: str, by: str) -> ClusterEntry:
        """Apply a partial `spec` (YAML or JSON: uri, gpuType, priority, credentials.user,
        credentials.token — a token left out keeps the old one). `SpecError`,
        `FileMemberError`, `NotFoundError`."""
        self._not_in_file(alias)
        old = self.directory.records.get_member(alias)
        if old is None:
            raise NotFoundError(f"no cluster {alias!r} declared through the API")
        log_ = IssueLog()
        patch, token = _read_change(log_, text, alias)
        spec: dict[str, Any] = {"uri": old.uri, "kind": old.kind.value,
                                "priority": old.priority,
                                "credentials": {} if old.user is None else {"user": old.user}}
        if old.gpu_type is not None:
            spec["gpuType"] = old.gpu_type
        for key, value in patch.items():
            if key == "credentials":
                spec["credentials"] = {**spec["credentials"], **value}
            elif key == "gpuType" and value is None:
                spec.pop("gpuType", None)
            else:
                spec[key] = value
        entry = entry_of(log_, DocRef("request", 1, "Cluster", alias),
                         {"apiVersion": "shoal/v1", "kind": "Cluster",
                          "metadata": {"name": alias}, "spec": spec}, None)
        log_.raise_if_any()
        assert entry is not None
        m = entry.member
        self.directory.records.change_member(alias, MemberChange(
            uri=m.uri, gpu_type=m.gpu_type, clear_gpu_type=m.gpu_type is None,
            priority=m.priority, user=entry.credentials.user,
            sealed_token=None if token is None else seal_token(self.directory.box, token)),
            self.clock(), by)
        changed = ", ".join(sorted(k for k in patch if k != "credentials")
                            + [f"credentials.{k}" for k in sorted(patch.get("credentials", {}))]
                            + (["credentials.token"] if token is not None else []))
        _audit(by, "changed", alias, f"{changed or 'nothing'}; now {_describe(entry, None)}")
        return self.directory.current().get(alias)

    def remove(self, alias: str, by: str) -> None:
        """`FileMemberError`, `NotFoundError`, `MemberInUseError`."""
        self._not_in_file(alias)
        if self.directory.records.get_member(alias) is None:
            raise NotFoundError(f"no cluster {alias!r} declared through the API")
        users = [job.name for job in self.jobs.active_jobs() if _uses(job, alias)]
        if users:
            raise MemberInUseError(alias, users)
        self.directory.records.remove_member(alias)
        _audit(by, "removed", alias, "")

    def _not_in_file(self, alias: str) -> None:
        if self.directory.in_file(alias):
            raise FileMemberError(f"cluster {alias!r} is declared in the clusters file: "
                                  "change it there and restart the server")


def _read_change(log_: IssueLog, text: str, alias: str
                 ) -> tuple[dict[str, Any], str | None]:
    """What changes (problems in `log_`, reported with the merged member's)."""
    where = DocRef("request", 1, "Cluster", alias)
    if len(text.encode("utf-8", "replace")) > MAX_DOCUMENT_BYTES:
        _refuse("request", f"is longer than {MAX_DOCUMENT_BYTES} bytes")
    try:
        documents = list(yaml_documents("request", text, log_, _LIMITS))
    except UnreadableError:
        log_.raise_if_any()
        raise
    if len(documents) != 1 or not isinstance(documents[0][1], dict):
        _refuse("request", "expected one mapping of what changes: uri, gpuType, priority, "
                           "credentials (user, token)")
    data: dict[Any, Any] = documents[0][1]
    for key in data:
        if key not in _CHANGEABLE:
            why = ("cannot be changed: remove the cluster and declare it again"
                   if key in ("kind", "name", "alias") else
                   f"unknown field; what may change: {', '.join(_CHANGEABLE)}")
            log_.add(where, f"spec.{str(key)[:64]}", why)
    creds = data.get("credentials")
    if creds is not None and not isinstance(creds, dict):
        log_.add(where, "spec.credentials", "must be a mapping (user, token)")
        creds = None
    patch, token = _take_token(log_, where, {k: v for k, v in data.items()
                                             if k in _CHANGEABLE and k != "credentials"}
                               | ({"credentials": creds} if creds is not None else {}),
                               whole=False)
    if creds is None:
        patch.pop("credentials", None)
    return patch, token


def _uses(job: McJob, alias: str) -> bool:
    if any(c.alias == alias and c.live for c in job.copies):
        return True
    try:
        return any(ref.alias == alias for ref in restore(job.document, ()).members)
    except Exception:  # a document that no longer reads: count it as using every member
        return True


def _describe(entry: ClusterEntry, token_set: bool | None) -> str:
    m = entry.member
    text = (f"kind={m.kind.value} uri={quote(m.uri)} priority={m.priority} "
            f"gpuType={m.gpu_type or '-'} user={entry.credentials.user or '-'}")
    return text if token_set is None else f"{text} token={'sealed' if token_set else 'none'}"


def _audit(by: str, what: str, alias: str, detail: str) -> None:
    # WARNING: the level `shoal up` prints; an admin's change to the federation is what an
    # operator reads the log for. Never the token: only whether one is set.
    log.warning("audit: admin %r %s cluster %r%s", by, what, alias,
                f" ({detail})" if detail else "")
