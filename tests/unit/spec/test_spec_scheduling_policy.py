"""Seed 004's `spec.schedulingPolicy` on Shoal's own Job: the flat fields' meaning, and the
error that names both paths when the two disagree."""

from __future__ import annotations

import pytest
from spec_helpers import JOB, JOB_1, SOURCE, expect, issues, one_issue

from shoal.api import Resources, SchedulerName
from shoal.spec import load_text


def with_spec(lines: str) -> str:
    return JOB.replace("spec:\n", "spec:\n" + "".join(f"  {line}\n"
                                                      for line in lines.splitlines()))


PRIORITY = "apiVersion: shoal/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 10\n"
QUEUE = "apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: edge}\n"


def test_the_block_means_the_flat_fields() -> None:
    block = load_text(PRIORITY + "---\n" + QUEUE + "---\n" + with_spec(
        "schedulerName: volcano\n"
        "schedulingPolicy: {minAvailable: 2, queue: edge, priorityClass: high,\n"
        "  minResources: {cpu: '16', memory: 64Gi}}"), SOURCE).jobs[0]
    flat = load_text(PRIORITY + "---\n" + QUEUE + "---\n" + with_spec(
        "schedulerName: volcano\nminAvailable: 2\nqueue: edge\npriorityClassName: high\n"
        "minResources: {cpu: 16, memory: 64Gi}"), SOURCE).jobs[0]
    assert block == flat
    assert (block.min_available, block.queue, block.priority_class) == (2, "edge", "high")
    assert block.scheduler_name is SchedulerName.SHOAL
    assert block.min_resources == Resources.of(cpu=16_000, memory=64 * 1024)


def test_the_same_value_both_ways_is_fine() -> None:
    job = load_text(QUEUE + "---\n" + with_spec(
        "queue: edge\nschedulerName: shoal\nminAvailable: 4\nminResources: {cpu: 1}\n"
        "schedulingPolicy: {queue: edge, minAvailable: 4, minResources: {cpu: 1000m}}"),
        SOURCE).jobs[0]
    assert (job.queue, job.min_available) == ("edge", 4)


@pytest.mark.parametrize(("block", "flat", "path", "fragments"), [
    ("minAvailable: 2", "minAvailable: 3", "spec.schedulingPolicy.minAvailable",
     ("is 2 but spec.minAvailable is 3",)),
    ("queue: edge", "queue: default", "spec.schedulingPolicy.queue",
     ("'edge' but spec.queue is 'default'",)),
    ("priorityClass: high", "priorityClassName: low", "spec.schedulingPolicy.priorityClass",
     ("'high' but spec.priorityClassName is 'low'",)),
    ("minResources: {cpu: '2'}", "minResources: {cpu: 1}", "spec.schedulingPolicy.minResources",
     ("but spec.minResources is",)),
])
def test_both_given_and_different_names_both_paths(block: str, flat: str, path: str,
                                                    fragments: tuple[str, ...]) -> None:
    line = next(str(i) for i in issues(PRIORITY + "---\n" + QUEUE + "---\n" + with_spec(
        f"schedulerName: shoal\n{flat}\nschedulingPolicy: {{{block}}}"))
        if i.path == path)
    expect(line, f"{SOURCE}: document 3 (Job 'train-a'): {path}: ", *fragments,
           "give one of them")


def test_a_later_check_of_a_value_from_the_block_names_the_block() -> None:
    line = one_issue(with_spec("schedulingPolicy: {minAvailable: 2}"))
    expect(line, f"{JOB_1}spec.schedulingPolicy.minAvailable: ",
           "only allowed with schedulerName shoal or volcano")
    line = one_issue(with_spec("schedulerName: shoal\nschedulingPolicy: {minAvailable: 9}"))
    expect(line, f"{JOB_1}spec.schedulingPolicy.minAvailable: ", "at most the job's total")


def test_unknown_fields_of_the_block_are_refused() -> None:
    line = one_issue(with_spec("schedulingPolicy: {gang: true}"))
    expect(line, f"{JOB_1}spec.schedulingPolicy.gang: ")


def test_without_the_block_nothing_changes() -> None:
    job = load_text(JOB, SOURCE).jobs[0]
    assert (job.queue, job.min_available, job.scheduler_name) == (
        "default", None, SchedulerName.DEFAULT)
