"""An online service under the live control loop (issue 17, seed 002), with real processes
and a clock the test sets: the same services action sizes it as in the simulator. At noon
it runs all 3 replicas; at 22:00 (its quiet window, 1 replica) two of its tasks are stopped
and a training job takes their room; at 06:50, within the hand-back (15 min before 07:00),
the training job is evicted and the service runs 3 again. Waits are on stored states."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from checkpointing_worker import task_states
from control_support import DEADLINE, job, state_of, step_until

from shoal.api import Elasticity, JobState, Node, TaskState
from shoal.api.services import QuietWindow, Service
from shoal.control import ControlPlane
from shoal.executors.local import LocalExecutor
from shoal.scheduler.profile import Profile
from shoal.store import Repository

HOUR = 3600.0
DAY = 24 * HOUR
NIGHT = Service("worker", (QuietWindow(22 * HOUR, 7 * HOUR, 1),), hand_back=900.0)
SLEEP = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end:\n" \
        "    time.sleep(0.05)\n"


class SetClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def running(plane: ControlPlane, name: str) -> int:
    return sum(1 for s in task_states(plane, name) if s is TaskState.RUNNING)


def test_a_service_follows_its_schedule_live(tmp_path: Path, repo: Repository,
                                             node: Node) -> None:
    clock = SetClock(10 * DAY + 12 * HOUR)
    executor = LocalExecutor(tmp_path / "shoal", grace_period=0.5)
    plane = ControlPlane(repo, executor, [node], Profile.default(), clock=clock,
                         interval=0.1, grace_period=0.5)
    try:
        # Each task holds a quarter of the node's 16 cores: 4 fit.
        web = job("web", SLEEP, replicas=3)
        web = replace(web, groups=(replace(web.groups[0], resources=replace(
            web.groups[0].resources, cpu=4000)),), service=NIGHT, preemptable=False,
            priority_class="production", elastic=Elasticity("worker", 1, 3))
        train = job("train", SLEEP, replicas=2)
        train = replace(train, groups=(replace(train.groups[0], resources=replace(
            train.groups[0].resources, cpu=4000)),), priority_class="experiment")
        plane.submit(web)
        step_until(plane, lambda: running(plane, "web") == 3, DEADLINE)
        plane.submit(train)
        step_until(plane, lambda: plane.pending_reason("train") is not None, DEADLINE)
        assert state_of(plane, "train") is JobState.PENDING  # 1 slot free, 2 needed

        clock.now = 10 * DAY + 22 * HOUR  # quiet: the service needs 1
        step_until(plane, lambda: running(plane, "web") == 1
                   and running(plane, "train") == 2, DEADLINE)
        assert state_of(plane, "web") is JobState.RUNNING

        clock.now = 11 * DAY + 7 * HOUR - 600  # within the hand-back: it needs 3 again
        step_until(plane, lambda: running(plane, "web") == 3, DEADLINE)
        assert running(plane, "train") == 0
        assert state_of(plane, "train") is JobState.PENDING
    finally:
        for tracked in list(plane._tasks.values()):
            plane.executor.stop(tracked.handle, grace_period=0.1)
