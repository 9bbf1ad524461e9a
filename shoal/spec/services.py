"""A Job document's service settings (seed 002): `kind: Service` or `spec.service`, and a
Node document's unmanaged load, `status.reserved`.

`spec.service: true` (or `kind: Service`) makes the job an online service: its priority
class is `production` unless it names one, and it is not preemptable (`spec.preemptable:
true` on a service is an error). `spec.service` may instead be a mapping: `schedule`, the
quiet windows (`from`, `to` as HH:MM UTC, `replicas`), never overlapping, each longer than
`handBack` (seconds or a duration, default 900), for the task group `taskGroup` (default:
the job's only one). A scheduled service is elastic between its quietest window's replicas
and its group's replicas — `Job.elastic`, which the services action sizes and nothing else
does —, so `spec.elastic` and the elastic annotations are refused on it, and a gang's
`minAvailable` must leave room for its quietest size.
"""

from __future__ import annotations

from collections.abc import Sequence

from shoal.api import Elasticity, Resources, TaskGroup
from shoal.api.elastic import parse_duration
from shoal.api.services import QuietWindow, Service, parse_time_of_day
from shoal.spec.documents import JobDocument, ServiceDocument, ServiceSpec
from shoal.spec.elastic import ELASTIC_ANNOTATIONS
from shoal.spec.errors import DocRef, IssueLog, quote

#: The priority class a service gets when it names none (seed 002's highest level).
SERVICE_PRIORITY_CLASS = "production"


def service(log: IssueLog, doc: DocRef, model: JobDocument, groups: Sequence[TaskGroup]
            ) -> tuple[Service | None, Elasticity | None]:
    """The job's service settings (None: a training job) and, for a scheduled service, the
    elasticity its schedule gives it; problems logged under their field."""
    given = model.spec.service
    if isinstance(model, ServiceDocument):
        if given is False:
            log.add(doc, "spec.service", "a Service document is a service: remove false or "
                                         "write kind: Job")
            return None, None
        if given is None or given is True:
            given = ServiceSpec()
    if given is None or given is False:
        return None, None
    if model.spec.preemptable is True:
        log.add(doc, "spec.preemptable", "a service is never preempted: remove true")
    if given is True:
        return Service(), None
    return _scheduled(log, doc, model, given, groups)


def _scheduled(log: IssueLog, doc: DocRef, model: JobDocument, spec: ServiceSpec,
               groups: Sequence[TaskGroup]) -> tuple[Service | None, Elasticity | None]:
    at = "spec.service"
    try:
        hand_back = parse_duration(spec.hand_back)
    except ValueError as exc:
        log.add(doc, f"{at}.handBack", str(exc))
        return None, None
    windows: list[QuietWindow] = []
    for i, w in enumerate(spec.schedule):
        path = f"{at}.schedule[{i}]"
        try:
            start = parse_time_of_day(w.from_)
        except ValueError as exc:
            log.add(doc, f"{path}.from", str(exc))
            continue
        try:
            end = parse_time_of_day(w.to)
        except ValueError as exc:
            log.add(doc, f"{path}.to", str(exc))
            continue
        if start == end:
            log.add(doc, f"{path}.to", f"must differ from `from` ({w.from_}): a window lasts "
                                       "less than a day")
            continue
        window = QuietWindow(start, end, w.replicas)
        if window.length <= hand_back:
            log.add(doc, f"{at}.handBack",
                    f"must be shorter than schedule[{i}] ({w.from_}-{w.to}, "
                    f"{window.length:g} s): the service would grow back before it shrank, "
                    f"got {hand_back:g} s")
        for j, other in enumerate(windows):
            if window.overlaps(other):
                log.add(doc, f"{path}.from", f"overlaps schedule[{j}]: quiet windows must "
                                             "not overlap")
        windows.append(window)
    if not spec.schedule:
        return Service(hand_back=hand_back), None
    group = _group(log, doc, f"{at}.taskGroup", spec.task_group, groups)
    if group is None or len(windows) != len(spec.schedule):
        return None, None
    for i, quiet in enumerate(windows):
        if quiet.replicas > group.replicas:
            log.add(doc, f"{at}.schedule[{i}].replicas",
                    f"must be at most the replicas of task group {group.name!r} "
                    f"({group.replicas}), got {quiet.replicas}")
    notes = [a for a in ELASTIC_ANNOTATIONS if a in model.metadata.annotations]
    if model.spec.elastic is not None:
        log.add(doc, "spec.elastic", "a service with a schedule is sized by it: remove "
                                     "spec.elastic")
    elif notes:
        log.add(doc, f"metadata.annotations.{notes[0]}",
                "a service with a schedule is sized by it: remove the elastic annotations")
    quietest = min(*(w.replicas for w in windows), group.replicas)
    floor = model.spec.min_available
    if floor is not None and floor > quietest:
        log.add(doc, "spec.minAvailable", f"must be at most the quietest window's replicas "
                                          f"({quietest}): the service runs at that size then, "
                                          f"got {floor}")
    elastic = (None if quietest >= group.replicas
               else Elasticity(group.name, quietest, group.replicas))
    return Service(group.name, tuple(windows), hand_back), elastic


def _group(log: IssueLog, doc: DocRef, path: str, name: str | None,
           groups: Sequence[TaskGroup]) -> TaskGroup | None:
    if name is None:
        if len(groups) == 1:
            return groups[0]
        log.add(doc, path, f"is required when the job has {len(groups)} task groups: name "
                           "the one the schedule sizes")
        return None
    found = next((g for g in groups if g.name == name), None)
    if found is None:
        log.add(doc, path, f"names no task group of this job, got {quote(name)} (declared: "
                           f"{', '.join(g.name for g in groups)})")
    return found


def reserved_within(log: IssueLog, doc: DocRef, reserved: Resources,
                    offered: Resources) -> None:
    """A node's `status.reserved` must fit in what it offers (allocatable, or capacity)."""
    if not reserved.fits(offered):
        over = ", ".join(f"{dim} {reserved.get(dim)} > {offered.get(dim)}"
                         for dim in reserved.shortfall(offered))
        log.add(doc, "status.reserved", f"must fit in the node's allocatable (or capacity); "
                                        f"over in {over}")
