"""The cluster registry (seed 000): the member clusters a multi-cluster job may be sent to,
read from a clusters file, and the credentials each is reached with — by reference only.

A clusters file is one or more `shoal/v1` documents of `kind: Cluster`, the shape of Shoal's
other documents (`shoal.spec.documents`): `metadata.name` is the member's alias (unique;
defaults to its URI, as the seed says), and `spec` holds `uri`, `kind`, `gpuType`,
`priority` (0-100) and `credentials`:

    apiVersion: shoal/v1
    kind: Cluster
    metadata: {name: big}
    spec:
      uri: http://10.0.0.5:8765
      kind: shoal
      gpuType: V100
      priority: 80
      credentials: {tokenFile: tokens/big.token, user: alice}

A credential is named, never written: `tokenFile` (a path, relative to the clusters file)
or `tokenEnv` (an environment variable), plus an optional `user`. A plaintext `token:` is
refused, and the file is read without ever quoting what a credentials field holds, so no
token reaches an error. The token itself is read only when an adapter is built for the
member (`ClusterEntry.credentials`, `ClusterRegistry.adapter`), so a registry can be loaded,
listed and checked where the tokens are not.

Every problem of a file is reported at once with its field path, as a job spec's are
(`shoal.spec.errors.SpecError`), and the file's size, its documents and every string in them
are bounded before anything is built.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn, Protocol

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from shoal.api.federation import MAX_PRIORITY, ClusterKind, MemberCluster
from shoal.federation.members.contract import MemberAdapter, MemberCredentials
from shoal.federation.members.factory import adapter_for
from shoal.federation.members.http import DEFAULT_TIMEOUT_S
from shoal.spec.errors import DocRef, IssueLog, SpecError, SpecIssue, quote
from shoal.spec.limits import KiB, Limits, MiB
from shoal.spec.messages import describe
from shoal.spec.reading import UnreadableError, yaml_documents

MAX_CLUSTERS_FILE_BYTES = 1 * MiB
MAX_MEMBERS = 256
"""Members of one registry: every job is sent to each, so a registry is small."""
MAX_TOKEN_BYTES = 16 * KiB
"""The most of a token file read: a JWT or a bearer token is far shorter."""
ALIAS_PATTERN = r"^[a-zA-Z0-9_-]+$"
"""An alias given explicitly ends each copy's name (`<job>-<alias>`), which OpenPAI and Shoal
allow only these characters in."""
MAX_ALIAS = 63
MAX_URI = 2048
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
_FILE_LIMITS = Limits(max_depth=8, max_items=MAX_MEMBERS, max_values=50_000)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CredentialsSpec(_Model):
    token_file: Annotated[StrictStr, Field(min_length=1, max_length=4096)] | None = Field(
        default=None, alias="tokenFile",
        description="A file holding the token (relative paths: to the clusters file).")
    token_env: Annotated[StrictStr, Field(pattern=ENV_NAME_PATTERN, max_length=255)] | None = (
        Field(default=None, alias="tokenEnv",
              description="An environment variable holding the token."))
    user: Annotated[StrictStr, Field(min_length=1, max_length=255)] | None = Field(
        default=None, description="The member's user: OpenPAI's job owner, Slurm's "
                                  "X-SLURM-USER-NAME.")


class ClusterSpec(_Model):
    uri: Annotated[StrictStr, Field(pattern=r"^https?://\S+$", max_length=MAX_URI)]
    kind: ClusterKind
    gpu_type: Annotated[StrictStr, Field(min_length=1, max_length=63)] | None = Field(
        default=None, alias="gpuType")
    priority: StrictInt = Field(default=0, ge=0, le=MAX_PRIORITY,
                                description="0-100; higher is preferred (FAC with priority).")
    credentials: CredentialsSpec = Field(default_factory=CredentialsSpec)


class ClusterMetadata(_Model):
    name: Annotated[StrictStr, Field(pattern=ALIAS_PATTERN, max_length=MAX_ALIAS)] | None = (
        Field(default=None, description="The member's alias; defaults to spec.uri."))


class ClusterDocument(_Model):
    api_version: Literal["shoal/v1"] = Field(alias="apiVersion")
    kind: Literal["Cluster"]
    metadata: ClusterMetadata = Field(default_factory=ClusterMetadata)
    spec: ClusterSpec


class UnknownClusterError(LookupError):
    """No member of the registry has the alias asked for."""


class CredentialsError(Exception):
    """A member's credentials could not be read; the message names the member and the
    field, never what the token file or variable holds."""


@dataclass(frozen=True, slots=True)
class CredentialsRef:
    """Where a member's token is, not the token: read by `resolve` when an adapter needs
    it."""

    alias: str
    token_file: Path | None = None
    token_env: str | None = None
    user: str | None = None

    def resolve(self, environ: Mapping[str, str] | None = None) -> MemberCredentials:
        """The member's credentials, the token read now from its file or variable."""
        env = os.environ if environ is None else environ
        token: str | None = None
        if self.token_file is not None:
            token = self._read_file(self.token_file)
        elif self.token_env is not None:
            token = env.get(self.token_env, "").strip()
            if not token:
                raise CredentialsError(
                    f"cluster {self.alias!r}: spec.credentials.tokenEnv: the environment "
                    f"variable {self.token_env} is not set or empty")
            _check_token(f"cluster {self.alias!r}: spec.credentials.tokenEnv: "
                         f"{self.token_env}", token)
        return MemberCredentials(user=self.user, token=token)

    def _read_file(self, path: Path) -> str:
        where = f"cluster {self.alias!r}: spec.credentials.tokenFile"
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_TOKEN_BYTES + 1)
        except OSError as exc:
            raise CredentialsError(f"{where}: cannot read {quote(str(path))}: "
                                   f"{exc.strerror or type(exc).__name__}") from None
        if len(data) > MAX_TOKEN_BYTES:
            raise CredentialsError(f"{where}: {quote(str(path))} is longer than "
                                   f"{MAX_TOKEN_BYTES} bytes; a token file holds one token")
        try:
            token = data.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise CredentialsError(f"{where}: {quote(str(path))} is not UTF-8 text") from None
        if not token:
            raise CredentialsError(f"{where}: {quote(str(path))} is empty")
        _check_token(f"{where}: {quote(str(path))}", token)
        return token


def _check_token(where: str, token: str) -> None:
    # A token travels in an HTTP header: one with a space or a control character in it would
    # be refused by the HTTP library, in an error that quotes the header, token and all.
    if any(c.isspace() or not c.isprintable() for c in token):
        raise CredentialsError(f"{where}: holds spaces, line breaks or control characters; "
                               "a token is one word")


class CredentialSource(Protocol):
    """Where a member's credentials come from: a file or variable named in the clusters file
    (`CredentialsRef`), or a token sealed in the store for a member declared through the API
    (`shoal.federation.directory.SealedCredentials`)."""

    @property
    def user(self) -> str | None: ...

    def resolve(self, environ: Mapping[str, str] | None = None) -> MemberCredentials: ...


@dataclass(frozen=True, slots=True)
class ClusterEntry:
    """One member as the registry holds it: what everyone may see (`member`) and where its
    credentials are (`credentials`)."""

    member: MemberCluster
    credentials: CredentialSource


@dataclass(frozen=True, slots=True)
class ClusterRegistry:
    """The members of the federation, in file order, aliases unique."""

    entries: tuple[ClusterEntry, ...]

    @property
    def members(self) -> tuple[MemberCluster, ...]:
        return tuple(e.member for e in self.entries)

    def __iter__(self) -> Iterator[ClusterEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, alias: str) -> ClusterEntry:
        for entry in self.entries:
            if entry.member.alias == alias:
                return entry
        known = ", ".join(quote(e.member.alias) for e in self.entries[:20]) or "none"
        raise UnknownClusterError(f"no cluster {quote(alias)} in the registry (known: {known})")

    def adapter(self, alias: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                environ: Mapping[str, str] | None = None) -> MemberAdapter:
        """The adapter of member `alias`, its credentials read now."""
        entry = self.get(alias)
        return adapter_for(entry.member, entry.credentials.resolve(environ),
                           timeout_s=timeout_s)


def load_registry_file(path: str | os.PathLike[str]) -> ClusterRegistry:
    """Read a clusters file; relative `tokenFile`s are taken from the file's folder."""
    file = Path(path)
    source = str(path)
    try:
        size = file.stat().st_size
        if size > MAX_CLUSTERS_FILE_BYTES:
            _refuse(source, f"is {size} bytes; a clusters file is at most "
                            f"{MAX_CLUSTERS_FILE_BYTES}")
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        _refuse(source, f"cannot read it: {reason or type(exc).__name__}")
    return load_registry(text, source, base_dir=file.parent)


def load_registry(text: str, source: str = "<clusters>", *,
                  base_dir: Path | None = None) -> ClusterRegistry:
    """The registry that `text` declares; `SpecError` with every problem, by field path."""
    if len(text.encode("utf-8", "replace")) > MAX_CLUSTERS_FILE_BYTES:
        _refuse(source, f"is longer than {MAX_CLUSTERS_FILE_BYTES} bytes")
    log = IssueLog()
    entries: list[ClusterEntry] = []
    seen: dict[str, int] = {}
    try:
        for number, data in yaml_documents(source, text, log, _FILE_LIMITS):
            entry = entry_of(log, DocRef(source, number, "Cluster"), data, base_dir)
            if entry is None:
                continue
            alias = entry.member.alias
            if alias in seen:
                log.add(DocRef(source, number, "Cluster", alias), "metadata.name",
                        f"alias {quote(alias)} is already the alias of document {seen[alias]}; "
                        "aliases are unique")
                continue
            if len(entries) == MAX_MEMBERS:
                log.add(DocRef(source, number, "Cluster"), "",
                        f"more than {MAX_MEMBERS} clusters in one registry")
                break
            seen[alias] = number
            entries.append(entry)
    except UnreadableError:
        pass
    log.raise_if_any()
    return ClusterRegistry(tuple(entries))


def entry_of(log: IssueLog, where: DocRef, data: Any, base_dir: Path | None
             ) -> ClusterEntry | None:
    """The entry one `Cluster` document declares, or None with its problems in `log`."""
    if not isinstance(data, dict):
        log.add(where, "", f"must be a Cluster document (a mapping), got {type(data).__name__}")
        return None
    if data.get("kind") != "Cluster":
        log.add(where, "kind", f"must be 'Cluster', got {quote(data.get('kind'))}")
        return None
    data = _without_plaintext_token(log, where, data)
    try:
        document = ClusterDocument.model_validate(data)
    except ValidationError as exc:
        for path, message in describe(ClusterDocument, exc):
            # Never echo what a credentials field holds: it may be a misplaced token.
            secret = path.startswith("spec.credentials")
            log.add(where, path, message.partition(", got ")[0] if secret else message)
        return None
    spec = document.spec
    alias = document.metadata.name or spec.uri
    creds = spec.credentials
    token_file = None
    if creds.token_file is not None:
        token_file = Path(creds.token_file).expanduser()
        if not token_file.is_absolute() and base_dir is not None:
            token_file = base_dir / token_file
    if creds.token_file is not None and creds.token_env is not None:
        log.add(DocRef(where.source, where.document, "Cluster", alias), "spec.credentials",
                "give tokenFile or tokenEnv, not both")
        return None
    if spec.kind is ClusterKind.OPENPAI and creds.user is None:
        log.add(DocRef(where.source, where.document, "Cluster", alias), "spec.credentials.user",
                "required for an openpai cluster: OpenPAI names a job after the user who "
                "submitted it (`user~name`)")
        return None
    member = MemberCluster(alias=alias, uri=spec.uri, kind=spec.kind, priority=spec.priority,
                           gpu_type=spec.gpu_type)
    return ClusterEntry(member, CredentialsRef(alias, token_file, creds.token_env, creds.user))


def _without_plaintext_token(log: IssueLog, where: DocRef, data: dict[Any, Any]
                             ) -> dict[Any, Any]:
    spec = data.get("spec")
    creds = spec.get("credentials") if isinstance(spec, dict) else None
    if not isinstance(creds, dict) or "token" not in creds:
        return data
    log.add(where, "spec.credentials.token",
            "a token is never written in the clusters file: put it in a file and name it "
            "with tokenFile: PATH, or in an environment variable named by tokenEnv: NAME")
    assert isinstance(spec, dict)
    kept = {k: v for k, v in creds.items() if k != "token"}
    return {**data, "spec": {**spec, "credentials": kept}}


def _refuse(source: str, message: str) -> NoReturn:
    raise SpecError([SpecIssue(source, 0, None, None, "", message)])
