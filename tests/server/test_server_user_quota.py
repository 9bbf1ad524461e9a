"""Issue 17's per-user quota through the API: a virtual cluster's `maxPerUser` is created,
stored and shown; one above the cluster's own max is refused with its path; and a job that
alone asks more than it is refused at submission, naming the limit (it could never run)."""

from __future__ import annotations

from typing import Any

from server_helpers import Api, job_yaml

from shoal.api import ResourceLimit, VirtualCluster

YAML = {"Content-Type": "application/yaml"}


def create(api: Api, name: str, spec: str) -> tuple[int, Any]:
    body = f"apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {{name: {name}}}\nspec: {spec}\n"
    answer = api.request("POST", "/api/v1/virtual-clusters", "root", content=body,
                         headers=YAML)
    return answer.status_code, answer.json()


def test_max_per_user_is_created_stored_and_shown(api: Api) -> None:
    status, body = create(api, "capped", "{maxPerUser: {gpu: 4, cpu: 16}}")
    assert status == 201, body
    [shown] = [v for v in api.request("GET", "/api/v1/virtual-clusters", "bob").json()
               if v["name"] == "capped"]
    assert shown["maxPerUser"] == {"cpu": 16000, "gpu": 4}
    [stored] = [v for v in api.repository.list_virtual_clusters() if v.name == "capped"]
    assert stored.max_per_user == ResourceLimit.of({"gpu": 4, "cpu": 16000})
    [plain] = [v for v in api.request("GET", "/api/v1/virtual-clusters", "bob").json()
               if v["name"] == "team-a"]
    assert plain["maxPerUser"] == {}


def test_max_per_user_above_the_clusters_max_is_refused(api: Api) -> None:
    status, body = create(api, "odd", "{flexibleResourceMax: {gpu: 2}, maxPerUser: {gpu: 4}}")
    assert status == 422, body
    [error] = body["errors"]
    assert error["path"] == "spec.maxPerUser"
    assert "gpu 4 > 2" in error["message"]
    status, body = create(api, "bad", "{maxPerUser: {gpu: many}}")
    assert status == 422, body
    assert body["errors"][0]["path"].startswith("spec.maxPerUser")
    names = {v.name for v in api.repository.list_virtual_clusters()}
    assert not {"odd", "bad"} & names


def test_a_job_alone_over_max_per_user_is_refused_at_submission(api: Api) -> None:
    api.repository.put_virtual_cluster(
        VirtualCluster("team-a", max_per_user=ResourceLimit.of({"gpu": 4})))
    api.scheduler.reload_catalog()
    refused = api.submit(job_yaml("greedy", queue="team-a", replicas=2, gpu=4, cpu="4"))
    assert refused.status_code == 422, refused.json()
    [error] = refused.json()["errors"]
    assert "allows at most 4 gpu per user (maxPerUser)" in error["message"]
    assert "'team-a'" in error["message"]
    fits = api.submit(job_yaml("modest", queue="team-a", replicas=2, gpu=2))
    assert fits.status_code == 201, fits.json()
