"""Services (seed 002) as documents write them — `kind: Service`, `spec.service`, a node's
`status.reserved` — and the errors that name their fields; the schedule's clock arithmetic."""

from __future__ import annotations

import pytest
from spec_helpers import JOB, JOB_1, NODE, SOURCE, docs, expect, one_issue

from shoal.api import Elasticity, Resources
from shoal.api.services import DAY, QuietWindow, Service, parse_time_of_day
from shoal.spec import load_text

NIGHT = 'service: {schedule: [{from: "22:00", to: "07:00", replicas: 1}]}'


def with_spec(line: str, job: str = JOB) -> str:
    return job.replace("spec:\n", f"spec:\n  {line}\n")


def test_kind_service_is_a_production_service_that_is_not_preemptable() -> None:
    job = load_text(JOB.replace("kind: Job", "kind: Service"), SOURCE).jobs[0]
    assert job.service == Service()
    assert (job.priority_class, job.preemptable, job.evictable) == ("production", False, False)
    assert job.elastic is None


def test_spec_service_true_and_a_named_priority_class() -> None:
    job = load_text(with_spec("service: true\n  priorityClassName: normal"), SOURCE).jobs[0]
    assert job.service == Service()
    assert job.priority_class == "normal"
    assert load_text(JOB, SOURCE).jobs[0].service is None
    assert load_text(with_spec("service: false"), SOURCE).jobs[0].service is None


def test_a_schedule_makes_the_service_elastic_down_to_its_quietest_window() -> None:
    job = load_text(with_spec(NIGHT), SOURCE).jobs[0]
    assert job.service == Service("worker", (QuietWindow(22 * 3600, 7 * 3600, 1),), 900.0)
    assert job.elastic == Elasticity("worker", 1, 4)
    hand_back = load_text(with_spec(NIGHT.replace("]}", "], handBack: 5m}")), SOURCE).jobs[0]
    assert hand_back.service is not None and hand_back.service.hand_back == 300.0


@pytest.mark.parametrize(("line", "path", "fragment"), [
    ('service: {schedule: [{from: "25:00", to: "07:00", replicas: 1}]}',
     "spec.service.schedule[0].from", "between 00:00 and 23:59:59"),
    ('service: {schedule: [{from: "22:00", to: "7am", replicas: 1}]}',
     "spec.service.schedule[0].to", "HH:MM"),
    ('service: {schedule: [{from: "22:00", to: "22:00", replicas: 1}]}',
     "spec.service.schedule[0].to", "must differ from `from`"),
    ('service: {schedule: [{from: "22:00", to: "07:00", replicas: 9}]}',
     "spec.service.schedule[0].replicas", "at most the replicas of task group 'worker' (4)"),
    ('service: {schedule: [{from: "22:00", to: "22:10", replicas: 1}]}',
     "spec.service.handBack", "must be shorter than schedule[0]"),
    ('service: {schedule: [{from: "22:00", to: "07:00", replicas: 1}, '
     '{from: "06:00", to: "08:00", replicas: 2}]}',
     "spec.service.schedule[1].from", "overlaps schedule[0]"),
    ('service: {taskGroup: ps, schedule: [{from: "22:00", to: "07:00", replicas: 1}]}',
     "spec.service.taskGroup", "names no task group of this job"),
    ('service: {handBack: -1}', "spec.service.handBack", "must not be negative"),
    (NIGHT + "\n  elastic: {minReplicas: 2}", "spec.elastic", "sized by it"),
    (NIGHT + "\n  preemptable: true", "spec.preemptable", "never preempted"),
    (NIGHT + "\n  schedulerName: shoal\n  minAvailable: 2", "spec.minAvailable",
     "at most the quietest window's replicas (1)"),
])
def test_service_errors_name_their_field(line: str, path: str, fragment: str) -> None:
    expect(one_issue(with_spec(line)), f"{JOB_1}{path}: ", fragment)


def test_a_service_document_cannot_say_it_is_not_one() -> None:
    text = with_spec("service: false", JOB.replace("kind: Job", "kind: Service"))
    expect(one_issue(text), f"{SOURCE}: document 1 (Service 'train-a'): spec.service: ",
           "a Service document is a service")


def test_node_reserved_is_subtracted_from_what_it_offers() -> None:
    text = NODE + "status:\n  reserved: {gpu: 3, cpu: 10}\n"
    node = load_text(text, SOURCE).nodes[0]
    assert node.reserved == Resources(cpu=10_000, gpu=3)
    assert node.allocatable_resources.gpu == 5
    assert node.allocatable_resources.cpu == 54_000


def test_node_reserved_beyond_its_capacity_is_an_error() -> None:
    text = NODE + "status:\n  reserved: {gpu: 9}\n"
    expect(one_issue(text), f"{SOURCE}: document 1 (Node 'n1'): status.reserved: ",
           "must fit in the node's allocatable", "gpu 9 > 8")
    expect(one_issue(NODE + "status:\n  reserved: {gpu: many}\n"),
           f"{SOURCE}: document 1 (Node 'n1'): status.reserved.gpu: ")


def test_a_node_and_a_service_load_together() -> None:
    bundle = load_text(docs(NODE, with_spec(NIGHT)), SOURCE)
    assert bundle.jobs[0].service is not None


# ---- the clock ---------------------------------------------------------------------------

def test_time_of_day() -> None:
    assert parse_time_of_day("07:30") == 7 * 3600 + 1800
    assert parse_time_of_day("23:59:59") == DAY - 1
    for bad in ("24:00", "7:30", "07:60", "", "07:30:00:00"):
        with pytest.raises(ValueError):
            parse_time_of_day(bad)


def test_need_follows_the_windows_with_the_hand_back() -> None:
    night = Service("w", (QuietWindow(22 * 3600, 7 * 3600, 1),), hand_back=900)
    day = 3 * DAY  # any day: the windows repeat
    assert night.need(day + 12 * 3600, 4) == 4
    assert night.need(day + 22 * 3600, 4) == 1
    assert night.need(day + 3 * 3600, 4) == 1
    assert night.need(day + 7 * 3600 - 901, 4) == 1
    assert night.need(day + 7 * 3600 - 900, 4) == 4  # hand-back: full size before 07:00
    assert night.next_change(day + 12 * 3600) == day + 22 * 3600
    assert night.next_change(day + 22 * 3600) == day + DAY + 7 * 3600 - 900
    assert night.next_change(day + 3 * 3600) == day + 7 * 3600 - 900
    assert Service().next_change(day) is None


def test_every_change_of_need_is_at_a_boundary() -> None:
    windows = (QuietWindow(3600, 7200, 2), QuietWindow(80_000, 1000, 1))
    service = Service("w", windows, hand_back=300)
    t = 0.0
    while t < 2 * DAY:
        following = service.next_change(t)
        assert following is not None and following > t
        probe = t + (following - t) / 2
        assert service.need(probe, 5) == service.need(t, 5)  # steady in between
        t = following
