"""Which adapter speaks to which kind of member: `adapter_for(member, credentials)`.

Every adapter has one constructor shape — `Adapter(member, credentials, *, timeout_s,
transport)` — so the dispatcher, the CLI and the tests build any member the same way. The
Slurm and Ray adapters are imported only when such a member is built: each pulls in its own
engine's code, which a registry of Shoal and OpenPAI members never needs.
"""

from __future__ import annotations

from shoal.api.federation import ClusterKind, MemberCluster
from shoal.federation.members.contract import MemberAdapter, MemberCredentials
from shoal.federation.members.http import DEFAULT_TIMEOUT_S


def adapter_for(member: MemberCluster, credentials: MemberCredentials, *,
                timeout_s: float = DEFAULT_TIMEOUT_S) -> MemberAdapter:
    """The adapter of `member`, presenting `credentials`, each call bounded by `timeout_s`."""
    if member.kind is ClusterKind.SHOAL:
        from shoal.federation.members.shoal_member import ShoalMember
        return ShoalMember(member, credentials, timeout_s=timeout_s)
    if member.kind is ClusterKind.OPENPAI:
        from shoal.federation.members.openpai import OpenPaiMember
        return OpenPaiMember(member, credentials, timeout_s=timeout_s)
    if member.kind is ClusterKind.SLURM:
        # Replaced at merge by the import of shoal.federation.members.slurm.SlurmMember.
        raise NotImplementedError(f"cluster {member.alias!r}: the slurm adapter is not built")
    # Replaced at merge by the import of shoal.federation.members.ray.RayMember.
    raise NotImplementedError(f"cluster {member.alias!r}: the ray adapter is not built")
