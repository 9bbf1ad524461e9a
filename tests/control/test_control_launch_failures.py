"""Launches that fail cannot poison the loop (issue 14, item 4), with real processes.

Jobs that can never launch — no command, a NUL byte in an argument, `=` in an env name —
are built directly here, past the spec's validation (which refuses them at submission), and
bound in the same cycle as good jobs: the good jobs all run and succeed, the bad ones fail
with a cause that says why, no task is left BOUND without a process, and a restart over such
a store neither crashes nor starts anything twice. A job retried whole (`jobRetryCount`)
after a failed launch never gets a process for a task the store holds as PENDING."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import psutil
from control_support import PY, RUNS_UNTIL_STOPPED, finished, job, state_of, step_until

from shoal.api import Job, JobState, Resources, SchedulerName, TaskGroup, TaskState
from shoal.control import ControlPlane
from shoal.executors.contract import RecordedAttempt
from shoal.executors.task import RunningTask
from shoal.store import Repository

Factory = Callable[[], ControlPlane]
TIMEOUT = 30.0


def _bad(name: str, how: str, *, replicas: int = 2, job_retry_count: int = 0,
         task_retry_count: int = 0) -> Job:
    """A gang job whose launch raises: `how` is "no-command", "nul" or "env"."""
    command: tuple[str, ...] = (PY, "-c", "pass")
    env: dict[str, str] = {}
    if how == "no-command":
        command = ()
    elif how == "nul":
        command = (PY, "-c", "pass\x00")
    else:
        env = {"A=B": "1"}
    group = TaskGroup("worker", replicas, Resources.of(cpu=500, memory=128), command=command,
                      env=env, task_retry_count=task_retry_count)
    return Job(name, (group,), scheduler_name=SchedulerName.SHOAL,
               job_retry_count=job_retry_count)


def _good(name: str, replicas: int = 2) -> Job:
    return job(name, "pass", replicas=replicas)


def _states(repo: Repository, name: str) -> list[TaskState]:
    return [r.state for r in repo.task_records([name]).values()]


def _cause(repo: Repository, name: str) -> str:
    return repo.job_events(name)[-1].cause


def _untracked_holders(plane: ControlPlane) -> list[str]:
    """Tasks the store holds as BOUND or RUNNING that the plane watches no process of."""
    jobs = [j.name for j in plane.repository.list_jobs(limit=1000)]
    return [str(r.ref) for r in plane.repository.task_records(jobs).values()
            if r.state in (TaskState.BOUND, TaskState.RUNNING) and r.ref not in plane._tasks]


def test_bad_launches_next_to_good_jobs_in_one_cycle(plane: ControlPlane) -> None:
    # Bad jobs interleaved with good ones, all bound by the same cycle: each bad one's
    # first launch fails the job and takes it out of the model while its other bind is
    # still to be launched.
    names = []
    for i, how in enumerate(("no-command", "nul", "env")):
        plane.submit(_good(f"good-{i}"))
        plane.submit(_bad(f"bad-{how}", how))
        names += [f"good-{i}", f"bad-{how}"]
    plane.submit(_good("good-last"))
    plane.step()
    assert _untracked_holders(plane) == []
    step_until(plane, lambda: all(state_of(plane, n).terminal for n in names), TIMEOUT)
    step_until(plane, finished(plane, "good-last"), TIMEOUT)
    for name in [*names, "good-last"]:
        want = JobState.FAILED if name.startswith("bad") else JobState.SUCCEEDED
        assert state_of(plane, name) is want, name
    reasons = {"no-command": "has no command", "nul": "null byte", "env": "environment"}
    for how, reason in reasons.items():
        cause = _cause(plane.repository, f"bad-{how}")
        assert "a failed launch" in cause and reason in cause, cause
        assert TaskState.BOUND not in _states(plane.repository, f"bad-{how}")
    assert plane._tasks == {}


def test_restart_over_bound_bad_jobs_never_crashes(make_plane: Callable[..., ControlPlane]
                                                   ) -> None:
    # The binds are stored, then the plane "crashes" before launching anything: the
    # restart finds the bad jobs BOUND and never launched, next to a good one.
    first = make_plane()
    first.start()
    first.submit(_bad("bad-a", "no-command", replicas=3))
    first.submit(_good("good"))
    first.submit(_bad("bad-b", "nul", replicas=2, job_retry_count=1))
    first._drain()
    launches: list[str] = []
    first._launch_bound = lambda refs, **_: launches.extend(  # type: ignore[method-assign]
        str(ref) for ref in refs)
    first.run_cycle()
    assert len(launches) == 7
    assert set(_states(first.repository, "bad-a")) == {TaskState.BOUND}

    second = make_plane()
    second.start()  # must not raise
    assert _untracked_holders(second) == []
    step_until(second, lambda: all(state_of(second, n).terminal
                                   for n in ("bad-a", "good", "bad-b")), TIMEOUT)
    assert state_of(second, "good") is JobState.SUCCEEDED
    assert state_of(second, "bad-a") is JobState.FAILED
    assert state_of(second, "bad-b") is JobState.FAILED
    assert second.repository.get_job("bad-b").retries == 1  # type: ignore[union-attr]


def test_job_retry_after_a_failed_launch_starts_nothing_for_pending_tasks(
        plane: ControlPlane) -> None:
    # The job's first group cannot launch; its second could. The first failed launch
    # retries the job whole: the second group's binds of the same cycle are PENDING in the
    # store by then and must not be started. The bad spec is refused before the cycle's
    # batch reaches the executor, so none of the job's tasks ever does.
    started: list[tuple[str, int]] = []
    launch_many = plane.executor.launch_many

    def recording(specs):  # type: ignore[no-untyped-def]
        started.extend((f"{s.job}/{s.group}/{s.index}", s.attempt) for s in specs)
        return launch_many(specs)

    plane.executor.launch_many = recording  # type: ignore[method-assign]
    bad = _bad("retried", "env", replicas=1, job_retry_count=2)
    sleeper = TaskGroup("sleeper", 2, Resources.of(cpu=500, memory=128),
                        command=(PY, "-c", RUNS_UNTIL_STOPPED))
    plane.submit(replace(bad, groups=(*bad.groups, sleeper)))
    plane.submit(_good("good"))
    step_until(plane, lambda: state_of(plane, "retried").terminal
               and state_of(plane, "good").terminal, TIMEOUT)
    assert state_of(plane, "good") is JobState.SUCCEEDED
    assert state_of(plane, "retried") is JobState.FAILED
    assert plane.repository.get_job("retried").retries == 2  # type: ignore[union-attr]
    # One failed launch per run of the job, and nothing of it started.
    assert [ref for ref, _ in started if ref.startswith("retried/")] == []
    assert "a failed launch (illegal environment variable" in _cause(plane.repository,
                                                                      "retried")
    assert ("good/worker/0", 1) in started
    assert plane._tasks == {}


def test_a_start_that_cannot_be_recorded_is_stopped_at_once(plane: ControlPlane) -> None:
    # The store refuses RUNNING (here: it raises) after the process started: the process is
    # stopped at once and the task fails its launch, so nothing runs untracked.
    handles = []
    launch_many = plane.executor.launch_many

    def recording(specs):  # type: ignore[no-untyped-def]
        results = launch_many(specs)
        handles.extend(results)
        return results

    plane.executor.launch_many = recording  # type: ignore[method-assign]
    transition = plane.repository.transition_task

    def refusing(ref, target, cause, **kw):  # type: ignore[no-untyped-def]
        if target is TaskState.RUNNING and ref.job == "refused":
            raise RuntimeError("the store is down")
        return transition(ref, target, cause, **kw)

    plane.repository.transition_task = refusing  # type: ignore[method-assign]
    record_starts = plane.repository.record_starts

    def refusing_batch(starts):  # type: ignore[no-untyped-def]
        # The batch raises as a whole: each start is then recorded on its own.
        if any(start.ref.job == "refused" for start in starts):
            raise RuntimeError("the store is down")
        return record_starts(starts)

    plane.repository.record_starts = refusing_batch  # type: ignore[method-assign]
    plane.submit(replace(job("refused", RUNS_UNTIL_STOPPED),
                         job_retry_count=0))
    plane.submit(_good("good"))
    step_until(plane, lambda: state_of(plane, "refused").terminal
               and state_of(plane, "good").terminal, TIMEOUT)
    assert state_of(plane, "refused") is JobState.FAILED
    assert "could not be recorded (the store is down)" in _cause(plane.repository, "refused")
    assert state_of(plane, "good") is JobState.SUCCEEDED
    refused = [h for h in handles if h.job == "refused"]
    assert refused and all(not plane.executor.poll(h).running for h in refused)


def test_an_end_that_cannot_be_recorded_stops_no_other(plane: ControlPlane) -> None:
    # Recording one task's success raises: its job fails with the cause, and the other
    # jobs' ends in the same polls are recorded all the same.
    transition = plane.repository.transition_task

    def refusing(ref, target, cause, **kw):  # type: ignore[no-untyped-def]
        if target is TaskState.SUCCEEDED and ref.job == "broken":
            raise RuntimeError("cannot write")
        return transition(ref, target, cause, **kw)

    plane.repository.transition_task = refusing  # type: ignore[method-assign]
    record_exits = plane.repository.record_exits

    def refusing_batch(exits, decide):  # type: ignore[no-untyped-def]
        # The batch raises as a whole: each end is then recorded on its own.
        if any(end.ref.job == "broken" for end in exits):
            raise RuntimeError("cannot write")
        return record_exits(exits, decide)

    plane.repository.record_exits = refusing_batch  # type: ignore[method-assign]
    names = ["before", "broken", "after"]
    for name in names:
        plane.submit(_good(name))
    step_until(plane, lambda: all(state_of(plane, n).terminal for n in names), TIMEOUT)
    assert state_of(plane, "broken") is JobState.FAILED
    assert "ended failed: cannot write" in _cause(plane.repository, "broken")
    assert state_of(plane, "before") is JobState.SUCCEEDED
    assert state_of(plane, "after") is JobState.SUCCEEDED
    assert _untracked_holders(plane) == []


def _waiter(name: str, gate: Path) -> Job:
    """A one-task job whose process runs until `gate` exists."""
    return job(name, f"import pathlib, time\nend = time.time() + 60\n"
                     f"while not pathlib.Path({str(gate)!r}).exists() and time.time() < end:\n"
                     f"    time.sleep(0.02)", replicas=1)


def _running_pair(make_plane: Callable[..., ControlPlane], gate: Path) -> dict[str, int]:
    """Jobs "bad" and "good" running under a first control plane; their pids."""
    first = make_plane()
    first.start()
    for name in ("bad", "good"):
        first.submit(_waiter(name, gate))
    step_until(first, lambda: all(state_of(first, n) is JobState.RUNNING
                                  for n in ("bad", "good")), TIMEOUT)
    records = first.repository.task_records(["bad", "good"]).values()
    return {r.ref.job: r.pid or 0 for r in records}


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_restart_fails_a_job_it_cannot_take_over_and_takes_over_the_others(
        make_plane: Callable[..., ControlPlane], tmp_path: Path) -> None:
    gate = tmp_path / "go"
    pids = _running_pair(make_plane, gate)
    second = make_plane()
    reconcile = second._reconcile_job

    def failing(job, records, evicted):  # type: ignore[no-untyped-def]
        if job.name == "bad":
            raise RuntimeError("boom")
        return reconcile(job, records, evicted)

    second._reconcile_job = failing  # type: ignore[method-assign]
    second.start()  # must not raise
    assert _untracked_holders(second) == []
    step_until(second, finished(second, "bad"), TIMEOUT)
    assert state_of(second, "bad") is JobState.FAILED
    assert "taking over its tasks at start failed: boom" in _cause(second.repository, "bad")
    step_until(second, lambda: _gone(pids["bad"]), TIMEOUT)  # its process was stopped
    gate.touch()
    step_until(second, finished(second, "good"), TIMEOUT)
    assert state_of(second, "good") is JobState.SUCCEEDED


def test_a_process_that_cannot_be_adopted_is_watched_by_its_record(
        make_plane: Callable[..., ControlPlane], tmp_path: Path) -> None:
    gate = tmp_path / "go"
    _running_pair(make_plane, gate)
    second = make_plane()
    adopt = second.executor.adopt

    def failing(recorded: RecordedAttempt) -> RunningTask | None:
        if recorded.job == "bad":
            raise OSError("cannot read the process table")
        return adopt(recorded)

    second.executor.adopt = failing  # type: ignore[method-assign]
    second.start()
    assert _untracked_holders(second) == []
    gate.touch()
    step_until(second, lambda: all(state_of(second, n).terminal
                                   for n in ("bad", "good")), TIMEOUT)
    assert state_of(second, "bad") is JobState.SUCCEEDED
    assert state_of(second, "good") is JobState.SUCCEEDED
