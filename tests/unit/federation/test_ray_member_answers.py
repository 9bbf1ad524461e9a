"""The `ray` adapter on Ray 2.60 Jobs API answers (the shapes
tests/integration/federation/test_ray_member.py meets live): the job a copy becomes, the
status mapping, a taken name, and the bounded log tail.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from shoal.api.federation import ClusterKind, CopyRequest, CopyState, MemberCluster, RoleRequest
from shoal.federation.members.contract import (
    MemberCredentials,
    MemberRefusedError,
    MemberUnavailableError,
)
from shoal.federation.members.ray import RayMember

TOKEN = "secret-ray-token"


def answering(status: int, body: dict[str, Any] | str,
              seen: list[httpx.Request] | None = None) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        if isinstance(body, str):
            return httpx.Response(status, text=body)
        return httpx.Response(status, json=body)
    return httpx.MockTransport(handle)


def member(transport: httpx.BaseTransport) -> RayMember:
    return RayMember(MemberCluster("lab", "http://ray.example:8265/", ClusterKind.RAY),
                     MemberCredentials(token=TOKEN), transport=transport)


def copy(*roles: RoleRequest) -> CopyRequest:
    return CopyRequest("train", "lab", "train-lab", roles, "{}", "shoal")


ROLE = RoleRequest("main", 1, ("cd /data", "python train.py"), gpu=2, cpu=4,
                   memory_mib=2048, env=(("EPOCHS", "3"),))


def test_a_copy_becomes_one_ray_job_named_after_it() -> None:
    seen: list[httpx.Request] = []
    answer = {"job_id": None, "submission_id": "train-lab"}
    assert member(answering(200, answer, seen)).submit(copy(ROLE)) == "train-lab"
    request = seen[0]
    assert (request.method, request.url.path) == ("POST", "/api/jobs/")
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    body = json.loads(request.content)
    assert body == {
        "entrypoint": "sh -c 'set -e\ncd /data\npython train.py\n'",
        "submission_id": "train-lab", "entrypoint_num_cpus": 4, "entrypoint_num_gpus": 2,
        "entrypoint_memory": 2048 << 20, "runtime_env": {"env_vars": {"EPOCHS": "3"}},
        "metadata": {"shoal.job": "train", "shoal.cluster": "lab"}}


def test_a_taken_name_is_a_refusal_and_another_500_an_outage() -> None:
    taken = ("Traceback (most recent call last):\n ... ValueError: Job with submission_id "
             "train-lab already exists. Please use a different submission_id.")
    with pytest.raises(MemberRefusedError, match="'train-lab' already exists"):
        member(answering(500, taken)).submit(copy(ROLE))
    with pytest.raises(MemberUnavailableError, match="server error 500") as raised:
        member(answering(500, "No available agent to submit job")).submit(copy(ROLE))
    assert TOKEN not in str(raised.value)


@pytest.mark.parametrize(("ray_status", "state"), [
    ("PENDING", CopyState.WAITING), ("RUNNING", CopyState.RUNNING),
    ("SUCCEEDED", CopyState.SUCCEEDED), ("FAILED", CopyState.FAILED),
    ("STOPPED", CopyState.STOPPED)])
def test_every_ray_status_maps_onto_a_copy_state(ray_status: str, state: CopyState) -> None:
    job = {"status": ray_status, "start_time": 1795703418123, "message": "m",
           "submission_id": "train-lab"}
    status = member(answering(200, job)).status("train-lab")
    assert (status.state, status.member_state, status.detail) == (state, ray_status, "m")
    assert (status.started_at is None) == (state is CopyState.WAITING)
    if status.started_at is not None:
        assert status.started_at.timestamp() == pytest.approx(1795703418.123)


def test_find_is_a_lookup_by_name() -> None:
    seen: list[httpx.Request] = []
    assert member(answering(200, {"status": "RUNNING"}, seen)).find("train-lab") == "train-lab"
    assert seen[0].url.path == "/api/jobs/train-lab"
    assert member(answering(404, "Job train-lab does not exist")).find("train-lab") is None


def test_logs_are_a_bounded_tail_and_cancel_is_a_stop() -> None:
    assert member(answering(200, {"logs": "first\nlast\n"})).logs("train-lab",
                                                                   limit_bytes=5) == "last\n"
    seen: list[httpx.Request] = []
    member(answering(200, {"stopped": False}, seen)).cancel("train-lab")
    assert (seen[0].method, seen[0].url.path) == ("POST", "/api/jobs/train-lab/stop")


def test_no_token_sends_no_authorization() -> None:
    seen: list[httpx.Request] = []
    RayMember(MemberCluster("lab", "http://ray.example:8265", ClusterKind.RAY),
              MemberCredentials(), transport=answering(200, {"status": "RUNNING"}, seen)
              ).status("train-lab")
    assert "Authorization" not in seen[0].headers
