"""A TrainingJob's completion (seed 002, step 4): a task group with Volcano's policy
`TaskCompleted → CompleteJob` ends the job SUCCEEDED once its tasks have ended, whatever
its other groups (a master and parameter servers that never exit) do."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Elasticity, Job, Resources, Task, TaskGroup, TaskState
from shoal.control.completion import Verdict, judge

S, F, R, P, C, B = (TaskState.SUCCEEDED, TaskState.FAILED, TaskState.RUNNING,
                    TaskState.PENDING, TaskState.CANCELLED, TaskState.BOUND)
CPU = Resources.of(cpu=1)


def training_job(master: list[TaskState], pservers: list[TaskState],
                 trainers: list[TaskState], *, completes: bool = True,
                 elastic: Elasticity | None = None, min_failed: int | None = None) -> Job:
    groups = (TaskGroup("master", len(master), CPU), TaskGroup("pserver", len(pservers), CPU),
              TaskGroup("trainer", len(trainers), CPU, completes_job=completes))
    tasks = tuple(Task("tj", g, i, state=s)
                  for g, states in (("master", master), ("pserver", pservers),
                                    ("trainer", trainers))
                  for i, s in enumerate(states))
    return Job("tj", groups, tasks=tasks, elastic=elastic, min_failed=min_failed)


def test_trainers_done_end_the_job_while_master_and_pservers_run() -> None:
    decision = judge(training_job([R], [R, R], [S, S]))
    assert decision.verdict is Verdict.SUCCEED
    assert decision.cause == ("task group 'trainer' completed (2 of its tasks succeeded; "
                              "its policy TaskCompleted: CompleteJob)")


def test_without_the_policy_the_job_waits_for_every_task() -> None:
    assert judge(training_job([R], [R, R], [S, S], completes=False)).verdict \
        is Verdict.NOTHING


def test_a_trainer_still_running_or_pending_is_waited_for() -> None:
    assert judge(training_job([R], [R, R], [S, R])).verdict is Verdict.NOTHING
    assert judge(training_job([R], [R, R], [S, P])).verdict is Verdict.NOTHING
    assert judge(training_job([R], [R, R], [S, B])).verdict is Verdict.NOTHING


def test_an_elastic_trainer_group_does_not_wait_for_surplus_never_placed() -> None:
    """Trainers min 2 max 4 that trained at 3: the fourth was never grown into."""
    elastic = Elasticity("trainer", 2, 4)
    assert judge(training_job([R], [R], [S, S, S, P], elastic=elastic)).verdict \
        is Verdict.SUCCEED
    # A grown surplus trainer that still runs is waited for; a guaranteed pending one too.
    assert judge(training_job([R], [R], [S, S, R, P], elastic=elastic)).verdict \
        is Verdict.NOTHING
    assert judge(training_job([R], [R], [S, P, P, P], elastic=elastic)).verdict \
        is Verdict.NOTHING


def test_failure_is_judged_first() -> None:
    assert judge(training_job([R], [F, R], [S, S])).verdict is Verdict.FAIL
    # A trainer failed below minFailed has ended: the group completes with the others.
    assert judge(training_job([R], [R], [S, F, S], min_failed=2)).verdict is Verdict.SUCCEED
    # Only failures: the job fails, it never "completes".
    assert judge(training_job([R], [R], [F], min_failed=1)).verdict is Verdict.FAIL


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([S, R, P, B]), min_size=1, max_size=3),
       st.lists(st.sampled_from([S, R, P, B]), min_size=1, max_size=3),
       st.lists(st.sampled_from([S, R, P, B, C]), min_size=1, max_size=5))
def test_the_policy_succeeds_exactly_when_every_trainer_ended_one_succeeded(
        master: list[TaskState], pservers: list[TaskState], trainers: list[TaskState]) -> None:
    """No failures here: the job succeeds iff the trainers all ended and one succeeded, or
    (the old rule) every task succeeded."""
    decision = judge(training_job(master, pservers, trainers))
    trainers_done = all(s.terminal for s in trainers) and S in trainers
    everything = all(s is S for s in master + pservers + trainers)
    every_ended = all(s.terminal for s in master + pservers + trainers)
    expected = Verdict.SUCCEED if trainers_done or everything or every_ended else Verdict.NOTHING
    assert decision.verdict is expected
