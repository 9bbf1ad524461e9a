"""Submitting, reading, listing, paginating and cancelling jobs over the REST API."""

from __future__ import annotations

import json

from server_helpers import Api, job_yaml

from shoal.api import JobState, PendingKind, PendingReason
from shoal.server.jobs import INLINE_PARSE_BYTES


def test_submit_yaml_then_get(api: Api) -> None:
    answer = api.submit(job_yaml("train"))
    assert answer.status_code == 201, answer.text
    assert answer.headers["Location"] == "/api/v1/jobs/train"
    body = answer.json()
    assert body["metadata"]["name"] == "train"
    assert body["metadata"]["user"] == "alice"
    assert body["spec"]["queue"] == "default"
    assert body["spec"]["schedulerName"] == "shoal"
    assert body["spec"]["taskGroups"][0]["resources"] == {"cpu": "2", "memory": "4Gi", "gpu": 1}
    assert body["status"]["state"] == "Pending"
    assert body["status"]["taskCounts"] == {"Pending": 2}
    assert "tasks" not in body["status"]
    tasks = api.request("GET", "/api/v1/jobs/train/tasks", "bob").json()
    assert [(t["name"], t["group"], t["index"], t["state"], t["node"], t["gpus"])
            for t in tasks["items"]] == [("worker-0", "worker", 0, "Pending", None, []),
                                         ("worker-1", "worker", 1, "Pending", None, [])]
    assert tasks["next"] is None

    api.scheduler.reasons["train"] = PendingReason(PendingKind.GANG, "only 1 of 2 fit")
    got = api.request("GET", "/api/v1/jobs/train", "bob")
    assert got.status_code == 200
    detail = got.json()
    assert detail["spec"] == body["spec"]
    assert detail["status"]["pendingReason"] == {"kind": "Gang", "message": "only 1 of 2 fit",
                                                 "resource": None, "queue": None,
                                                 "predicate": None, "field": None}
    assert [e["kind"] for e in detail["status"]["events"]] == ["Submitted"]
    events = api.request("GET", "/api/v1/jobs/train/events", "alice").json()
    assert events == {"items": detail["status"]["events"], "next": None}


def test_submit_json(api: Api) -> None:
    document = {"apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": "j1"},
                "spec": {"queue": "team-a", "taskGroups": [
                    {"name": "main", "replicas": 1, "resources": {"cpu": 2, "gpu": 2},
                     "command": ["true"]}]}}
    answer = api.submit(json.dumps(document), content_type="application/json")
    assert answer.status_code == 201, answer.text
    assert answer.json()["spec"]["queue"] == "team-a"
    assert api.repository.get_job("j1") is not None


def test_a_large_body_is_read_off_the_event_loop_with_the_same_checks(api: Api) -> None:
    """Bodies past INLINE_PARSE_BYTES are parsed in the thread pool: same answers."""
    args = [f"--flag-{i}={'x' * 100}" for i in range(1000)]

    def document(name: str, replicas: int) -> str:
        return json.dumps({"apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": name},
                           "spec": {"taskGroups": [{"name": "main", "replicas": replicas,
                                                    "resources": {"cpu": 1},
                                                    "command": ["run", *args]}]}})

    assert len(document("big", 1)) > INLINE_PARSE_BYTES
    answer = api.submit(document("big", 1), content_type="application/json")
    assert answer.status_code == 201, answer.text
    stored = api.repository.get_job("big")
    assert stored is not None and list(stored.groups[0].command) == ["run", *args]
    refused = api.submit(document("big2", -1), content_type="application/json")
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["path"] == "spec.taskGroups[0].replicas"


def test_unknown_job_is_404(api: Api) -> None:
    for url in ("/api/v1/jobs/nope", "/api/v1/jobs/nope/events"):
        answer = api.request("GET", url, "alice")
        assert answer.status_code == 404
        assert answer.json()["errors"][0]["path"] == "path.name"
    assert api.request("POST", "/api/v1/jobs/nope/cancel", "root").status_code == 404


def test_idempotent_retry_returns_the_same_job(api: Api) -> None:
    first = api.submit(job_yaml("train"), key="k-1")
    assert first.status_code == 201
    again = api.submit(job_yaml("train"), key="k-1")
    assert again.status_code == 200, again.text
    assert {k: v for k, v in again.json().items() if k != "status"} == {
        k: v for k, v in first.json().items() if k != "status"}
    assert again.json()["status"]["taskCounts"] == first.json()["status"]["taskCounts"]
    assert [j.name for j in api.repository.list_jobs()] == ["train"]


def test_the_scheduler_is_woken_once_per_new_job_after_the_answer(api: Api) -> None:
    assert api.submit(job_yaml("train"), key="k-1").status_code == 201
    assert api.scheduler.wake_ups == 1
    assert api.submit(job_yaml("train"), key="k-1").status_code == 200  # a replay
    assert api.submit(job_yaml("big", gpu=64)).status_code == 422
    assert api.scheduler.wake_ups == 1


def test_conflicting_retry_is_409(api: Api) -> None:
    assert api.submit(job_yaml("train"), key="k-1").status_code == 201
    conflict = api.submit(job_yaml("train", replicas=3), key="k-1")
    assert conflict.status_code == 409
    assert conflict.json()["errors"][0]["path"] == "header.Idempotency-Key"
    duplicate = api.submit(job_yaml("train"))
    assert duplicate.status_code == 409
    assert duplicate.json()["errors"][0]["path"] == "metadata.name"
    stored = api.repository.list_jobs()
    assert [(j.name, j.replicas) for j in stored] == [("train", 2)]


def test_list_filters_and_pagination(api: Api) -> None:
    for i in range(5):
        assert api.submit(job_yaml(f"a{i}")).status_code == 201
    assert api.submit(job_yaml("b0"), who="bob").status_code == 201
    assert api.submit(job_yaml("t0", queue="team-a")).status_code == 201
    api.repository.transition_job("a1", JobState.CANCELLED, "test")

    def names(query: str, who: str = "bob") -> tuple[list[str], str | None]:
        answer = api.request("GET", f"/api/v1/jobs{query}", who)
        assert answer.status_code == 200, answer.text
        page = answer.json()
        return [j["metadata"]["name"] for j in page["items"]], page["next"]

    assert names("") == (["a0", "a1", "a2", "a3", "a4", "b0", "t0"], None)
    assert names("?user=bob") == (["b0"], None)
    assert names("?queue=team-a") == (["t0"], None)
    assert names("?state=Cancelled") == (["a1"], None)
    assert names("?state=Pending&user=alice&queue=default") == (["a0", "a2", "a3", "a4"], None)

    seen: list[str] = []
    query = "?limit=3"
    while True:
        page, after = names(query)
        seen.extend(page)
        if after is None:
            break
        query = f"?limit=3&after={after}"
    assert seen == ["a0", "a1", "a2", "a3", "a4", "b0", "t0"]


def test_list_bad_query_is_422_with_path(api: Api) -> None:
    for query, path in (("?state=Sleeping", "query.state"), ("?limit=0", "query.limit"),
                        ("?after=ghost", "query.after")):
        answer = api.request("GET", f"/api/v1/jobs{query}", "alice")
        assert answer.status_code == 422, query
        assert answer.json()["errors"][0]["path"] == path


def test_cancel_own_job_and_not_others(api: Api) -> None:
    assert api.submit(job_yaml("mine")).status_code == 201
    assert api.submit(job_yaml("theirs"), who="bob").status_code == 201
    refused = api.request("POST", "/api/v1/jobs/theirs/cancel", "alice")
    assert refused.status_code == 403
    assert api.repository.get_job("theirs").state.value == "Pending"
    done = api.request("POST", "/api/v1/jobs/mine/cancel", "alice")
    assert done.status_code == 200
    assert done.json()["status"]["state"] == "Cancelled"
    assert api.request("POST", "/api/v1/jobs/theirs/cancel", "root").status_code == 200
    again = api.request("POST", "/api/v1/jobs/mine/cancel", "alice")
    assert again.status_code == 409
    events = api.request("GET", "/api/v1/jobs/mine/events", "alice").json()["items"]
    assert [(e["kind"], e["target"]) for e in events][-1][1] == "Cancelled"


def test_admin_submits_for_a_user_and_users_may_not(api: Api) -> None:
    assert api.submit(job_yaml("for-bob", user="bob"), who="root").status_code == 201
    assert api.repository.get_job("for-bob").user == "bob"
    refused = api.submit(job_yaml("as-bob", user="bob"), who="alice")
    assert refused.status_code == 403
    assert refused.json()["errors"][0]["path"] == "metadata.user"
    assert api.repository.get_job("as-bob") is None


def test_an_elastic_job_shows_its_range_and_which_tasks_are_surplus(api: Api) -> None:
    """Seed 001's story 3: users see which of their tasks may be taken away."""
    elastic = ("\n  elastic: {minReplicas: 2, step: powerOfTwo, scaleCooldown: 10m0s, "
               "protectFor: 5s}")
    answer = api.submit(job_yaml("stretchy", replicas=4, gpu=1, extra_spec=elastic))
    assert answer.status_code == 201, answer.text
    job = api.request("GET", "/api/v1/jobs/stretchy", "bob").json()
    assert job["spec"]["elastic"] == {"taskGroup": "worker", "minReplicas": 2,
                                      "maxReplicas": 4, "step": "powerOfTwo",
                                      "scaleCooldown": 600.0, "protectFor": 5.0}
    tasks = api.request("GET", "/api/v1/jobs/stretchy/tasks", "bob").json()["items"]
    assert [(t["index"], t["elastic"]) for t in tasks] == [
        (0, False), (1, False), (2, True), (3, True)]
    assert job["status"]["elasticSize"] == sum(
        t["state"] in ("Bound", "Running") for t in tasks) == 0
    rigid = api.request("GET", "/api/v1/jobs", "bob").json()["items"]
    assert all(t["elastic"] is False for j in rigid if j["metadata"]["name"] != "stretchy"
               for t in api.request("GET", f"/api/v1/jobs/{j['metadata']['name']}/tasks",
                                    "bob").json()["items"])
    assert all(j["status"]["elasticSize"] is None for j in rigid
               if j["metadata"]["name"] != "stretchy")
    bad = api.submit(job_yaml("bad", replicas=4, extra_spec="\n  elastic: {minReplicas: 3, "
                                                            "step: powerOfTwo}"))
    assert bad.status_code == 422
    assert bad.json()["errors"][0]["path"] == "spec.elastic.minReplicas"


def test_a_jobs_checkpoint_interval_is_shown(api: Api) -> None:
    answer = api.submit(job_yaml("saving", extra_spec="\n  checkpointInterval: 2m"))
    assert answer.status_code == 201, answer.text
    job = api.request("GET", "/api/v1/jobs/saving", "bob").json()
    assert job["spec"]["checkpointInterval"] == 120.0
    assert api.submit(job_yaml("plain")).status_code == 201
    assert api.request("GET", "/api/v1/jobs/plain", "bob").json()["spec"].get(
        "checkpointInterval") is None
    bad = api.submit(job_yaml("bad", extra_spec="\n  checkpointInterval: 0"))
    assert bad.status_code == 422, bad.text
    assert bad.json()["errors"][0]["path"] == "spec.checkpointInterval"
