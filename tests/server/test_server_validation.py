"""Bad submissions are refused with the field path or the reason, and nothing is stored."""

from __future__ import annotations

import pytest
from server_helpers import Api, job_yaml

BAD_JOBS = {
    "malformed yaml": ("apiVersion: shoal/v1\nkind: Job\nmetadata: {name: [x\n", None),
    "unknown field": (job_yaml(extra_spec="\n  colour: blue"), "spec.colour"),
    "negative resources": (job_yaml(cpu="-2"), "spec.taskGroups[0].resources.cpu"),
    "zero replicas": (job_yaml(replicas=0), "spec.taskGroups[0].replicas"),
    "minAvailable above replicas": (job_yaml(extra_spec="\n  minAvailable: 5"),
                                    "spec.minAvailable"),
    "unknown queue": (job_yaml(queue="nowhere"), "spec.queue"),
    "unknown priority class": (job_yaml(extra_spec="\n  priorityClassName: vip"),
                               "spec.priorityClassName"),
    "bad name": (job_yaml(name="no/slash"), "metadata.name"),
    "status set": (job_yaml() + "status:\n  tasks:\n    - {group: worker, index: 0, node: gpu-0}\n",
                   "status"),
    "not a job": ("apiVersion: shoal/v1\nkind: PriorityClass\nmetadata: {name: vip}\n"
                  "value: 5\n", "kind"),
    "two jobs": (job_yaml("a") + "---\n" + job_yaml("b"), "kind"),
    "empty": ("", None),
}


@pytest.mark.parametrize("case", sorted(BAD_JOBS))
def test_bad_job_is_422_with_path_and_nothing_stored(api: Api, case: str) -> None:
    text, path = BAD_JOBS[case]
    answer = api.submit(text)
    assert answer.status_code == 422, answer.text
    errors = answer.json()["errors"]
    assert errors and all(e["message"] for e in errors)
    if path is not None:
        assert path in [e["path"] for e in errors], errors
    assert api.request("GET", "/api/v1/jobs", "root").json() == {"items": [], "next": None}


def test_impossible_job_is_422_with_reason(api: Api) -> None:
    answer = api.submit(job_yaml("huge", replicas=1, gpu=16, cpu="16"))
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["reason"]["kind"] == "Unschedulable"
    assert "never run" in body["errors"][0]["message"]
    too_many = api.submit(job_yaml("wide", replicas=3, gpu=8, cpu="8"))
    assert too_many.status_code == 422
    assert too_many.json()["reason"]["kind"] == "Unschedulable"
    no_match = api.submit(job_yaml("h100", extra_group="\n      nodeSelector: {gpu-type: h100}"))
    assert no_match.status_code == 422
    assert api.repository.list_jobs() == []


def test_queue_not_allowed_is_403(api: Api) -> None:
    answer = api.submit(job_yaml(queue="team-a"), who="bob")
    assert answer.status_code == 403
    assert answer.json()["errors"][0]["path"] == "spec.queue"
    assert api.repository.list_jobs() == []
    assert api.submit(job_yaml(queue="team-a"), who="root").status_code == 201


def test_content_type_must_be_yaml_or_json(api: Api) -> None:
    answer = api.submit(job_yaml(), content_type="text/plain")
    assert answer.status_code == 415
    assert answer.json()["errors"][0]["path"] == "header.Content-Type"
    assert api.submit(job_yaml(), content_type="text/yaml; charset=utf-8").status_code == 201


def test_cluster_documents_are_validated(api: Api) -> None:
    bad = api.request("POST", "/api/v1/virtual-clusters", "root",
                      content="apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: x}\n"
                              "spec: {parent: ghost}\n",
                      headers={"Content-Type": "application/yaml"})
    assert bad.status_code == 422
    assert bad.json()["errors"][0]["path"] == "spec.parent"
    dup = api.request("POST", "/api/v1/virtual-clusters", "root",
                      content="apiVersion: shoal/v1\nkind: VirtualCluster\n"
                              "metadata: {name: team-a}\n",
                      headers={"Content-Type": "application/yaml"})
    assert dup.status_code == 409
    assert api.scheduler.catalog_reloads == 0  # refused: nothing stored, nothing to take up
    bad_user = api.request("POST", "/api/v1/users", "root", json={"name": "x", "role": "god"})
    assert bad_user.status_code == 422
    assert bad_user.json()["errors"][0]["path"] == "body.role"
    assert api.request("POST", "/api/v1/users", "root", json={"name": "bob"}).status_code == 409
