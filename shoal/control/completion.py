"""When a job ends, and what a failed task costs it: OpenPAI's completion and retry rules.

Pure functions of a job as stored (its policy, its tasks' states and retry counts):

- A task that ends badly (non-zero exit, signal, lost process, failed launch) is restarted
  in place while its group's `taskRetryCount` allows (`Verdict.RETRY_TASK`); only then does
  it count as failed.
- Except a lost member of a gang (`restarts_whole`): its peers wait for it in a collective
  that will never complete, so the whole gang is restarted instead (`Verdict.RESTART_GANG`):
  its running and bound tasks are stopped, then every unfinished task is placed again
  together. The retry is charged to the lost task alone, within the same `taskRetryCount`;
  the job's `retries` do not grow. A gang task that *exits* badly is still retried in place
  (OpenPAI's rule): only a loss — the process or its machine vanished, nothing recorded how
  it ended — restarts the gang. A task group's `policies` (Volcano's) change that per event:
  `TaskFailed → RestartGang` opts a group's exits in, `TaskLost → RestartTask` opts its
  losses out. A task whose peers hold nothing (they ended, or wait) has nobody to restart
  with it and is retried in place.
- An online service (`Job.service`) never fails that way: a task of it that ends badly is
  restarted (in place, or with its gang) however often, its `taskRetryCount` only counting
  the first restarts as retries; a service runs until it is cancelled.
- The job fails as soon as `minFailed` tasks have failed (default 1) — unless `jobRetryCount`
  allows another run of the whole job (`Verdict.RETRY_JOB`): everything is stopped and the
  job is scheduled again from scratch, as a gang.
- The job succeeds as soon as `minSucceeded` tasks have succeeded (default: every task), or
  as soon as one task group's own `completion.minSucceeded` of its tasks have, or once a
  group with Volcano's policy `TaskCompleted → CompleteJob` has completed — each of its
  tasks waited for has ended, one at least succeeded (a TrainingJob's trainers: its master
  and parameter servers never end on their own); its other tasks are then stopped.
- When every task has ended and neither threshold was reached (some failed, but fewer than
  `minFailed`), the job succeeds: FrameworkController's rule for a finished attempt.
- An elastic job's surplus tasks that are not running (never grown into, or given up) are
  not waited for: the job has ended when every other task has. A job that trained at four
  of its eight allowed workers succeeds when those four have. A surplus task retried in
  place is PENDING again, so no longer waited for either (`after_retry`): once its rank 0
  — its guaranteed part — has succeeded, the job's training is over, and a retry of its
  surplus (which the elastic action no longer grows into: the job is finishing) does not
  keep it alive.

Failure is checked before success, so a state that meets both (only reachable by editing
the store by hand) fails. The functions read no clock and do no I/O; the control loop
applies their verdicts (`shoal.control.loop`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from shoal.api import FailureAction, FailureEvent, Job, TaskRef, TaskState


class Verdict(StrEnum):
    NOTHING = "nothing"
    """The job goes on."""
    SUCCEED = "succeed"
    """Stop what still runs; the job ends SUCCEEDED."""
    FAIL = "fail"
    """Stop what still runs; the job ends FAILED."""
    RETRY_TASK = "retry-task"
    """Put the failed task back to PENDING; the scheduler places it again."""
    RETRY_JOB = "retry-job"
    """Stop what still runs, then put every task back to PENDING (one job retry more)."""
    RESTART_GANG = "restart-gang"
    """The lost task back to PENDING (one task retry more); stop its peers that still run,
    then put every unfinished task back to PENDING, to be placed again as a gang."""


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    cause: str = ""
    """Why, for the job's event history ("retry 1/3 after exit code 2")."""
    task: TaskRef | None = None
    """The task retried (RETRY_TASK in place, RESTART_GANG with its gang)."""


NOTHING = Decision(Verdict.NOTHING)


def task_states(job: Job) -> dict[TaskRef, TaskState]:
    """Every task of the job and its state; a task with no record is PENDING."""
    states = {TaskRef(job.name, g.name, i): TaskState.PENDING
              for g in job.groups for i in range(g.replicas)}
    states.update({t.ref: t.state for t in job.tasks})
    return states


def restarts_whole(job: Job) -> bool:
    """Whether a lost task of `job` restarts its whole gang: the job is placed as a gang of
    more than one task (`gang_minimum` > 1: scheduler `shoal`, `minAvailable` unset or above
    1) and is not elastic. An elastic job goes on at a smaller size (torchrun
    re-rendezvouses), and a job whose tasks are placed one by one has no gang to restart."""
    return job.gang_minimum > 1 and job.elastic is None


def on_failure(job: Job, ref: TaskRef, how: str, *, lost: str | None = None) -> Decision:
    """Task `ref` of `job` (as stored before its end is recorded) ended badly: `how` says
    how ("exit code 2", "signal 9", "a lost process"). `lost`: the task was lost, and what
    the executor said of it ("its Ray node is gone or unknown"; "" if nothing); None: it
    ended otherwise. Retry it — with its gang when its group's action for the event is
    RestartGang (by default: a loss), the job `restarts_whole` and a peer holds resources,
    else in place — if its group allows or the job is a service, else judge the job with it
    FAILED."""
    retries = next((t.retries for t in job.tasks if t.ref == ref), 0)
    group = job.group(ref.group)
    allowed = group.task_retry_count
    if retries < allowed or job.service is not None:
        retry = (f"retry {retries + 1}/{allowed}" if retries < allowed
                 else f"restart {retries + 1} (a service restarts its failed tasks)")
        event = FailureEvent.TASK_FAILED if lost is None else FailureEvent.TASK_LOST
        if group.action_on(event) is FailureAction.RESTART_GANG and restarts_whole(job) \
                and any(t.ref != ref and t.state.holds_resources for t in job.tasks):
            what = f"failed ({how})" if lost is None else \
                f"was lost ({lost})" if lost else "was lost"
            return Decision(Verdict.RESTART_GANG,
                            f"gang restarted: task {ref} {what}; {retry}", ref)
        return Decision(Verdict.RETRY_TASK, f"{retry} after {how}", ref)
    states = task_states(job)
    states[ref] = TaskState.FAILED
    return judge(job, states, f"task {ref} failed: {how}")


def after_retry(job: Job, ref: TaskRef) -> Decision:
    """What the job decides once task `ref` of `job` (as stored before the retry was
    recorded) is retried in place (`Verdict.RETRY_TASK`): NOTHING, but for an elastic job's
    surplus task, which is PENDING again and so no longer waited for (`judge`). Its retry
    may then be what ends the job: every other task had ended (rank 0 succeeded while this
    one still ran), and the retried task is stopped with the job, never placed."""
    elastic = job.elastic
    if elastic is None or not elastic.is_surplus(ref.group, ref.index):
        return NOTHING
    states = task_states(job)
    states[ref] = TaskState.PENDING
    decision = judge(job, states)
    if decision.verdict is Verdict.NOTHING:
        return decision
    return Decision(decision.verdict, f"{decision.cause}; surplus task {ref}, retried, "
                                      "is not waited for")


def judge(job: Job, states: Mapping[TaskRef, TaskState] | None = None,
          failure: str | None = None) -> Decision:
    """What the tasks' states (by default the job's own) decide for the job: never
    RETRY_TASK nor RESTART_GANG. `failure` describes the latest failure, for the cause."""
    elastic = job.elastic
    if states is None and elastic is None:
        # The thresholds count only FAILED and SUCCEEDED tasks, which only the job's task
        # records hold (`task_states` makes the others PENDING): counted from them alone,
        # without every task's ref made. The rules past the thresholds need every state.
        recorded = {t.ref: t.state for t in job.tasks}
        failed = succeeded = 0
        for state in recorded.values():
            if state is TaskState.FAILED:
                failed += 1
            elif state is TaskState.SUCCEEDED:
                succeeded += 1
        if failed >= job.failure_threshold or succeeded >= job.success_threshold:
            return _thresholds(job, failed, succeeded, failure)
    states = task_states(job) if states is None else states
    if elastic is not None:
        states = {ref: s for ref, s in states.items()
                  if s is not TaskState.PENDING or not elastic.is_surplus(ref.group, ref.index)}
    counts = {s: 0 for s in TaskState}
    for state in states.values():
        counts[state] += 1
    failed, succeeded = counts[TaskState.FAILED], counts[TaskState.SUCCEEDED]
    if failed >= job.failure_threshold or succeeded >= job.success_threshold:
        return _thresholds(job, failed, succeeded, failure)
    for group in job.groups:
        if group.min_succeeded is None:
            continue
        done = sum(1 for ref, s in states.items()
                   if ref.group == group.name and s is TaskState.SUCCEEDED)
        if done >= group.min_succeeded:
            return Decision(Verdict.SUCCEED,
                            f"{done} of {group.replicas} tasks of group {group.name!r} "
                            f"succeeded (its minSucceeded {group.min_succeeded})")
    for group in job.groups:
        if group.completes_job and (done := _group_completed(group.name, states)):
            return Decision(Verdict.SUCCEED,
                            f"task group {group.name!r} completed ({done} of its tasks "
                            "succeeded; its policy TaskCompleted: CompleteJob)")
    if states and all(s.terminal for s in states.values()):
        return Decision(Verdict.SUCCEED,
                        f"every task ended: {succeeded} succeeded, {failed} failed "
                        f"(below minFailed {job.failure_threshold})")
    return NOTHING


def _thresholds(job: Job, failed: int, succeeded: int, failure: str | None) -> Decision:
    """What `judge` decides once `failed` tasks reach `minFailed` (checked first) or
    `succeeded` reach `minSucceeded`."""
    if failed >= job.failure_threshold:
        why = (f"{failed} task{'s' if failed != 1 else ''} failed "
               f"(minFailed {job.failure_threshold})")
        if failure:
            why = f"{why}; {failure}"
        if job.retries < job.job_retry_count:
            return Decision(Verdict.RETRY_JOB,
                            f"job retry {job.retries + 1}/{job.job_retry_count}: {why}")
        retried = f" after {job.retries} job retr{'y' if job.retries == 1 else 'ies'}" \
            if job.retries else ""
        return Decision(Verdict.FAIL, f"{why}{retried}")
    return Decision(Verdict.SUCCEED, f"{succeeded} of {job.replicas} tasks succeeded "
                                     f"(minSucceeded {job.success_threshold})")


def _group_completed(group: str, states: Mapping[TaskRef, TaskState]) -> int:
    """How many of `group`'s tasks succeeded, if every one of them in `states` (those the job
    waits for) has ended; else 0. A task that failed below `minFailed` has ended too, as in
    the job-wide rule that every task ended."""
    ended = [s for ref, s in states.items() if ref.group == group]
    if not ended or not all(s.terminal for s in ended):
        return 0
    return sum(1 for s in ended if s is TaskState.SUCCEEDED)
