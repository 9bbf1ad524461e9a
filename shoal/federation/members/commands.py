"""What the command-taking members (Slurm, Ray) run for a copy: its one role, and that role's
commands as one shell script.

OpenPAI and Shoal take the specialised job whole; Slurm and Ray take a command, so a copy
they are sent must be one role (a Ray job is one driver; a Slurm batch job one script). A
copy of several roles is refused here, with the member and the reason, before any call.
"""

from __future__ import annotations

from shoal.api.federation import CopyRequest, RoleRequest
from shoal.federation.members.contract import MemberRefusedError


def only_role(alias: str, request: CopyRequest, *, engine: str, why: str) -> RoleRequest:
    """The copy's one role, or `MemberRefusedError` naming the member and why it takes one."""
    if len(request.roles) != 1:
        names = ", ".join(role.name for role in request.roles) or "none"
        raise MemberRefusedError(
            alias, f"copy {request.name!r} has {len(request.roles)} task roles ({names}); "
                   f"a {engine} member runs one role per copy: {why}")
    return request.roles[0]


def script_of(role: RoleRequest) -> str:
    """The role's commands as one `sh` script that stops at the first failing command, as
    OpenPAI joins `commands` with newlines into one entrypoint."""
    return "set -e\n" + "\n".join(role.commands) + "\n"
