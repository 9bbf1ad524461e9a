"""`PriorityTable.may_preempt`: a job may evict others to start unless its priority class —
named, or the global default for a job that names none — says `preemptionPolicy: Never`."""

from __future__ import annotations

from shoal.api import Job, PriorityClass, Resources, TaskGroup
from shoal.api.queue_policy import PreemptionPolicy
from shoal.core.snapshot import PriorityTable

NEVER = PreemptionPolicy.NEVER


def job(priority_class: str | None) -> Job:
    return Job("j", (TaskGroup("w", 1, Resources.of(gpu=1)),), priority_class=priority_class)


def test_built_in_classes_preempt() -> None:
    table = PriorityTable()
    assert all(table.may_preempt(job(name))
               for name in (None, "experiment", "offline", "normal", "production"))


def test_a_class_that_says_never_does_not() -> None:
    table = PriorityTable([PriorityClass("patient", 5000, preemption_policy=NEVER)])
    assert not table.may_preempt(job("patient"))
    assert table.may_preempt(job("production"))
    assert table.may_preempt(job(None))  # the default is still `normal`


def test_a_job_naming_no_class_follows_the_global_default() -> None:
    table = PriorityTable([PriorityClass("patient", 5000, global_default=True,
                                         preemption_policy=NEVER)])
    assert not table.may_preempt(job(None))
    assert table.may_preempt(job("normal"))


def test_a_built_in_class_redefined_as_never() -> None:
    table = PriorityTable([PriorityClass("normal", 1000, global_default=True,
                                         preemption_policy=NEVER)])
    assert not table.may_preempt(job("normal"))
    assert not table.may_preempt(job(None))
    assert table.may_preempt(job("production"))
