"""The `slurm` adapter on slurmrestd v0.0.38 answers recorded from Slurm 22.05.8 (the shapes
tests/integration/federation/test_slurm_member.py meets live): the batch job a copy becomes,
every Slurm state's mapping, and which answers are refusals and which outages.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import httpx
import pytest

from shoal.api.federation import ClusterKind, CopyRequest, CopyState, MemberCluster, RoleRequest
from shoal.federation.members.contract import (
    MemberCredentials,
    MemberRefusedError,
    MemberUnavailableError,
)
from shoal.federation.members.slurm import STATES, SlurmMember

TOKEN = "eyJhbGciOiJIUzI1NiJ9.secret-slurm-jwt"
META = {"plugin": {"type": "openapi/v0.0.38"}, "Slurm": {"release": "22.05.8"}}


def answering(status: int, body: dict[str, Any], seen: list[httpx.Request] | None = None,
              ) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(status, json={"meta": META, **body})
    return httpx.MockTransport(handle)


def member(transport: httpx.BaseTransport, uri: str = "http://slurm.example:6820") -> SlurmMember:
    return SlurmMember(MemberCluster("hpc", uri, ClusterKind.SLURM),
                       MemberCredentials("alice", TOKEN), transport=transport)


def copy(*roles: RoleRequest) -> CopyRequest:
    return CopyRequest("train", "hpc", "train-hpc", roles, "{}", "openpai-v2")


ROLE = RoleRequest("worker", 2, ("cd /data", "python train.py"), gpu=4, cpu=8,
                   memory_mib=16000, env=(("EPOCHS", "3"),))


def test_a_copy_becomes_one_batch_job_with_its_gpus_as_gres_per_task() -> None:
    seen: list[httpx.Request] = []
    adapter = member(answering(200, {"errors": [], "job_id": 42, "step_id": "BATCH"}, seen),
                     "http://slurm.example:6820/?partition=gpu&workdir=/scratch/shoal")
    assert adapter.submit(copy(ROLE)) == "42"
    request = seen[0]
    assert (request.method, request.url.path) == ("POST", "/slurm/v0.0.38/job/submit")
    assert request.headers["X-SLURM-USER-NAME"] == "alice"
    assert request.headers["X-SLURM-USER-TOKEN"] == TOKEN
    body = json.loads(request.content)
    assert body["job"] == {
        "name": "train-hpc", "tasks": 2, "cpus_per_task": 8, "memory_per_cpu": 2000,
        "gpus_per_task": 4, "partition": "gpu", "current_working_directory": "/scratch/shoal",
        "standard_output": "/scratch/shoal/%x-%j.out",
        "environment": {"PATH": "/usr/local/bin:/usr/bin:/bin", "EPOCHS": "3"}}
    # Two instances: each runs the commands, as one srun step of the batch job.
    assert body["script"].startswith("#!/bin/sh\nexec srun /bin/sh -c ")
    assert "cd /data\npython train.py" in body["script"]


def test_one_instance_runs_the_commands_in_the_batch_script_itself() -> None:
    seen: list[httpx.Request] = []
    member(answering(200, {"errors": [], "job_id": 7}, seen)).submit(
        copy(RoleRequest("main", 1, ("echo a", "echo b"))))
    body = json.loads(seen[0].content)
    assert body["script"] == "#!/bin/sh\nset -e\necho a\necho b\n"
    assert "gpus_per_task" not in body["job"] and "partition" not in body["job"]
    assert body["job"]["current_working_directory"] == "/tmp"


@pytest.mark.parametrize(("slurm_state", "state"), [
    ("PENDING", CopyState.WAITING), ("CONFIGURING", CopyState.WAITING),
    ("REQUEUED", CopyState.WAITING), ("RUNNING", CopyState.RUNNING),
    ("COMPLETING", CopyState.RUNNING), ("SUSPENDED", CopyState.RUNNING),
    ("COMPLETED", CopyState.SUCCEEDED), ("FAILED", CopyState.FAILED),
    ("TIMEOUT", CopyState.FAILED), ("NODE_FAIL", CopyState.FAILED),
    ("OUT_OF_MEMORY", CopyState.FAILED), ("BOOT_FAIL", CopyState.FAILED),
    ("DEADLINE", CopyState.FAILED), ("CANCELLED", CopyState.STOPPED),
    ("PREEMPTED", CopyState.STOPPED)])
def test_every_slurm_state_maps_onto_a_copy_state(slurm_state: str, state: CopyState) -> None:
    job = {"job_id": 9, "job_state": slurm_state, "start_time": 1795703418,
           "state_reason": "None", "name": "train-hpc"}
    status = member(answering(200, {"errors": [], "jobs": [job]})).status("9")
    assert (status.state, status.member_state) == (state, slurm_state)
    # A pending job's start_time is Slurm's forecast, never a start.
    assert (status.started_at is None) == (state is CopyState.WAITING)
    assert STATES[slurm_state] is state


def test_an_unknown_state_is_refused_not_guessed() -> None:
    job = {"job_id": 9, "job_state": "WARPING", "start_time": 0}
    with pytest.raises(MemberRefusedError, match="unknown job_state 'WARPING'"):
        member(answering(200, {"errors": [], "jobs": [job]})).status("9")


def test_find_matches_the_name_and_the_user_and_takes_the_latest() -> None:
    jobs = [{"job_id": 3, "name": "train-hpc", "user_name": "alice"},
            {"job_id": 5, "name": "train-hpc", "user_name": "alice"},
            {"job_id": 8, "name": "train-hpc", "user_name": "bob"},
            {"job_id": 9, "name": "other", "user_name": "alice"}]
    adapter = member(answering(200, {"errors": [], "jobs": jobs}))
    assert adapter.find("train-hpc") == "5"
    assert adapter.find("nothing-hpc") is None


# slurmrestd 22.05 answers everything slurmctld refuses with a 500 listing Slurm's errors.
@pytest.mark.parametrize(("number", "text", "error"), [
    (2017, "Invalid job id specified", MemberRefusedError),
    (5005, "Zero Bytes were transmitted or received", MemberRefusedError),
    (-1, "Unspecified error", MemberUnavailableError),
    (1001, "Unable to contact slurm controller (connect failure)", MemberUnavailableError),
    (1800, "Unable to contact slurm controller (connect failure)", MemberUnavailableError),
    (5004, "Socket timed out on send/recv operation", MemberUnavailableError)])
def test_slurm_errors_are_refusals_unless_slurmctld_was_not_reached(
        number: int, text: str, error: type[Exception]) -> None:
    answer = {"errors": [{"error_number": number, "error": text,
                          "description": "slurm_load_job"}]}
    with pytest.raises(error, match=f"cluster 'hpc'.*{text[:12]}") as raised:
        member(answering(500, answer)).status("9")
    assert TOKEN not in str(raised.value) and "secret-slurm-jwt" not in str(raised.value)


def test_a_500_without_slurm_errors_is_an_outage_and_cancel_of_a_purged_job_is_done() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html>bad gateway</html>")
    with pytest.raises(MemberUnavailableError, match="502"):
        member(httpx.MockTransport(handle)).status("9")
    purged = {"errors": [{"error_number": 2017, "error": "Invalid job id specified"}]}
    member(answering(500, purged)).cancel("9")


def test_logs_name_the_output_file_on_the_member() -> None:
    job = {"job_id": 12, "job_state": "RUNNING", "name": "train-hpc",
           "standard_output": "/scratch/shoal/%x-%j.out"}
    said = member(answering(200, {"errors": [], "jobs": [job]})).logs("12")
    assert said == ("slurmrestd serves no job output: job 12's output is in "
                    "/scratch/shoal/train-hpc-12.out on cluster 'hpc'\n")


def test_bad_input_is_refused_before_any_call() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"no call expected, got {request.method} {request.url}")
    adapter = member(httpx.MockTransport(handle))
    with pytest.raises(MemberRefusedError, match="2 task roles \\(worker, worker\\)"):
        adapter.submit(copy(ROLE, ROLE))
    with pytest.raises(MemberRefusedError, match="not a Slurm job id"):
        adapter.cancel("1;rm")
    with pytest.raises(ValueError, match="uri: unknown parameter 'queue'"):
        member(httpx.MockTransport(handle), "http://slurm.example:6820/?queue=gpu")
    with pytest.raises(ValueError, match="needs a user and a token") as raised:
        SlurmMember(MemberCluster("hpc", "http://x", ClusterKind.SLURM),
                    MemberCredentials("alice", None))
    assert TOKEN not in str(raised.value)


def jwt(claims: dict[str, object]) -> str:
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJIUzI1NiJ9.{payload}.c2lnbmF0dXJl"


def test_an_expired_token_or_another_users_is_refused_without_a_call() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"no call expected, got {request.method} {request.url}")
    expired = jwt({"sun": "alice", "exp": int(time.time()) - 60, "iat": 0})
    adapter = member_with(expired, httpx.MockTransport(handle))
    with pytest.raises(MemberRefusedError, match="token for 'alice' has expired") as raised:
        adapter.find("train-hpc")
    assert expired not in str(raised.value)
    bobs = jwt({"sun": "bob", "exp": int(time.time()) + 3600})
    with pytest.raises(ValueError, match="token is for user 'bob', not 'alice'") as wrong:
        SlurmMember(MemberCluster("hpc", "http://x", ClusterKind.SLURM),
                    MemberCredentials("alice", bobs))
    assert bobs not in str(wrong.value)
    live = jwt({"sun": "alice", "exp": int(time.time()) + 3600})
    answered = member_with(live, answering(200, {"errors": [], "jobs": []}))
    assert answered.find("train-hpc") is None


def member_with(token: str, transport: httpx.BaseTransport) -> SlurmMember:
    return SlurmMember(MemberCluster("hpc", "http://x", ClusterKind.SLURM),
                       MemberCredentials("alice", token), transport=transport)
