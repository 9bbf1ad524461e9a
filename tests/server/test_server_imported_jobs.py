"""Submitting a document that becomes several jobs (all stored or none, one answer naming
them all), the originals kept with imported jobs (`GET /api/v1/jobs/{name}/original`), the
fields issue 20 added shown in `JobOut`, and the images policy at submission."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from server_helpers import Api, job_yaml
from toy_importer import toy_importer, toy_yaml

from shoal.api import JobState
from shoal.api.images import ImagePolicy
from shoal.server import create_app
from shoal.spec.limits import Limits


@pytest.fixture(autouse=True)
def _toy() -> Iterator[None]:
    with toy_importer():
        yield


def _names(api: Api) -> list[str]:
    return [j.name for j in api.repository.list_jobs(limit=100)]


def test_one_document_becomes_three_jobs_stored_together(api: Api) -> None:
    answer = api.submit(toy_yaml("sweep", 3), key="k1")
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["metadata"]["name"] == "sweep-0"
    assert body["jobs"] == ["sweep-0", "sweep-1", "sweep-2"]
    assert body["metadata"]["imported"] == "ray-job"
    assert body["metadata"]["labels"] == {"team": "vision"}
    assert _names(api) == ["sweep-0", "sweep-1", "sweep-2"]
    for i in range(3):
        original = api.request("GET", f"/api/v1/jobs/sweep-{i}/original", "bob")
        assert original.status_code == 200
        assert original.json() == {"format": "ray-job", "document": {
            "apiVersion": "toy/v1", "kind": "Array", "name": "sweep", "count": 3, "gpu": 0,
            "label": {"team": "vision"}}}
        shown = api.request("GET", f"/api/v1/jobs/sweep-{i}", "bob").json()
        assert shown["metadata"]["imported"] == "ray-job"
        assert shown["metadata"]["annotations"] == {"toy/index": str(i)}
        assert shown["jobs"] is None  # only a submission's answer lists them
    listed = api.request("GET", "/api/v1/jobs", "bob").json()["items"]
    assert [j["metadata"]["imported"] for j in listed] == ["ray-job"] * 3

    replay = api.submit(toy_yaml("sweep", 3), key="k1")
    assert replay.status_code == 200, replay.text
    assert replay.json()["jobs"] == ["sweep-0", "sweep-1", "sweep-2"]
    assert _names(api) == ["sweep-0", "sweep-1", "sweep-2"]


def test_a_replay_of_another_set_under_the_key_is_a_conflict(api: Api) -> None:
    assert api.submit(toy_yaml("sweep", 2), key="k1").status_code == 201
    # Same first job, one more job: not the submission the key was used for.
    answer = api.submit(toy_yaml("sweep", 3), key="k1")
    assert answer.status_code == 409
    assert answer.json()["errors"][0]["path"] == "header.Idempotency-Key"
    assert _names(api) == ["sweep-0", "sweep-1"]


def test_a_clash_on_any_job_stores_none_of_them(api: Api) -> None:
    assert api.submit(job_yaml("sweep-2")).status_code == 201
    answer = api.submit(toy_yaml("sweep", 3))
    assert answer.status_code == 409
    assert answer.json()["errors"][0] == {"path": "metadata.name",
                                          "message": "job 'sweep-2' exists already"}
    assert _names(api) == ["sweep-2"]
    # And nothing half-stored blocks the names: a later submission without the clash works.
    assert api.submit(toy_yaml("sweep", 2)).status_code == 201
    assert _names(api) == ["sweep-2", "sweep-0", "sweep-1"]


def test_each_job_is_checked_against_the_cluster_before_any_is_stored(api: Api) -> None:
    answer = api.submit(toy_yaml("huge", 2, gpu=9))  # nodes have 8 GPUs
    assert answer.status_code == 422
    message = answer.json()["errors"][0]["message"]
    assert message.startswith("job 'huge-0': the job can never run on this cluster")
    assert _names(api) == []


def test_issues_in_lowered_documents_name_the_original_path(api: Api) -> None:
    text = toy_yaml("bad", 1) + "extra: {memory: lots}\n"
    answer = api.submit(text)
    assert answer.status_code == 422
    paths = [e["path"] for e in answer.json()["errors"]]
    assert "task.resources.memory" in paths, paths


def test_two_native_documents_are_still_refused(api: Api) -> None:
    answer = api.submit(job_yaml("a") + "---\n" + job_yaml("b"))
    assert answer.status_code == 422
    assert answer.json()["errors"][0] == {"path": "kind",
                                          "message": "expected one Job document, got 2"}
    two_originals = api.submit(toy_yaml("x", 1) + "---\n" + toy_yaml("y", 1))
    assert two_originals.status_code == 422
    assert two_originals.json()["errors"][0]["path"] == "kind"
    assert _names(api) == []


def test_jobs_per_submission_are_bounded(api: Api) -> None:
    app = create_app(api.repository, api.scheduler, limits=Limits(max_jobs_per_submission=2))
    with TestClient(app) as client:
        answer = client.post("/api/v1/jobs", content=toy_yaml("many", 3),
                             headers=api.headers("alice", **{
                                 "Content-Type": "application/yaml"}))
    assert answer.status_code == 422
    assert answer.json()["errors"][0] == {
        "path": "kind", "message": "the document became 3 jobs; one submission may hold at "
                                   "most 2"}
    assert _names(api) == []


def test_a_native_job_has_no_original(api: Api) -> None:
    assert api.submit(job_yaml("plain")).status_code == 201
    answer = api.request("GET", "/api/v1/jobs/plain/original", "alice")
    assert answer.status_code == 404
    assert answer.json()["errors"][0]["message"] == (
        "job 'plain' was submitted as shoal/v1; it has no other original")
    assert api.request("GET", "/api/v1/jobs/nope/original", "alice").status_code == 404
    shown = api.request("GET", "/api/v1/jobs/plain", "alice").json()
    assert shown["metadata"]["imported"] is None


def test_deleting_an_imported_job_takes_its_original(api: Api) -> None:
    assert api.submit(toy_yaml("gone", 1)).status_code == 201
    api.repository.transition_job("gone-0", JobState.CANCELLED, "ended by the test")
    assert api.request("DELETE", "/api/v1/jobs/gone-0", "alice").status_code == 200
    assert api.submit(job_yaml("gone-0")).status_code == 201  # a native job now
    assert api.request("GET", "/api/v1/jobs/gone-0/original", "alice").status_code == 404


NEW_FIELDS = """\
apiVersion: shoal/v1
kind: Job
metadata:
  name: shown
  labels: {team: nlp, tier: "2"}
  annotations: {example.com/owner: ana, volcano.sh/cooldown-time: 5m}
spec:
  timeLimit: 2h
  hold: true
  taskGroups:
  - name: main
    replicas: 1
    image: docker.io/library/python:3.11
    command: [python, -c, "print(1)"]
    resources: {cpu: "1", memory: 1Gi}
"""


def test_annotations_labels_and_the_new_fields_are_shown(api: Api) -> None:
    refused = api.submit(NEW_FIELDS)
    assert refused.status_code == 422
    error = refused.json()["errors"][0]
    assert error["path"] == "spec.taskGroups[0].image"
    assert "runs in image 'docker.io/library/python:3.11'" in error["message"]
    assert "--images=ignore" in error["message"]
    assert _names(api) == []

    app = create_app(api.repository, api.scheduler, images=ImagePolicy.IGNORE)
    with TestClient(app) as client:
        headers = api.headers("alice", **{"Content-Type": "application/yaml"})
        answer = client.post("/api/v1/jobs", content=NEW_FIELDS, headers=headers)
        assert answer.status_code == 201, answer.text
        for body in (answer.json(), client.get("/api/v1/jobs/shown", headers=headers).json()):
            assert body["metadata"]["labels"] == {"team": "nlp", "tier": "2"}
            assert body["metadata"]["annotations"] == {
                "example.com/owner": "ana", "volcano.sh/cooldown-time": "5m"}
            assert body["metadata"]["imported"] is None
            assert body["spec"]["timeLimit"] == 7200
            assert body["spec"]["dependsOn"] == []
            assert body["spec"]["taskGroups"][0]["image"] == "docker.io/library/python:3.11"
            assert body["spec"]["hold"] is True
        assert answer.json()["jobs"] == ["shown"]
