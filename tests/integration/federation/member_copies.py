"""What the member adapters' tests send and how they wait: a copy of a few shell commands
(`copy_request`), and `wait_until`, which polls a copy's status until a condition holds
(the deadline only a safety net)."""

from __future__ import annotations

import time
from collections.abc import Callable

from shoal.api.federation import CopyRequest, RoleRequest
from shoal.federation.members.contract import MemberAdapter, RemoteStatus

DEADLINE_S = 120.0


def copy_request(alias: str, name: str, *commands: str, gpu: int = 0, instances: int = 1,
                 roles: int = 1) -> CopyRequest:
    """A copy named `name` for member `alias`: `roles` roles of `instances` instances, each
    running `commands` with GREETING set."""
    role = [RoleRequest(f"r{i}", instances, commands, gpu=gpu, cpu=1, memory_mib=64,
                        env=(("GREETING", "hello from shoal"),)) for i in range(roles)]
    return CopyRequest(name.rsplit("-", 1)[0], alias, name, tuple(role), "{}", "shoal")


def wait_until(member: MemberAdapter, remote_id: str, done: Callable[[RemoteStatus], bool],
               deadline_s: float = DEADLINE_S) -> list[RemoteStatus]:
    """Poll the copy until `done` holds; every status seen on the way."""
    seen: list[RemoteStatus] = []
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        seen.append(member.status(remote_id))
        if done(seen[-1]):
            return seen
        time.sleep(0.2)  # a poll interval: the condition decides
    raise AssertionError(f"copy {remote_id}: still {seen[-1]} after {deadline_s} s")
