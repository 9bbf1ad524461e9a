"""The contract every member adapter keeps: submit a copy, ask its state, cancel it, find it
by name, read its log — each in the member's own job id — and the two ways a member can
fail a call.

A member that cannot be reached (a timeout, a refused connection, a 5xx) raises
`MemberUnavailableError`: the dispatcher retries it with backoff and reports the member as down,
never failing the job for it. A member that answers but refuses (a 4xx: a bad request, a
name taken, no such job) raises `MemberRefusedError`, with the member's reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from shoal.api.federation import CopyRequest, CopyState

MAX_LOG_BYTES = 1 << 20
"""The most of a copy's log one call returns (the tail)."""


class MemberError(Exception):
    """A call to a member cluster did not do what was asked; the message names the member
    and never carries a credential."""

    def __init__(self, alias: str, message: str) -> None:
        super().__init__(f"cluster {alias!r}: {message}")
        self.alias = alias


class MemberUnavailableError(MemberError):
    """The member did not answer, or answered with a server error: retry later."""


class MemberRefusedError(MemberError):
    """The member answered and refused the call: retrying the same call will not help."""


@dataclass(frozen=True, slots=True)
class MemberCredentials:
    """What an adapter presents to its member: a user name (OpenPAI's `user`, Slurm's
    `X-SLURM-USER-NAME`) and a token (a Shoal or OpenPAI bearer token, a Slurm JWT), kept
    out of `repr` so that no log line or error carries it."""

    user: str | None = None
    token: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class RemoteStatus:
    """A copy's state on its member, mapped onto `CopyState`, with the member's own words."""

    state: CopyState
    member_state: str
    """The state as the member names it (`PENDING`, `STOPPING`, `COMPLETED` …)."""
    started_at: datetime | None = None
    """When the member says the copy started running, where it says (UTC)."""
    detail: str = ""


class MemberAdapter(Protocol):
    """One member cluster, in its own job ids."""

    @property
    def alias(self) -> str: ...

    def submit(self, request: CopyRequest) -> str:
        """Submit the copy and return the member's id for it."""
        ...

    def status(self, remote_id: str) -> RemoteStatus:
        """Where the copy stands now."""
        ...

    def cancel(self, remote_id: str) -> None:
        """Stop the copy. Idempotent: a copy already finished or stopped is no error."""
        ...

    def find(self, name: str) -> str | None:
        """The id of the copy submitted under `name`, if the member has one: how a
        submission whose answer was lost (a crash, a timeout) is found again."""
        ...

    def logs(self, remote_id: str, *, limit_bytes: int = MAX_LOG_BYTES) -> str:
        """The tail of the copy's output, at most `limit_bytes`."""
        ...
