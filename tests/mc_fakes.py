"""In-memory member clusters for the dispatcher's tests: each keeps its copies by name, can be
told to run, fail, lose or refuse them, and to be unreachable — the contract's behaviour
without a server, so that every phase of a pass can be stopped at and replayed."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from shoal.api.federation import CopyRequest, CopyState, MemberCluster
from shoal.federation.members.contract import (
    MAX_LOG_BYTES,
    MemberAdapter,
    MemberCredentials,
    MemberRefusedError,
    MemberUnavailableError,
    RemoteStatus,
)


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeMember:
    """One member: its copies by name, and the calls it was sent."""

    alias: str
    copies: dict[str, CopyState] = field(default_factory=dict)
    submits: list[str] = field(default_factory=list)
    cancels: list[str] = field(default_factory=list)
    tokens: list[str | None] = field(default_factory=list)
    down: bool = False
    lose_answer: bool = False
    """Take a submission but raise as if its answer was lost."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def live(self) -> list[str]:
        return [n for n, s in self.copies.items() if not s.is_final]

    def set(self, name: str, state: CopyState) -> None:
        with self.lock:
            self.copies[name] = state


class FakeAdapter:
    def __init__(self, member: FakeMember, creds: MemberCredentials) -> None:
        self.member = member
        member.tokens.append(creds.token)

    @property
    def alias(self) -> str:
        return self.member.alias

    def _up(self) -> None:
        if self.member.down:
            raise MemberUnavailableError(self.alias, "GET /: server error 500")

    def submit(self, request: CopyRequest) -> str:
        self._up()
        with self.member.lock:
            if request.name in self.member.copies:
                raise MemberRefusedError(self.alias, f"{request.name} exists")
            self.member.copies[request.name] = CopyState.WAITING
            self.member.submits.append(request.name)
        if self.member.lose_answer:
            raise MemberUnavailableError(self.alias, "no answer within 1 s")
        return request.name

    def status(self, remote_id: str) -> RemoteStatus:
        self._up()
        with self.member.lock:
            state = self.member.copies.get(remote_id)
        if state is None:
            raise MemberRefusedError(self.alias, "refused with 404")
        return RemoteStatus(state, state.value.title())

    def cancel(self, remote_id: str) -> None:
        self._up()
        with self.member.lock:
            self.member.cancels.append(remote_id)
            state = self.member.copies.get(remote_id)
            if state is not None and not state.is_final:
                self.member.copies[remote_id] = CopyState.STOPPED

    def find(self, name: str) -> str | None:
        self._up()
        with self.member.lock:
            return name if name in self.member.copies else None

    def logs(self, remote_id: str, *, limit_bytes: int = MAX_LOG_BYTES) -> str:
        self._up()
        return f"log of {remote_id}"[-limit_bytes:]


class Members:
    """The adapter factory the dispatcher is given: one FakeMember per alias."""

    def __init__(self, *aliases: str) -> None:
        self.by_alias = {a: FakeMember(a) for a in aliases}

    def __getitem__(self, alias: str) -> FakeMember:
        return self.by_alias[alias]

    def __call__(self, member: MemberCluster, creds: MemberCredentials) -> MemberAdapter:
        return FakeAdapter(self.by_alias[member.alias], creds)
