"""A job's own virtual cluster in the live control loop: its tasks get the API's address, a
job token and their virtual cluster; the token stops working when the job ends; the work
its tasks submitted into its sub-clusters is stopped with it — also when the job ended
while the control plane was down, and when such work arrives after the job ended."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from control_support import finished, job, state_of, step_until

from shoal.api import JobState, Node, ResourceLimit, Resources, TaskState, VirtualCluster
from shoal.api.objects import sub_cluster_name
from shoal.control import ControlPlane
from shoal.executors.local import LocalExecutor
from shoal.scheduler.profile import Profile
from shoal.store import Repository

GRACE = 0.5
SERVER = "http://127.0.0.1:9"  # never called here: the tasks only record what they get
OWN = VirtualCluster("job:tune", min=Resources.of(cpu=1000),
                     max=ResourceLimit.of({"cpu": 4000}))
DATA = VirtualCluster(sub_cluster_name("tune", "data"), "job:tune")


@pytest.fixture
def planes(repo: Repository, node: Node, tmp_path: Path) -> Iterator[
        Callable[[], ControlPlane]]:
    made: list[ControlPlane] = []

    def make() -> ControlPlane:
        executor = LocalExecutor(tmp_path / "shoal", grace_period=GRACE)
        plane = ControlPlane(repo, executor, [node], Profile.default(),
                             interval=0.1, grace_period=GRACE, server_url=SERVER)
        made.append(plane)
        plane.start()
        return plane

    repo.create_user("alice")
    yield make
    for plane in made:
        for tracked in list(plane._tasks.values()):
            plane.executor.stop(tracked.handle, grace_period=0.1)


def records_env(path: Path, until: Path | None = None) -> str:
    wait = "" if until is None else (
        f"\nimport time, os\nwhile not os.path.exists({str(until)!r}): time.sleep(0.05)")
    return (f"import json, os; json.dump({{k: v for k, v in os.environ.items() "
            f"if k.startswith('SHOAL_')}}, open({str(path)!r}, 'w')){wait}")


def start_tune(plane: ControlPlane, tmp_path: Path, until: Path) -> Path:
    """Submit `tune` (alice's, with its own virtual cluster): its driver records its
    environment, then runs until `until` exists. Returns where the environment is, once
    it is there."""
    seen = tmp_path / "driver.json"
    plane.submit(replace(job("tune", records_env(seen, until)), user="alice",
                         virtual_cluster=OWN))
    step_until(plane, seen.exists)
    return seen


def running(plane: ControlPlane, name: str) -> Callable[[], bool]:
    return lambda: state_of(plane, name) is JobState.RUNNING


def test_tasks_get_a_job_token_that_ends_with_the_job(planes: Callable[[], ControlPlane],
                                                      tmp_path: Path) -> None:
    plane = planes()
    done = tmp_path / "done"
    plane.submit(replace(job("plain", records_env(tmp_path / "plain.json")), user="alice"))
    seen = start_tune(plane, tmp_path, done)
    step_until(plane, finished(plane, "plain"))
    env = json.loads(seen.read_text())
    assert env["SHOAL_SERVER"] == SERVER and env["SHOAL_VIRTUAL_CLUSTER"] == "job:tune"
    user = plane.repository.authenticate(env["SHOAL_TOKEN"])
    assert user is not None and (user.name, user.job, user.admin) == ("alice", "tune", False)
    plain = json.loads((tmp_path / "plain.json").read_text())
    assert plain["SHOAL_VIRTUAL_CLUSTER"] == "default"
    assert plain["SHOAL_TOKEN"] != env["SHOAL_TOKEN"]
    assert plane.repository.authenticate(plain["SHOAL_TOKEN"]) is None  # plain has ended
    done.touch()
    step_until(plane, finished(plane, "tune"))
    assert plane.repository.authenticate(env["SHOAL_TOKEN"]) is None


def test_work_in_sub_clusters_is_stopped_when_its_job_ends(planes: Callable[[], ControlPlane],
                                                           tmp_path: Path) -> None:
    plane = planes()
    done = tmp_path / "done"
    start_tune(plane, tmp_path, done)
    plane.add_sub_clusters("tune", [DATA])
    plane.submit(replace(job("trial", "import time; time.sleep(60)"), user="alice",
                         queue=DATA.name))
    step_until(plane, running(plane, "trial"))
    assert plane.model.jobs["trial"].account == DATA.name
    done.touch()
    step_until(plane, lambda: finished(plane, "tune")() and finished(plane, "trial")())
    assert state_of(plane, "tune") is JobState.SUCCEEDED
    assert state_of(plane, "trial") is JobState.CANCELLED
    events = [e.cause for e in plane.repository.job_events("trial")]
    assert any("its virtual cluster 'job:tune/data' ended with job 'tune'" in e
               for e in events), events
    assert not [q for q in plane.model.quota.queues if q.startswith("job:")]
    # Work that arrives once the job has ended is stopped at once.
    plane.submit(replace(job("late", "pass"), user="alice", queue=DATA.name))
    step_until(plane, finished(plane, "late"))
    assert state_of(plane, "late") is JobState.CANCELLED


def test_a_restart_stops_the_work_of_a_job_that_ended_while_it_was_down(
        planes: Callable[[], ControlPlane], tmp_path: Path) -> None:
    plane = planes()
    seen = start_tune(plane, tmp_path, tmp_path / "never")
    token = json.loads(seen.read_text())["SHOAL_TOKEN"]
    plane.add_sub_clusters("tune", [DATA])
    plane.submit(replace(job("trial", "import time; time.sleep(60)"), user="alice",
                         queue=DATA.name))
    step_until(plane, running(plane, "trial"))
    # The control plane dies; the job is ended behind its back (its driver killed, its
    # end recorded) before a new one starts.
    tracked = plane._tasks[next(r for r in plane._tasks if r.job == "tune")]
    plane.executor.stop(tracked.handle, grace_period=0.1)
    for task in plane.repository.get_job("tune").tasks:  # type: ignore[union-attr]
        plane.repository.transition_task(task.ref, TaskState.FAILED, "killed")
    plane.repository.transition_job("tune", JobState.FAILED, "killed while down")
    restarted = planes()
    assert restarted.repository.authenticate(token) is None
    step_until(restarted, finished(restarted, "trial"))
    assert state_of(restarted, "trial") is JobState.CANCELLED
    trial = restarted.repository.get_job("trial")
    assert trial is not None and all(t.state is TaskState.CANCELLED for t in trial.tasks)


def test_sub_job_processes_run_with_their_own_virtual_cluster(
        planes: Callable[[], ControlPlane], tmp_path: Path) -> None:
    plane = planes()
    done = tmp_path / "done"
    start_tune(plane, tmp_path, done)
    plane.add_sub_clusters("tune", [DATA])
    inner = tmp_path / "inner.json"
    plane.submit(replace(job("trial", records_env(inner)), user="alice", queue=DATA.name))
    step_until(plane, finished(plane, "trial"))
    assert json.loads(inner.read_text())["SHOAL_VIRTUAL_CLUSTER"] == DATA.name
    done.touch()
    step_until(plane, finished(plane, "tune"))
