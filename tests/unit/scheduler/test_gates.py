"""`shoal.scheduler.gates`: which jobs may enter the scheduler's model (dependsOn, holds),
what a job's end opens or cancels, and what a submission's dependencies may name."""

from __future__ import annotations

import pytest

from shoal.api import Job, JobState, PendingKind, Resources, TaskGroup
from shoal.core.snapshot import SnapshotError
from shoal.scenario import run_scenario
from shoal.scheduler.gates import Gate, Gates, dependency_issues
from shoal.spec import load_text


def job(name: str, *deps: str, held: bool = False) -> Job:
    return Job(name=name, groups=(TaskGroup("w", 1, Resources.of(cpu=1000)),),
               depends_on=deps, held=held)


def states(**given: JobState) -> dict[str, JobState]:
    return dict(given)


def test_a_job_without_gates_or_with_succeeded_dependencies_enters_at_once() -> None:
    gates = Gates()
    assert gates.admit(job("a"), {}.get).gate is Gate.OPEN
    assert gates.admit(job("b", "a"), states(a=JobState.SUCCEEDED).get).gate is Gate.OPEN
    assert len(gates) == 0


def test_a_job_waits_for_its_dependency_and_opens_when_it_succeeds() -> None:
    gates = Gates()
    assert gates.admit(job("b", "a"), states(a=JobState.RUNNING).get).gate is Gate.CLOSED
    reason = gates.reason("b")
    assert reason is not None and reason.kind is PendingKind.DEPENDENCY
    assert reason.message == "waiting for job 'a' to succeed"
    assert gates.ended("a", JobState.SUCCEEDED).opened == ("b",)
    assert "b" not in gates and gates.reason("b") is None


def test_every_dependency_must_succeed_and_the_reason_names_the_first_left() -> None:
    gates = Gates()
    pending = states(a=JobState.PENDING, b=JobState.PENDING)
    gates.admit(job("c", "a", "b"), pending.get)
    assert gates.reason("c").message == "waiting for job 'a' to succeed (and 1 more)"  # type: ignore[union-attr]
    assert gates.ended("a", JobState.SUCCEEDED).opened == ()
    assert gates.reason("c").message == "waiting for job 'b' to succeed"  # type: ignore[union-attr]
    assert gates.ended("b", JobState.SUCCEEDED).opened == ("c",)


def test_a_failed_dependency_cancels_its_dependents_transitively_in_order() -> None:
    gates = Gates()
    live = states(a=JobState.RUNNING, b=JobState.PENDING, c=JobState.PENDING,
                  x=JobState.PENDING)
    gates.admit(job("b", "a"), live.get)
    gates.admit(job("x", "a"), live.get)
    gates.admit(job("c", "b"), live.get)
    gates.admit(job("d", "c", "x"), live.get)
    resolution = gates.ended("a", JobState.FAILED)
    assert resolution.opened == ()
    assert resolution.cancelled == (
        ("b", "dependency 'a' ended Failed"), ("x", "dependency 'a' ended Failed"),
        ("c", "dependency 'b' ended Cancelled"), ("d", "dependency 'x' ended Cancelled"))
    assert len(gates) == 0
    assert gates.ended("b", JobState.CANCELLED).cancelled == ()  # already applied


def test_a_dependency_that_ended_badly_or_is_gone_cancels_at_admission() -> None:
    gates = Gates()
    verdict = gates.admit(job("b", "a"), states(a=JobState.CANCELLED).get)
    assert (verdict.gate, verdict.cause) == (Gate.CANCEL, "dependency 'a' ended Cancelled")
    gone = gates.admit(job("b", "zz"), {}.get)
    assert gone.gate is Gate.CANCEL and "'zz' no longer exists" in gone.cause
    assert len(gates) == 0


def test_a_held_job_waits_until_released_even_with_its_dependencies_met() -> None:
    gates = Gates()
    assert gates.admit(job("b", "a", held=True), states(a=JobState.RUNNING).get).gate \
        is Gate.CLOSED
    assert gates.reason("b").kind is PendingKind.HELD  # type: ignore[union-attr]
    assert gates.ended("a", JobState.SUCCEEDED).opened == ()
    assert gates.release("b")
    assert "b" not in gates


def test_release_before_the_dependencies_succeeded_leaves_it_waiting_for_them() -> None:
    gates = Gates()
    gates.admit(job("b", "a"), states(a=JobState.RUNNING).get)
    gates.hold(job("b", "a"))
    assert gates.held("b")
    assert not gates.release("b")
    assert gates.reason("b").kind is PendingKind.DEPENDENCY  # type: ignore[union-attr]
    assert gates.ended("a", JobState.SUCCEEDED).opened == ("b",)


def test_a_held_job_is_still_cancelled_when_its_dependency_fails() -> None:
    gates = Gates()
    gates.admit(job("b", "a", held=True), states(a=JobState.RUNNING).get)
    assert gates.ended("a", JobState.FAILED).cancelled == (("b", "dependency 'a' ended Failed"),)


def test_holding_a_job_of_the_model_gates_it_until_release() -> None:
    gates = Gates()
    gates.hold(job("a"))
    assert "a" in gates and gates.reason("a").kind is PendingKind.HELD  # type: ignore[union-attr]
    assert gates.release("a") and not gates.release("a")


def test_submission_checks_name_the_dependency_and_allow_jobs_submitted_together() -> None:
    stored = states(done=JobState.SUCCEEDED, bad=JobState.FAILED, live=JobState.RUNNING)
    ok = [job("x", "done", "live", "y"), job("y")]
    assert dependency_issues(ok, stored) == []
    issues = dependency_issues([job("x", "live", "nope", "x", "bad")], stored)
    assert [(i.path, i.message) for i in issues] == [
        ("spec.dependsOn[1]", "no job 'nope'"),
        ("spec.dependsOn[2]", "a job cannot depend on itself"),
        ("spec.dependsOn[3]", "job 'bad' ended Failed: this job could never start")]


def test_a_cycle_among_jobs_submitted_together_is_refused_where_it_closes() -> None:
    issues = dependency_issues([job("a", "c"), job("b", "a"), job("c", "b")], {})
    assert len(issues) == 1
    assert issues[0].message == "a dependency cycle: a -> c -> b -> a"
    assert (issues[0].job, issues[0].path) == (1, "spec.dependsOn[0]")


def test_shoal_schedule_refuses_a_dependency_on_no_job_of_the_scenario() -> None:
    bundle = load_text("""\
apiVersion: shoal/v1
kind: Node
metadata: {name: n}
spec: {capacity: {cpu: 4}}
---
apiVersion: shoal/v1
kind: Job
metadata: {name: b}
spec:
  dependsOn: [ghost]
  taskGroups: [{name: w, replicas: 1, resources: {cpu: 1}}]
""", "scenario.yaml")
    with pytest.raises(SnapshotError, match=r"job 'b': spec.dependsOn\[0\]: no job 'ghost' "
                                            "in the scenario"):
        run_scenario(bundle)
