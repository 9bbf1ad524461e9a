"""The services action (seed 002): online services follow their time-of-day schedule, and
training jobs use — then hand back — what a service does not need in its quiet hours.

A service (`Job.service`, `shoal.api.services`) with quiet windows is elastic between its
quietest window's replicas and its task group's replicas (`shoal.spec.services`); the
allocate action places its guaranteed part like any job's, and this action alone sizes the
rest (the elastic action leaves services alone). Each cycle, for each such service that
runs and is neither stopping nor finishing, at the session's `now`:

- *Quiet*: above its need (`Service.need`), its highest-indexed surplus tasks are stopped,
  with a `Resize` down. Their resources are idle: allocate, backfill and the elastic action
  give them to training jobs in the same cycle.
- *Busy* (its need is back, `hand_back` seconds before a quiet window ends): below its need,
  its surplus tasks are placed, all of the step or none, with a `Resize` up. What does not
  fit on free capacity is taken back from running jobs: elastic surplus first (one allowed
  size at a time), then whole jobs — or single tasks of a job placed task by task —, lowest
  priority first, in the order of `shoal.scheduler.victims` (least work lost, most recently
  started), among jobs of at most the service's priority that hold a task on a node the
  service's group may use (an elastic job's surplus elsewhere goes with the job, whose
  unit needs it taken first: no gang is left below its minimum).
  Units are evicted one at a time until the service's tasks fit, in one statement: if they
  never fit, nothing is evicted.

The action runs first in a cycle, so what a service takes back is not handed out again
before it. It never evicts a service (`Job.evictable`: services have no victim units), nor
a task still protected by `protectFor`, nor one a victim-selection plugin keeps.

Waking the drivers: a service's need changes with the clock alone, at its windows' starts
and hand-back instants (`Service.next_change`). The action sets `Session.regrow_at` to the
earliest of them, which both drivers honour (the simulator schedules a cycle then, the
control loop cycles no later) — even when no job waits, which is when a quiet window starts
on an idle queue. It is not a `time_dependent` plugin on purpose: that flag wakes drivers
only while jobs wait, and it would stop the live loop from skipping moot cycles for every
cluster whose profile lists this action, services or not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from shoal.api.decisions import PendingKind, PendingReason, Resize
from shoal.api.lifecycle import TaskState
from shoal.api.objects import TaskGroup
from shoal.api.services import QuietWindow, Service, time_of_day
from shoal.core.nodes import FitMemo
from shoal.scheduler.fitting import place_replicas
from shoal.scheduler.jobs import JobInfo, TaskInfo
from shoal.scheduler.registry import Arguments
from shoal.scheduler.session import Session
from shoal.scheduler.victims import VictimUnit, ordered, units_of


class ServicesArguments(Arguments):
    pass


class Services:
    name = "services"

    def __init__(self, arguments: ServicesArguments) -> None:
        del arguments

    def execute(self, session: Session) -> None:
        now = session.now
        wake: float | None = None
        scheduled = sorted(session.model.services.values(), key=session.job_order_key)
        for info in scheduled:
            service = info.job.service
            assert service is not None
            change = service.next_change(now)
            if change is not None:
                wake = change if wake is None else min(wake, change)
            elastic = info.job.elastic
            if elastic is None or info.stopping or info.finishing or not info.running \
                    or info.pending:
                continue
            group = info.job.group(elastic.group)
            need = max(elastic.min_replicas, service.need(now, group.replicas))
            size = info.elastic_size()
            if size > need:
                _shrink(session, info, group, service, size, need)
            elif size < need and info.surplus:
                _grow(session, info, group, service, size, need)
        if wake is not None:
            session.regrow_at = wake if session.regrow_at is None else \
                min(session.regrow_at, wake)


def _shrink(session: Session, info: JobInfo, group: TaskGroup, service: Service, size: int,
            need: int) -> None:
    """Stop the service's highest-indexed surplus tasks above `need`."""
    window = service.window_at(session.now)
    why = f"quiet window {_window_text(window)}: needs {need} of {group.replicas}"
    surplus = sorted((t for t in info.running if info.is_surplus(t.ref.group, t.ref.index)
                      and t.state is not TaskState.RELEASING),
                     key=lambda t: t.ref.index, reverse=True)
    taken = surplus[:size - need]
    if not taken:
        return
    statement = session.statement()
    for task in taken:
        statement.evict(task.ref, info.account, session.cluster.by_name[task.node],
                        group.resources, task.gpus, f"service resized: {why}")
    statement.commit()
    _resized(session, info, group, size - len(taken), f"shrunk from {size}: {why}")


def _grow(session: Session, info: JobInfo, group: TaskGroup, service: Service, size: int,
          need: int) -> None:
    """Place the service's surplus tasks up to `need`, taking back what training jobs use
    if free capacity does not hold them."""
    indices = list(info.surplus)[:need - size]
    memo = FitMemo(session.cluster)
    statement = session.statement()
    if place_replicas(session, memo, statement, info, group, indices) is None:
        statement.commit()
        _resized(session, info, group, size + len(indices),
                 f"grown from {size}: its busy hours begin")
        return
    statement.discard()
    units = _victims(session, info, group)
    statement = session.statement()
    chosen: list[VictimUnit] = []
    why = f"service {info.name} taking back its share for its busy hours"
    for unit in units:  # in order: a job's earlier units are taken before its later ones
        victim = unit.job
        what = "preempted" if unit.shrink_to is None else \
            f"elastic surplus taken (down to {unit.shrink_to})"
        for task in unit.tasks:
            statement.evict(task.ref, victim.account, session.cluster.by_name[task.node],
                            victim.job.group(task.ref.group).resources, task.gpus,
                            f"{what} for {why}")
        chosen.append(unit)
        mark = statement.savepoint()
        if place_replicas(session, FitMemo(session.cluster), statement, info, group,
                          indices) is None:
            statement.commit()
            _record(session, chosen, why)
            _resized(session, info, group, size + len(indices),
                     f"grown from {size}: its busy hours begin")
            return
        statement.roll_back(mark)
    statement.discard()


def _victims(session: Session, info: JobInfo, group: TaskGroup) -> list[VictimUnit]:
    """What may be taken back for the service, in order: elastic surplus first, then the
    rest; within each, the victims' score (`shoal.scheduler.victims.ordered`) with the
    lowest priority first. Only units holding a task on a node of the group's pool."""
    pool = {n.name for n in session.pool_for(group).nodes}
    fresh = {b.task.job for b in session.decisions.binds}
    selections = session.hooks.victim_selections
    units: list[VictimUnit] = []
    for job in session.jobs.values():
        if job is info or not job.running or job.name in fresh or job.priority > info.priority \
                or any(t.state is TaskState.RELEASING for t in job.running):
            continue

        def allowed(tasks: Sequence[TaskInfo]) -> bool:
            return all(len(s.victims(info, tasks)) == len(tasks) for s in selections)

        units.extend(_on_pool(session, units_of(job, session.now, allowed), pool))
    out = ordered(units, lambda j: (-j.priority,), session.job_order_key, session.now)
    out.sort(key=lambda u: u.shrink_to is None)  # stable: surplus first, each in order
    return out


def _on_pool(session: Session, units: list[VictimUnit], pool: set[str]) -> list[VictimUnit]:
    """A job's units that free something on the pool. A unit needs the job's earlier
    units taken first (`units_of`: the whole-job unit leaves out the surplus before it), so
    those off the pool go with the next one on it, as one unit — taken alone, they would
    free nothing the service can use; left out, a gang would be left below its minimum."""
    out: list[VictimUnit] = []
    carried: list[TaskInfo] = []
    for unit in units:
        if any(_physical(session, t) in pool for t in unit.tasks):
            if carried and not unit.alone:
                out.append(replace(unit, tasks=(*carried, *unit.tasks)))
                carried = []
            else:
                out.append(unit)
        elif not unit.alone:
            carried.extend(unit.tasks)
    return out


def _physical(session: Session, task: TaskInfo) -> str:
    return session.cluster.by_name[task.node].physical.name


def _record(session: Session, chosen: list[VictimUnit], why: str) -> None:
    """Victims are not grown back in this cycle; a shrunk one gets a `Resize`, an evicted
    one a reason."""
    last = {u.job.name: u for u in chosen}
    for name, unit in last.items():
        session.preempted.add(name)
        victim = unit.job
        if unit.shrink_to is None:
            victim.reason = PendingReason(PendingKind.INSUFFICIENT_RESOURCES,
                                          f"preempted in this cycle for {why}")
            continue
        elastic = victim.job.elastic
        assert elastic is not None
        victim.resized = session.now
        session.decisions.resizes.append(
            Resize(name, elastic.group, unit.shrink_to, f"shrunk for {why}"))


def _resized(session: Session, info: JobInfo, group: TaskGroup, size: int, why: str) -> None:
    info.resized = session.now
    session.decisions.resizes.append(Resize(info.name, group.name, size, why))


def _window_text(window: QuietWindow | None) -> str:
    if window is None:
        return "(none)"
    return f"{time_of_day(window.start)}-{time_of_day(window.end)}"
