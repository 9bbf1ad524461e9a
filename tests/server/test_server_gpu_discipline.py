"""The gpu-discipline rule at submission: a job asking GPUs with too little CPU is refused
(422) with the path of the field at fault and what it needs; nothing is stored."""

from __future__ import annotations

from server_helpers import Api, job_yaml


def test_gpu_job_without_cpu_is_422_naming_the_field(api: Api) -> None:
    answer = api.submit(job_yaml("starved", gpu=4, cpu="0"))
    assert answer.status_code == 422, answer.text
    body = answer.json()
    error = body["errors"][0]
    assert error["path"] == "spec.taskGroups[0].resources.cpu"
    assert "4 GPUs with 0 CPU" in error["message"]
    assert "cpu: 4 or more" in error["message"]
    assert body["reason"]["kind"] == "Unschedulable"
    assert body["reason"]["predicate"] == "gpu-discipline"
    assert body["reason"]["field"] == "spec.taskGroups[0].resources.cpu"
    assert api.repository.get_job("starved") is None
    assert api.scheduler.wake_ups == 0


def test_the_minimum_is_per_gpu_per_task(api: Api) -> None:
    short = api.submit(job_yaml("short", gpu=4, cpu="3500m", replicas=2))
    assert short.status_code == 422, short.text
    assert "cpu: 4 or more" in short.json()["errors"][0]["message"]
    enough = api.submit(job_yaml("enough", gpu=4, cpu="4", replicas=2))
    assert enough.status_code == 201, enough.text
    cpu_only = api.submit(job_yaml("etl", gpu=0, cpu="4"))
    assert cpu_only.status_code == 201, cpu_only.text
