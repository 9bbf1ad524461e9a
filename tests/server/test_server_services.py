"""Services (seed 002) through the API: a `kind: Service` submission shows its service
settings, production priority and `preemptable: false`; `PUT /nodes` with `status.reserved`
shows what is used outside Shoal, `allocatable` net of it, and refuses more than the node
has, naming the field."""

from __future__ import annotations

from server_helpers import Api
from shoal_documents import job_yaml

YAML = {"Content-Type": "application/yaml"}
RESERVED = """\
apiVersion: shoal/v1
kind: Node
metadata: {name: gpu-1, labels: {gpu-type: a100}}
spec: {capacity: {cpu: 32, memory: 256Gi, gpu: 8}}
status: {reserved: {gpu: GPUS, cpu: 4}}
"""


def test_a_service_is_submitted_and_shown(api: Api) -> None:
    text = job_yaml("web", extra_spec='\n  service: {schedule: [{from: "22:00", to: "07:30", '
                                      'replicas: 1}], handBack: 10m}').replace(
        "kind: Job", "kind: Service")
    answer = api.submit(text)
    assert answer.status_code == 201, answer.text
    spec = answer.json()["spec"]
    assert spec["service"] == {"taskGroup": "worker", "handBack": 600.0,
                               "schedule": [{"from": "22:00", "to": "07:30", "replicas": 1}]}
    assert (spec["priorityClassName"], spec["preemptable"]) == ("production", False)
    assert spec["elastic"]["minReplicas"] == 1
    got = api.request("GET", "/api/v1/jobs/web", "bob").json()["spec"]
    assert got == spec
    plain = api.submit(job_yaml("train")).json()["spec"]
    assert plain["service"] is None and plain["preemptable"] is True


def test_a_bad_schedule_is_refused_naming_its_field(api: Api) -> None:
    text = job_yaml("web", extra_spec='\n  service: {schedule: [{from: "22:00", to: "31:00", '
                                      'replicas: 1}]}')
    answer = api.submit(text)
    assert answer.status_code == 422
    assert [e["path"] for e in answer.json()["errors"]] == ["spec.service.schedule[0].to"]


def test_reserved_load_is_stored_and_shown(api: Api) -> None:
    put = api.request("PUT", "/api/v1/nodes", "root", content=RESERVED.replace("GPUS", "3"),
                      headers=YAML)
    assert put.status_code == 200, put.text
    nodes = {n["name"]: n for n in api.request("GET", "/api/v1/nodes", "alice").json()}
    assert nodes["gpu-1"]["reserved"] == {"cpu": "4", "gpu": 3}
    assert nodes["gpu-1"]["allocatable"]["gpu"] == 5
    assert nodes["gpu-0"]["reserved"] == {}
    stored = {n.name: n for n in api.repository.list_nodes()}
    assert stored["gpu-1"].reserved.gpu == 3 and stored["gpu-1"].allocatable_resources.gpu == 5


def test_reserved_beyond_the_node_is_refused(api: Api) -> None:
    put = api.request("PUT", "/api/v1/nodes", "root", content=RESERVED.replace("GPUS", "9"),
                      headers=YAML)
    assert put.status_code == 422
    errors = put.json()["errors"]
    assert [e["path"] for e in errors] == ["status.reserved"]
    assert "gpu 9 > 8" in errors[0]["message"]
    stored = {n.name: n for n in api.repository.list_nodes()}
    assert stored["gpu-1"].reserved.is_zero()  # nothing already stored is lost
