"""The elastic action (seed 001): last in a cycle, elastic jobs grow into what every other
action left idle, one allowed size at a time.

Which jobs: every elastic job but a service (whose size is its schedule's:
`shoal.scheduler.actions.services`) whose guaranteed part is placed (its tasks below `minReplicas`,
and its other groups: nothing left in `pending`), not being stopped nor finishing (one of its
tasks has succeeded: `JobInfo.finishing`), and that gave nothing up to another job in this
cycle (`Session.preempted`: what it gave up is that job's now). In
order, the least served first: the fewest GPU-seconds attained (this run and earlier ones,
as least-attained-service counts them), then the smallest fraction of its maximum, then the
session's job order (priority, then submission). Attained service first because it is what
shortens mean completion time: on the Pollux workloads (`bench/elastic.py`) it beat the
fraction of the maximum by 10% in mean JCT under least attained service.

Growth. A job at size `n` grows to `Elasticity.grown(n)` — the next size its step rule
allows, so powers of two go 1 → 2 → 4 → 8 — in one statement: every task of the step is
placed or none is (a half-grown job would sit at a size it does not allow). It grows at most
once per cycle, and only once `scaleCooldown` seconds have passed since it last changed size.
A start counts as a change of size: its latest task start, or the elastic action's own
last resize of it (`JobInfo.resized`), whichever is later. Growth uses free capacity within
the quota tree only: its virtual cluster's ceiling bounds it as it bounds any task, and
nothing is evicted to make room. Nor does it use a node a blocked head could use (the head
of a strictly ordered queue, or a starving job holding a reservation:
`shoal.scheduler.aging`), nor one a service short of its need could use: that capacity is
theirs once it frees up (`shoal.scheduler.growth_room`).

Repair. A job whose surplus tasks ended or were evicted may run at a size its step rule does
not allow (a power-of-two job at 3). It is brought back at once, cooldown or not: up to the
next allowed size if the missing tasks fit now, else down to the allowed size below, by
evicting its highest-indexed surplus tasks — unless the job is not preemptable
(`spec.preemptable: false`): nothing evicts its tasks, so it runs on at that size until the
missing ones fit.

Best-effort surplus. An elastic group that requests no resources (best-effort tasks) is not
this action's: best-effort tasks are the backfill action's only (`actions.allocate`), so
backfill resizes such a job, by the same rules (`resize_best_effort`), and in a profile
without backfill (`las-elastic`) it is never grown nor repaired — it keeps the size it has.

Every size change is a `Resize` decision (the job's new size and why) beside the binds and
evictions it takes. Taking surplus back for other jobs is reclaim's and preempt's.
"""

from __future__ import annotations

from shoal.api.decisions import Resize
from shoal.api.elastic import Elasticity
from shoal.scheduler.actions.allocate import is_best_effort
from shoal.scheduler.fitting import place_replicas
from shoal.scheduler.growth_room import kept_off
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.registry import Arguments
from shoal.scheduler.session import Session


class ElasticArguments(Arguments):
    pass


class Elastic:
    name = "elastic"

    def __init__(self, arguments: ElasticArguments) -> None:
        del arguments

    def execute(self, session: Session) -> None:
        # Growth keeps off what a blocked head or a service short of its need could use
        # (`shoal.scheduler.growth_room`).
        with session.keeping_off(kept_off(session)):
            for info in _elastic_jobs(session, best_effort=False):
                _step(session, info)


def resize_best_effort(session: Session) -> None:
    """The backfill action's share of this action: resize the jobs whose elastic group is
    best-effort, as `Elastic.execute` resizes the others (module docstring)."""
    for info in _elastic_jobs(session, best_effort=True):
        _step(session, info)


def _elastic_jobs(session: Session, best_effort: bool) -> list[JobInfo]:
    """The jobs that may change size, least served first (module docstring): those whose
    elastic group is best-effort when `best_effort`, else the others."""
    # The model keeps the jobs with an elastic group (`SchedulerModel.elastic`): a walk over
    # every job would cost each cycle what waits.
    jobs = [info for info in session.model.elastic.values()
            if info.job.elastic is not None and info.job.service is None
            and not info.pending and info.running
            and not info.stopping and not info.finishing
            and info.name not in session.preempted and info.account not in session.closed
            and is_best_effort(info.job.group(info.job.elastic.group)) is best_effort]
    jobs.sort(key=lambda info: (info.attained(session.now), _served(info),
                                session.job_order_key(info)))
    return jobs


def _step(session: Session, info: JobInfo) -> None:
    """Repair the job's size, or grow it one step."""
    elastic = info.job.elastic
    assert elastic is not None
    size = info.elastic_size()
    if not elastic.allows(size):
        _repair(session, info, elastic, size)
        return
    if not info.surplus:
        return
    ready = _ready_at(session, info, elastic)
    if ready > session.now:
        _regrow_at(session, ready)  # its cooldown holds it back until then
        return
    target = elastic.grown(size)
    if target is not None and _grow(session, info, elastic, target):
        _resized(session, info, elastic, target, f"grown from {size} into idle capacity")
        if info.surplus:  # one step per cycle: the next may follow
            _regrow_at(session, session.now + elastic.scale_cooldown)


def _served(info: JobInfo) -> float:
    elastic = info.job.elastic
    assert elastic is not None
    return info.elastic_size() / elastic.max_replicas


def _ready_at(session: Session, info: JobInfo, elastic: Elasticity) -> float:
    """When the job's scale cooldown lets it change size again."""
    if elastic.scale_cooldown <= 0:
        return session.now
    starts = [t.started for t in info.running if t.started is not None]
    last = max([*starts, *([] if info.resized is None else [info.resized])], default=None)
    return session.now if last is None else last + elastic.scale_cooldown


def _regrow_at(session: Session, at: float) -> None:
    session.regrow_at = at if session.regrow_at is None else min(session.regrow_at, at)


def _grow(session: Session, info: JobInfo, elastic: Elasticity, target: int) -> bool:
    """Place the surplus tasks that bring the job to `target`, all or none."""
    size = info.elastic_size()
    indices = list(info.surplus)[:target - size]
    if len(indices) < target - size:
        return False
    group = info.job.group(elastic.group)
    statement = session.statement()
    if place_replicas(session, session.fit_memo, statement, info, group, indices) is not None:
        statement.discard()
        return False
    statement.commit()
    return True


def _repair(session: Session, info: JobInfo, elastic: Elasticity, size: int) -> None:
    up = elastic.grown(size)
    if up is not None and _grow(session, info, elastic, up):
        _resized(session, info, elastic, up, f"restored from {size}: its step rule does not "
                                             f"allow {size} tasks")
        return
    down = elastic.shrunk(size)
    if down is None:  # below its minimum: its guaranteed part is allocate's to restore
        return
    if not info.job.evictable:
        return  # its tasks are never evicted, not even to bring it to an allowed size
    group = info.job.group(elastic.group)
    statement = session.statement()
    surplus = sorted((t for t in info.running if info.is_surplus(t.ref.group, t.ref.index)),
                     key=lambda t: t.ref.index, reverse=True)
    reason = (f"shrunk from {size} to {down}: its step rule does not allow {size} tasks and "
              "the missing ones do not fit")
    for task in surplus[:size - down]:
        statement.evict(task.ref, info.account, session.cluster.by_name[task.node],
                        group.resources, task.gpus, reason)
    statement.commit()
    _resized(session, info, elastic, down, reason)


def _resized(session: Session, info: JobInfo, elastic: Elasticity, size: int,
             why: str) -> None:
    info.resized = session.now
    session.decisions.resizes.append(Resize(info.name, elastic.group, size, why))


# ---- for the fairshare action (seed 002), which resizes by these same rules -----------------

def grow_step(session: Session, info: JobInfo, why: str) -> int | None:
    """Grow the job by one allowed step, all of the step's tasks or none, recording the
    `Resize`; its new size, or None if the step does not fit (or it is at its maximum)."""
    elastic = info.job.elastic
    assert elastic is not None
    size = info.elastic_size()
    target = elastic.grown(size)
    if target is None or not _grow(session, info, elastic, target):
        return None
    _resized(session, info, elastic, target, why.format(size=size, target=target))
    return target


def repair_size(session: Session, info: JobInfo) -> None:
    """Bring a job running at a size its step rule does not allow to an allowed one, as
    this action does (module docstring: Repair)."""
    elastic = info.job.elastic
    assert elastic is not None
    size = info.elastic_size()
    if not elastic.allows(size):
        _repair(session, info, elastic, size)
