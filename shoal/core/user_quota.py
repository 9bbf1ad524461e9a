"""Per-user quotas inside virtual clusters (issue 17, seed 002's "users quota"): a virtual
cluster's `maxPerUser` caps what one user's running tasks hold in its subtree, per resource
— Slurm's `MaxTRESPerUser` on a QOS or association.

Counted here, apart from the quota tree (`shoal.core.quota`), and only for the virtual
clusters that set a limit: (virtual cluster, user) → what that user's tasks hold in it.
A task counts in every limited virtual cluster on the path to its job's queue, so a parent's
limit caps the user's total over its children. Every task that holds resources counts,
those on the cluster's own fixed-size nodes included, and the check runs before every
placement (`Session.user_allows`, from `shoal.scheduler.fitting`), on those nodes too.

A job without a user (`Job.user` None) counts as user `NO_USER`, one user with all others
like it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from shoal.api.decisions import PendingKind, PendingReason
from shoal.api.objects import VirtualCluster
from shoal.api.resources import ResourceLimit, Resources
from shoal.core.usage import NO_USER


class UserQuota:
    def __init__(self, virtual_clusters: Iterable[VirtualCluster] = ()) -> None:
        self.limits: dict[str, ResourceLimit] = {
            vc.name: vc.max_per_user for vc in virtual_clusters
            if not vc.max_per_user.is_unlimited()}
        """Virtual clusters with a `maxPerUser` → it."""
        self.held: dict[tuple[str, str], Resources] = {}
        """(limited virtual cluster, user) → what the user's tasks hold in its subtree."""

    def add(self, vc: VirtualCluster) -> None:
        """A virtual cluster that joined the tree (a job's sub-cluster): its limit counts
        from now on, for tasks that start in it (none runs in it yet)."""
        if not vc.max_per_user.is_unlimited():
            self.limits[vc.name] = vc.max_per_user

    def __bool__(self) -> bool:
        return bool(self.limits)

    def hold(self, path: Sequence[str], user: str, request: Resources, sign: int) -> None:
        """A task of `user` in the last virtual cluster of `path` (root first) starts
        (`sign` 1) or stops (-1) holding `request`."""
        for vc in path:
            if vc not in self.limits:
                continue
            key = (vc, user)
            now = self.held.get(key, Resources())
            now = now + request if sign > 0 else now.saturating_sub(request)
            if now.is_zero():
                self.held.pop(key, None)
            else:
                self.held[key] = now

    def used(self, vc: str, user: str) -> Resources:
        return self.held.get((vc, user), Resources())

    def check(self, path: Sequence[str], user: str, request: Resources
              ) -> PendingReason | None:
        """None if `user` may take `request` more in the last virtual cluster of `path`;
        else the first limit on the path, from the root down, that it would go over."""
        for vc in path:
            limit = self.limits.get(vc)
            if limit is None:
                continue
            used = self.used(vc, user)
            over = limit.exceeded_by(used, request)
            if over:
                dim = over[0]
                return PendingReason(
                    PendingKind.QUEUE_LIMIT,
                    f"{_who(user)} {used.get(dim)} of at most {limit.get(dim)} {dim} in "
                    f"virtual cluster {vc!r} (maxPerUser), {request.get(dim)} more needed",
                    resource=dim, queue=vc)
        return None

    def never_fits(self, path: Sequence[str], request: Resources) -> PendingReason | None:
        """A reason if `request` alone is over a `maxPerUser` on the path: no user could
        ever run it there."""
        for vc in path:
            limit = self.limits.get(vc)
            if limit is None:
                continue
            over = limit.exceeded(request)
            if over:
                dim = over[0]
                return PendingReason(
                    PendingKind.UNSCHEDULABLE,
                    f"needs {request.get(dim)} {dim} but virtual cluster {vc!r} allows at "
                    f"most {limit.get(dim)} {dim} per user (maxPerUser)",
                    resource=dim, queue=vc)
        return None


def _who(user: str) -> str:
    return "jobs without a user use" if user == NO_USER else f"user {user} uses"
