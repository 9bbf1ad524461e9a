"""The pure completion decision (`shoal.control.completion`): OpenPAI's minSucceeded /
minFailed, in-place task retries and whole-job retries, by example and by property."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from shoal.api import (
    Elasticity,
    FailureAction,
    FailureEvent,
    Job,
    Resources,
    SchedulerName,
    Task,
    TaskGroup,
    TaskRef,
    TaskState,
)
from shoal.control.completion import (
    Verdict,
    after_retry,
    judge,
    on_failure,
    restarts_whole,
    task_states,
)

S, F, R, P, C = (TaskState.SUCCEEDED, TaskState.FAILED, TaskState.RUNNING,
                 TaskState.PENDING, TaskState.CANCELLED)


def job(states: list[TaskState], *, min_succeeded: int | None = None,
        min_failed: int | None = None, job_retry_count: int = 0, retries: int = 0,
        task_retry_count: int = 0, group_min: int | None = None,
        task_retries: int = 0) -> Job:
    group = TaskGroup("worker", len(states), Resources.of(cpu=1), task_retry_count=task_retry_count,
                      min_succeeded=group_min)
    tasks = tuple(Task("j", "worker", i, state=s, retries=task_retries)
                  for i, s in enumerate(states))
    return Job("j", (group,), min_succeeded=min_succeeded, min_failed=min_failed,
               job_retry_count=job_retry_count, retries=retries, tasks=tasks)


REF0 = TaskRef("j", "worker", 0)


# ---- examples -------------------------------------------------------------------------------

def test_default_rule_is_all_succeed_first_failure_fails() -> None:
    assert judge(job([S, R])).verdict is Verdict.NOTHING
    assert judge(job([S, S])).verdict is Verdict.SUCCEED
    decision = on_failure(job([R, R]), REF0, "exit code 2")
    assert decision.verdict is Verdict.FAIL
    assert decision.cause == "1 task failed (minFailed 1); task j/worker/0 failed: exit code 2"


def test_task_retry_counts_up_then_gives_up() -> None:
    first = on_failure(job([R, R], task_retry_count=3), REF0, "exit code 2")
    assert (first.verdict, first.cause, first.task) == \
        (Verdict.RETRY_TASK, "retry 1/3 after exit code 2", REF0)
    third = on_failure(job([R, R], task_retry_count=3, task_retries=2), REF0, "signal 9")
    assert third.cause == "retry 3/3 after signal 9"
    assert on_failure(job([R, R], task_retry_count=3, task_retries=3), REF0,
                      "a lost process").verdict is Verdict.FAIL


def test_min_succeeded_ends_the_job_early() -> None:
    decision = judge(job([S, R, R], min_succeeded=1))
    assert decision.verdict is Verdict.SUCCEED
    assert decision.cause == "1 of 3 tasks succeeded (minSucceeded 1)"


def test_group_min_succeeded() -> None:
    decision = judge(job([S, S, R], group_min=2))
    assert decision.verdict is Verdict.SUCCEED and "group 'worker'" in decision.cause
    assert judge(job([S, R, R], group_min=2)).verdict is Verdict.NOTHING


def test_min_failed_survives_the_first_failure() -> None:
    assert on_failure(job([R, R, R], min_failed=2), REF0, "exit code 1").verdict \
        is Verdict.NOTHING
    assert on_failure(job([R, F, R], min_failed=2), REF0, "exit code 1").verdict is Verdict.FAIL


def test_every_task_ended_below_min_failed_succeeds() -> None:
    decision = judge(job([F, S, S], min_failed=2))
    assert decision.verdict is Verdict.SUCCEED
    assert decision.cause == "every task ended: 2 succeeded, 1 failed (below minFailed 2)"


def test_job_retry_then_failure() -> None:
    decision = on_failure(job([R, R], job_retry_count=2, retries=1), REF0, "exit code 2")
    assert decision.verdict is Verdict.RETRY_JOB
    assert decision.cause.startswith("job retry 2/2: 1 task failed")
    final = on_failure(job([R, R], job_retry_count=2, retries=2), REF0, "exit code 2")
    assert final.verdict is Verdict.FAIL and final.cause.endswith("after 2 job retries")


def test_task_retries_come_before_job_retries() -> None:
    decision = on_failure(job([R, R], job_retry_count=5, task_retry_count=1), REF0, "x")
    assert decision.verdict is Verdict.RETRY_TASK


def _gang(states: list[TaskState], **kw: int) -> Job:
    return replace(job(states, **kw), scheduler_name=SchedulerName.SHOAL)


def test_a_lost_gang_member_restarts_the_gang() -> None:
    decision = on_failure(_gang([R, R, R], task_retry_count=3), REF0, "a lost process",
                          lost="its node died")
    assert (decision.verdict, decision.cause, decision.task) == \
        (Verdict.RESTART_GANG, "gang restarted: task j/worker/0 was lost (its node died); "
                               "retry 1/3", REF0)
    quiet = on_failure(_gang([R, TaskState.BOUND], task_retry_count=1), REF0, "a lost process",
                       lost="")
    assert quiet.cause == "gang restarted: task j/worker/0 was lost; retry 1/1"


def test_only_a_loss_of_a_rigid_gang_with_live_peers_restarts_it() -> None:
    gang = _gang([R, R, R], task_retry_count=1)
    assert restarts_whole(gang)
    # An exit is retried in place (OpenPAI's rule), as is a loss in every other case.
    assert on_failure(gang, REF0, "exit code 2").verdict is Verdict.RETRY_TASK
    alone = [job([R, R, R], task_retry_count=1),  # placed task by task
             replace(gang, min_available=1),
             replace(gang, elastic=Elasticity("worker", 2, 3)),
             _gang([R, S, F], task_retry_count=1, min_failed=2),  # no peer holds anything
             _gang([R, P, P], task_retry_count=1)]
    for other in alone:
        assert on_failure(other, REF0, "a lost process", lost="gone").verdict \
            is Verdict.RETRY_TASK, other
    assert not restarts_whole(alone[0]) and not restarts_whole(alone[1]) \
        and not restarts_whole(alone[2])
    # Past its retries, the job's rules apply.
    spent = _gang([R, R, R], task_retry_count=1, task_retries=1, job_retry_count=1)
    assert on_failure(spent, REF0, "a lost process", lost="gone").verdict is Verdict.RETRY_JOB
    assert on_failure(replace(spent, retries=1), REF0, "a lost process", lost="gone").verdict \
        is Verdict.FAIL


def _policies(j: Job, event: FailureEvent, action: FailureAction) -> Job:
    return replace(j, groups=tuple(replace(g, policies={event: action}) for g in j.groups))


def test_policies_opt_exits_in_and_losses_out() -> None:
    gang = _gang([R, R, R], task_retry_count=2)
    exits = _policies(gang, FailureEvent.TASK_FAILED, FailureAction.RESTART_GANG)
    decision = on_failure(exits, REF0, "exit code 2")
    assert (decision.verdict, decision.cause) == \
        (Verdict.RESTART_GANG, "gang restarted: task j/worker/0 failed (exit code 2); retry 1/2")
    assert on_failure(exits, REF0, "a lost process", lost="").verdict is Verdict.RESTART_GANG
    losses = _policies(gang, FailureEvent.TASK_LOST, FailureAction.RESTART_TASK)
    assert on_failure(losses, REF0, "a lost process", lost="gone").verdict \
        is Verdict.RETRY_TASK
    assert on_failure(losses, REF0, "exit code 2").verdict is Verdict.RETRY_TASK
    # Opted in, a job that is no rigid gang still retries in place.
    single = _policies(job([R, R], task_retry_count=1), FailureEvent.TASK_FAILED,
                       FailureAction.RESTART_GANG)
    assert on_failure(single, REF0, "exit code 2").verdict is Verdict.RETRY_TASK


def test_tasks_without_records_are_pending() -> None:
    bare = Job("j", (TaskGroup("worker", 2, Resources.of(cpu=1)),))
    assert set(task_states(bare).values()) == {P}
    assert judge(bare).verdict is Verdict.NOTHING


# ---- properties -----------------------------------------------------------------------------

STATES = st.lists(st.sampled_from([S, F, R, P, TaskState.BOUND]), min_size=1, max_size=8)


@st.composite
def policies(draw: st.DrawFn) -> Job:
    states = draw(STATES)
    n = len(states)
    optional = st.none() | st.integers(1, n)
    job_retry_count = draw(st.integers(0, 3))
    return job(states, min_succeeded=draw(optional), min_failed=draw(optional),
               job_retry_count=job_retry_count, retries=draw(st.integers(0, job_retry_count)),
               task_retry_count=draw(st.integers(0, 3)), group_min=draw(optional),
               task_retries=draw(st.integers(0, 3)))


def _counts(j: Job) -> tuple[int, int]:
    states = list(task_states(j).values())
    return states.count(S), states.count(F)


@given(policies())
def test_judge_follows_the_thresholds(j: Job) -> None:
    decision = judge(j)
    succeeded, failed = _counts(j)
    assert decision.verdict is not Verdict.RETRY_TASK
    if failed >= j.failure_threshold:
        expected = Verdict.RETRY_JOB if j.retries < j.job_retry_count else Verdict.FAIL
        assert decision.verdict is expected
    elif decision.verdict is Verdict.SUCCEED:
        group_met = j.groups[0].min_succeeded is not None and \
            succeeded >= j.groups[0].min_succeeded
        all_ended = all(s.terminal for s in task_states(j).values())
        assert succeeded >= j.success_threshold or group_met or all_ended
    else:
        assert decision.verdict is Verdict.NOTHING
        assert succeeded < j.success_threshold
        assert any(not s.terminal for s in task_states(j).values())
    assert decision.verdict is Verdict.NOTHING or decision.cause


@given(policies(), st.data())
def test_a_failure_is_retried_in_place_exactly_while_allowed(j: Job, data: st.DataObject
                                                              ) -> None:
    index = data.draw(st.integers(0, j.replicas - 1))
    ref = TaskRef("j", "worker", index)
    j = replace(j, tasks=tuple(replace(t, state=R) if t.index == index else t for t in j.tasks))
    decision = on_failure(j, ref, "exit code 1")
    retries = j.tasks[index].retries
    if retries < j.groups[0].task_retry_count:
        assert decision.verdict is Verdict.RETRY_TASK and decision.task == ref
        assert decision.cause == f"retry {retries + 1}/{j.groups[0].task_retry_count} " \
                                 "after exit code 1"
    else:
        failed = replace(j, tasks=tuple(replace(t, state=F) if t.index == index else t
                                        for t in j.tasks))
        assert decision.verdict is judge(failed).verdict


@given(STATES)
def test_without_a_policy_the_old_rule_holds(states: list[TaskState]) -> None:
    verdict = judge(job(states)).verdict
    if F in states:
        assert verdict is Verdict.FAIL
    elif all(s is S for s in states):
        assert verdict is Verdict.SUCCEED
    else:
        assert verdict is Verdict.NOTHING


@given(st.lists(st.sampled_from([S, F, C]), min_size=1, max_size=8))
def test_a_job_whose_tasks_all_ended_is_decided(states: list[TaskState]) -> None:
    assert judge(job(states, min_failed=len(states))).verdict is not Verdict.NOTHING


def test_an_elastic_job_does_not_wait_for_surplus_it_never_ran() -> None:
    """Seed 001: a job that trained at 2 of its 4 allowed workers ends when those 2 have."""
    elastic = replace(job([S, R, P, P]), elastic=Elasticity("worker", 2, 4))
    assert judge(elastic).verdict is Verdict.NOTHING  # worker 1 still runs
    done = replace(job([S, S, P, P]), elastic=Elasticity("worker", 2, 4))
    decision = judge(done)
    assert decision.verdict is Verdict.SUCCEED
    assert decision.cause.startswith("every task ended: 2 succeeded")
    # A guaranteed task that is pending is waited for; a rigid job waits for every task.
    assert judge(replace(job([S, P, P, P]), elastic=Elasticity("worker", 2, 4))).verdict \
        is Verdict.NOTHING
    assert judge(job([S, S, P, P])).verdict is Verdict.NOTHING
    # A grown surplus task that runs is waited for, and its failure counts.
    grown = replace(job([S, S, R, P]), elastic=Elasticity("worker", 2, 4))
    assert judge(grown).verdict is Verdict.NOTHING
    assert on_failure(grown, TaskRef("j", "worker", 2), "exit code 1").verdict is Verdict.FAIL


def test_an_elastic_surplus_task_retried_after_its_minimum_succeeded_is_not_waited_for() -> None:
    """Rank 0 (the minimum of 1) succeeded while surplus worker 1 ran; worker 1 fails and
    is retried in place: PENDING surplus is not waited for, so its retry ends the job."""
    one = TaskRef("j", "worker", 1)
    ran = replace(job([S, R], task_retry_count=1), elastic=Elasticity("worker", 1, 2))
    assert on_failure(ran, one, "exit code 1").verdict is Verdict.RETRY_TASK
    decision = after_retry(ran, one)
    assert decision.verdict is Verdict.SUCCEED
    assert decision.cause == ("every task ended: 1 succeeded, 0 failed (below minFailed 1); "
                              "surplus task j/worker/1, retried, is not waited for")
    # While a guaranteed task still runs, the job goes on (and may grow into it again).
    going = replace(job([R, R], task_retry_count=1), elastic=Elasticity("worker", 1, 2))
    assert after_retry(going, one).verdict is Verdict.NOTHING
    # A retried guaranteed task is waited for; so is every task of a rigid job.
    assert after_retry(replace(job([R, S], task_retry_count=1),
                               elastic=Elasticity("worker", 1, 2)), REF0).verdict \
        is Verdict.NOTHING
    assert after_retry(job([S, R], task_retry_count=1), one).verdict is Verdict.NOTHING
