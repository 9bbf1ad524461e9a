"""The job control routes (hold, release, requeue) and the submission check of
`spec.dependsOn`, on the real app over SQLite and PostgreSQL (the store-backed scheduler
of `server_helpers`: what is stored, and what is refused)."""

from __future__ import annotations

from typing import Any

from server_helpers import Api, job_yaml

from shoal.api import Bind, JobState, Resources, TaskRef, TaskState


def depends(*names: str) -> str:
    return "\n  dependsOn: [" + ", ".join(names) + "]"


def post(api: Api, name: str, verb: str, who: str = "alice") -> Any:
    return api.request("POST", f"/api/v1/jobs/{name}/{verb}", who)


def events(api: Api, name: str) -> list[tuple[str, str]]:
    page = api.request("GET", f"/api/v1/jobs/{name}/events", "alice").json()
    return [(e["kind"], e["cause"]) for e in page["items"]]


def start(api: Api, name: str, replicas: int = 2) -> None:
    api.repository.record_binds([Bind(TaskRef(name, "worker", i), "gpu-0", (i,),
                                      Resources.of(cpu=2000)) for i in range(replicas)],
                                "placed by the test")
    for i in range(replicas):
        api.repository.transition_task(TaskRef(name, "worker", i), TaskState.RUNNING,
                                       "started by the test", pid=1000 + i)


def test_a_dependency_on_a_stored_job_is_accepted_and_shown(api: Api) -> None:
    assert api.submit(job_yaml("a")).status_code == 201
    answer = api.submit(job_yaml("b", extra_spec=depends("a")))
    assert answer.status_code == 201, answer.text
    assert answer.json()["spec"]["dependsOn"] == ["a"]
    assert api.repository.get_job("b").depends_on == ("a",)  # type: ignore[union-attr]


def test_unknown_self_and_failed_dependencies_are_refused_at_their_path(api: Api) -> None:
    assert api.submit(job_yaml("bad")).status_code == 201
    api.repository.transition_job("bad", JobState.FAILED, "failed in the test")
    answer = api.submit(job_yaml("b", extra_spec=depends("nope", "b", "bad")))
    assert answer.status_code == 422
    assert answer.json()["errors"] == [
        {"path": "spec.dependsOn[0]", "message": "no job 'nope'"},
        {"path": "spec.dependsOn[1]", "message": "a job cannot depend on itself"},
        {"path": "spec.dependsOn[2]",
         "message": "job 'bad' ended Failed: this job could never start"}]
    assert api.repository.get_job("b") is None


def test_hold_and_release_a_pending_job_with_events_naming_who(api: Api) -> None:
    assert api.submit(job_yaml("train")).status_code == 201
    held = post(api, "train", "hold")
    assert held.status_code == 200, held.text
    assert held.json()["spec"]["hold"] is True
    assert api.repository.get_job("train").held  # type: ignore[union-attr]
    assert post(api, "train", "hold").status_code == 200  # holding again changes nothing
    released = post(api, "train", "release", "root")
    assert released.status_code == 200 and released.json()["spec"]["hold"] is False
    assert [e for e in events(api, "train") if e[0] in ("JobHeld", "JobReleased")] == [
        ("JobHeld", "held by alice"), ("JobReleased", "released by root")]


def test_a_job_submitted_held_is_stored_held(api: Api) -> None:
    answer = api.submit(job_yaml("later", extra_spec="\n  hold: true"))
    assert answer.status_code == 201 and answer.json()["spec"]["hold"] is True
    assert api.repository.get_job("later").held  # type: ignore[union-attr]


def test_only_the_owner_or_an_admin_controls_a_job(api: Api) -> None:
    assert api.submit(job_yaml("train")).status_code == 201
    for verb in ("hold", "release", "requeue"):
        refused = post(api, "train", verb, "bob")
        assert refused.status_code == 403, verb
    assert not api.repository.get_job("train").held  # type: ignore[union-attr]
    assert post(api, "nope", "hold").status_code == 404


def test_a_started_job_cannot_be_held_and_a_pending_one_not_requeued(api: Api) -> None:
    assert api.submit(job_yaml("waits")).status_code == 201
    nothing = post(api, "waits", "requeue")
    assert nothing.status_code == 409
    assert "nothing to requeue" in nothing.json()["errors"][0]["message"]
    assert api.submit(job_yaml("runs")).status_code == 201
    start(api, "runs")
    refused = post(api, "runs", "hold")
    assert refused.status_code == 409
    assert "only a pending job can be held" in refused.json()["errors"][0]["message"]
    assert not api.repository.get_job("runs").held  # type: ignore[union-attr]


def test_requeue_stops_a_running_job_and_puts_it_back_counting_no_retry(api: Api) -> None:
    assert api.submit(job_yaml("runs", extra_spec="\n  jobRetryCount: 0")).status_code == 201
    start(api, "runs")
    answer = post(api, "runs", "requeue")
    assert answer.status_code == 200, answer.text
    stopping = api.repository.get_job("runs")
    assert stopping is not None
    assert {t.state for t in stopping.tasks} == {TaskState.RELEASING}
    assert post(api, "runs", "requeue").status_code == 409  # a stop is under way
    for i in range(2):  # the control loop records the processes stopped
        api.repository.transition_task(TaskRef("runs", "worker", i), TaskState.PENDING,
                                       "stopped")
    back = api.repository.finish_stop("runs")
    assert back.state is JobState.PENDING and back.retries == 0
    assert ("JobRequeued", "requeued by alice") in events(api, "runs")


def test_requeue_with_hold_leaves_the_job_held(api: Api) -> None:
    assert api.submit(job_yaml("runs")).status_code == 201
    start(api, "runs")
    answer = api.request("POST", "/api/v1/jobs/runs/requeue?hold=true", "root")
    assert answer.status_code == 200, answer.text
    assert answer.json()["spec"]["hold"] is True
    assert ("JobHeld", "held by root (requeue --hold)") in events(api, "runs")


def test_ended_jobs_cannot_be_controlled(api: Api) -> None:
    assert api.submit(job_yaml("done")).status_code == 201
    api.repository.transition_job("done", JobState.CANCELLED, "cancelled in the test")
    for verb in ("hold", "release", "requeue"):
        answer = post(api, "done", verb)
        assert answer.status_code == 409, verb
        assert "has already ended: Cancelled" in answer.json()["errors"][0]["message"]
