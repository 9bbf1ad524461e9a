"""A virtual cluster's `maxPerUser` (issue 17, seed 002's "users quota"), read from its
document and checked with its path: a per-resource limit on what one user's running tasks
hold in the cluster, at most the cluster's own `max` where both name a resource (a larger
one could never bind).

What it means to the scheduler is `shoal.core.user_quota`'s; here only whether it is well
formed within its document.
"""

from __future__ import annotations

from shoal.api import ResourceLimit
from shoal.spec.cluster_documents import VirtualClusterSpec
from shoal.spec.errors import DocRef, IssueLog
from shoal.spec.queue_fields import LimitReader

MAX_PER_USER = "spec.maxPerUser"


def max_per_user(log: IssueLog, doc: DocRef, spec: VirtualClusterSpec,
                 ceiling: ResourceLimit | None, limit_of: LimitReader) -> ResourceLimit:
    """`spec.maxPerUser`, problems logged; unlimited when absent or unreadable. `ceiling`
    is the cluster's flexible `max` plus its fixed-size nodes when readable."""
    per_user = limit_of(MAX_PER_USER, spec.max_per_user)
    if per_user is None or per_user.is_unlimited():
        return ResourceLimit()
    if ceiling is not None:
        over = [(dim, value, most) for dim, value in per_user.limits
                if (most := ceiling.get(dim)) is not None and value > most]
        if over:
            log.add(doc, MAX_PER_USER, "must be at most the cluster's max "
                    "(flexibleResourceMax plus its fixedSizeNodes); over in " + ", ".join(
                        f"{dim} {value} > {most}" for dim, value, most in over))
    return per_user
