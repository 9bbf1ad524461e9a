"""Issue 16's queue fields as documents write them, and the errors that name them."""

from __future__ import annotations

from spec_helpers import JOB, JOB_1, SOURCE, docs, expect, issues, one_issue, vc, yaml

from shoal.api import ResourceLimit
from shoal.api.queue_policy import (
    BorrowPolicy,
    PreemptionPolicy,
    QueueStatus,
    ReclaimWithinParent,
    WithinQueue,
)
from shoal.spec import load_text

GANG = JOB.replace("spec:\n", "spec:\n  schedulerName: shoal\n")


def test_a_virtual_clusters_queue_fields_are_read() -> None:
    text = vc("team", """
        state: Closed
        priority: 7
        flexibleResourceMin: {gpu: 8}
        borrowingLimit: {gpu: 4}
        lendingLimit: {gpu: 2}
        preemption:
          withinQueue: LowerOrNewerEqualPriority
          reclaimWithinParent: LowerPriority
          borrowWithinParent: {policy: LowerPriority, maxPriorityThreshold: 100}""".replace(
        "\n", "\n  "))
    team = next(v for v in load_text(text, SOURCE).virtual_clusters if v.name == "team")
    assert (team.state, team.priority) == (QueueStatus.CLOSED, 7)
    assert team.preemption.within_queue is WithinQueue.LOWER_OR_NEWER_EQUAL_PRIORITY
    assert team.preemption.reclaim_within_parent is ReclaimWithinParent.LOWER_PRIORITY
    assert team.preemption.borrow_within_parent.policy is BorrowPolicy.LOWER_PRIORITY
    assert team.preemption.borrow_within_parent.max_priority_threshold == 100
    assert team.borrowing_limit == ResourceLimit.of({"gpu": 4})
    assert team.lending_limit == ResourceLimit.of({"gpu": 2})


def test_bad_queue_fields_are_named() -> None:
    lines = [str(i) for i in issues(vc("team", """
        flexibleResourceMin: {gpu: 2}
        lendingLimit: {gpu: 3}
        borrowingLimit: {gpu: lots}
        state: Paused
        preemption: {borrowWithinParent: {maxPriorityThreshold: 5}}""".replace("\n", "\n  ")))]
    where = f"{SOURCE}: document 1 (VirtualCluster 'team'): "
    assert any(line.startswith(f"{where}spec.state: ") and "'Open' or 'Closed'" in line
               for line in lines), lines
    text = vc("team", """
        flexibleResourceMin: {gpu: 2}
        lendingLimit: {gpu: 3}
        borrowingLimit: {gpu: lots}
        preemption: {borrowWithinParent: {maxPriorityThreshold: 5}}""".replace("\n", "\n  "))
    lines = [str(i) for i in issues(text)]
    assert len(lines) == 3, lines
    expect(lines[0], f"{where}spec.preemption.borrowWithinParent.maxPriorityThreshold: ",
           "only means something with policy LowerPriority")
    expect(lines[1], f"{where}spec.borrowingLimit.gpu: ")
    expect(lines[2], f"{where}spec.lendingLimit: ", "at most the guarantee", "gpu 3 > 2")


def test_preemptable_by_field_or_annotation() -> None:
    job = load_text(GANG.replace("spec:\n", "spec:\n  preemptable: false\n"), SOURCE).jobs[0]
    assert job.preemptable is False
    noted = GANG.replace("{name: train-a}",
                         "{name: train-a, annotations: {volcano.sh/preemptable: 'false'}}")
    assert load_text(noted, SOURCE).jobs[0].preemptable is False
    assert load_text(GANG, SOURCE).jobs[0].preemptable is True
    both = noted.replace("spec:\n", "spec:\n  preemptable: true\n")
    expect(one_issue(both), f"{JOB_1}metadata.annotations.volcano.sh/preemptable: ",
           "spec.preemptable is true")
    bad = noted.replace("'false'", "'no'")
    expect(one_issue(bad), f"{JOB_1}metadata.annotations.volcano.sh/preemptable: ",
           '"true" or "false"')


def test_group_minimums_are_checked() -> None:
    text = GANG.replace("replicas: 4\n", "replicas: 4\n      minAvailable: 2\n      minCount: 3\n")
    group = load_text(text, SOURCE).jobs[0].groups[0]
    assert (group.min_available, group.min_count) == (2, 3)
    over = GANG.replace("replicas: 4\n", "replicas: 4\n      minAvailable: 5\n")
    expect(one_issue(over), f"{JOB_1}spec.taskGroups[0].minAvailable: ",
           "at most the group's replicas (4)")
    not_gang = JOB.replace("replicas: 4\n", "replicas: 4\n      minAvailable: 1\n")
    expect(one_issue(not_gang), f"{JOB_1}spec.taskGroups[0].minAvailable: ",
           "only allowed with schedulerName shoal or volcano")
    below = over.replace("minAvailable: 5", "minAvailable: 3").replace(
        "spec:\n", "spec:\n  minAvailable: 2\n")
    expect(one_issue(below), f"{JOB_1}spec.minAvailable: ",
           "at least the sum of its task groups' minAvailable (3)")
    count = JOB.replace("replicas: 4\n", "replicas: 4\n      minCount: 9\n")
    expect(one_issue(count), f"{JOB_1}spec.taskGroups[0].minCount: ",
           "at most the group's replicas (4)")
    short = GANG.replace("replicas: 4\n", "replicas: 4\n      minAvailable: 3\n      minCount: 2\n")
    expect(one_issue(short), f"{JOB_1}spec.taskGroups[0].minCount: ",
           "at least the group's minAvailable (3)")
    elastic = GANG.replace("replicas: 4\n", "replicas: 4\n      minAvailable: 3\n") \
        + "  elastic: {minReplicas: 2}\n"
    expect(one_issue(elastic), f"{JOB_1}spec.taskGroups[0].minAvailable: ",
           "at most spec.elastic's minReplicas (2)")


def test_a_priority_class_that_never_preempts() -> None:
    text = docs(yaml("""
        apiVersion: shoal/v1
        kind: PriorityClass
        metadata: {name: batch}
        value: 5
        preemptionPolicy: Never
        """), JOB)
    batch = next(p for p in load_text(text, SOURCE).priority_classes if p.name == "batch")
    assert batch.preemption_policy is PreemptionPolicy.NEVER
