"""What growth of running jobs keeps off: the nodes a job that waits ahead of them could use.

Two kinds of waiter have a claim that growth must not take from under them. A blocked head
(the first job of a `strict` virtual cluster, or a starving job holding a reservation:
`shoal.scheduler.aging`) — the jobs behind it start only where it could not, and growth of
running jobs keeps to the same rule. And a running service short of its need (its busy hours
or its hand-back have begun and the services action could not take all of it back):
training grown there would be taken back in the next cycle. The elastic and fairshare
actions grow only outside these nodes, with a fit memo of their own, since bounds learnt
with nodes excluded would be wrong without them.
"""

from __future__ import annotations

from shoal.scheduler.actions.allocate import head_nodes
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.session import Session


def kept_off(session: Session) -> set[int]:
    """The node ordinals growth keeps off this cycle (the module's text)."""
    reserved: set[int] = set()
    for head, *_ in session.blocked.values():
        reserved |= head_nodes(session, head)
    for service in session.model.services.values():
        reserved |= short_service_nodes(session, service)
    return reserved


def short_service_nodes(session: Session, info: JobInfo) -> set[int]:
    """The node ordinals a running service short of its need now could use."""
    service, elastic = info.job.service, info.job.elastic
    if service is None or elastic is None or not info.running or info.stopping \
            or info.finishing:
        return set()
    group = info.job.group(elastic.group)
    if info.elastic_size() >= service.need(session.now, group.replicas):
        return set()
    return {s.ordinal for s in session.pool_for(group).nodes
            if group.resources.fits(s.allocatable)}
