"""A Ray member cluster, through the Ray Jobs REST API that the head's dashboard serves
(`ray job submit` semantics; ray's `dashboard/modules/job/job_head.py`): one copy is one
Ray job whose `submission_id` is the copy's name, so the member's id for a copy *is* its
name and finding a copy by name is one `GET /api/jobs/{name}`.

The REST API rather than `ray.job_submission.JobSubmissionClient`: the same calls, without
importing Ray into the dispatcher, and through the one `MemberHttp` conversation every
member adapter shares (timeouts and errors alike).

A copy's one role, of one instance, becomes the job's entrypoint (its commands as one
`sh -c` script, `set -e`); its GPUs, CPUs and memory reserve the driver's
`entrypoint_num_gpus` / `entrypoint_num_cpus` / `entrypoint_memory` (bytes), so the job
stays PENDING until the cluster has them; its environment becomes `runtime_env.env_vars`.
A Ray job is one driver process: a copy of several roles or instances is refused (the
driver would have to start the others as Ray tasks itself).

A copy's secrets are not sent: `runtime_env` is shown on Ray's dashboard to whoever reaches
it.

Ray's `start_time` is when the job was submitted, not when its driver started; it is
reported as the copy's start once Ray says RUNNING.
"""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx

from shoal.api.federation import CopyRequest, CopyState, MemberCluster
from shoal.federation.members.commands import only_role, script_of
from shoal.federation.members.contract import (
    MAX_LOG_BYTES,
    MemberCredentials,
    MemberRefusedError,
    MemberUnavailableError,
    RemoteStatus,
)
from shoal.federation.members.http import DEFAULT_TIMEOUT_S, MemberHttp

#: Ray's `JobStatus` names are the copy's own, but for a job not started yet.
STATES = {
    "PENDING": CopyState.WAITING,
    "RUNNING": CopyState.RUNNING,
    "SUCCEEDED": CopyState.SUCCEEDED,
    "FAILED": CopyState.FAILED,
    "STOPPED": CopyState.STOPPED,
}
MIB = 1 << 20


class RayMember:
    """A Ray cluster behind its Jobs API, as a `MemberAdapter`. The credentials' token, if
    any, is sent as a bearer token (a proxy in front of the dashboard may ask for one; Ray
    itself has no authentication)."""

    def __init__(self, member: MemberCluster, credentials: MemberCredentials, *,
                 timeout_s: float = DEFAULT_TIMEOUT_S,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._member = member
        headers = {"Authorization": f"Bearer {credentials.token}"} if credentials.token else {}
        self._http = MemberHttp(member.alias, member.uri.rstrip("/"), headers=headers,
                                timeout_s=timeout_s, transport=transport)

    @property
    def alias(self) -> str:
        return self._member.alias

    def submit(self, request: CopyRequest) -> str:
        role = only_role(self.alias, request, engine="ray",
                         why="a Ray job is one driver process")
        if role.instances != 1:
            raise MemberRefusedError(
                self.alias, f"copy {request.name!r}: role {role.name!r} has {role.instances} "
                            "instances; a ray member runs one (a Ray job is one driver process)")
        body: dict[str, Any] = {
            "entrypoint": f"sh -c {shlex.quote(script_of(role))}",
            "submission_id": request.name,
            "entrypoint_num_cpus": role.cpu,
            "entrypoint_num_gpus": role.gpu,
            "entrypoint_memory": role.memory_mib * MIB,
            "metadata": {"shoal.job": request.job_name, "shoal.cluster": request.alias},
        }
        if role.env:
            body["runtime_env"] = {"env_vars": dict(role.env)}
        # Ray answers a taken submission_id with a 500 and a traceback: read it here.
        response = self._http.request("POST", "/api/jobs/", json=body,
                                      ok_statuses=frozenset({500}))
        if response.status_code == 500:
            if "already exists" in response.text:
                raise MemberRefusedError(self.alias, f"a Ray job named {request.name!r} "
                                                     "already exists")
            raise MemberUnavailableError(self.alias, "POST /api/jobs/: server error 500")
        said = _json(self.alias, response)
        submission_id = said.get("submission_id")
        if submission_id != request.name:
            raise MemberRefusedError(self.alias, f"submit of {request.name!r}: Ray answered "
                                                 f"submission id {str(submission_id)[:80]!r}")
        return request.name

    def status(self, remote_id: str) -> RemoteStatus:
        said = _json(self.alias, self._http.request("GET", _job_path(remote_id)))
        member_state = str(said.get("status", ""))
        state = STATES.get(member_state)
        if state is None:
            raise MemberRefusedError(self.alias, f"job {remote_id!r}: unknown status "
                                                 f"{member_state[:40]!r}")
        start = said.get("start_time")
        started = (datetime.fromtimestamp(start / 1000, UTC)
                   if state is not CopyState.WAITING and isinstance(start, int) and start > 0
                   else None)
        return RemoteStatus(state, member_state, started, str(said.get("message") or "")[:300])

    def cancel(self, remote_id: str) -> None:
        # Ray answers a stop of a finished job with {"stopped": false}: nothing runs, done.
        self._http.request("POST", _job_path(remote_id) + "/stop")

    def find(self, name: str) -> str | None:
        response = self._http.request("GET", _job_path(name), ok_statuses=frozenset({404}))
        return None if response.status_code == 404 else name

    def logs(self, remote_id: str, *, limit_bytes: int = MAX_LOG_BYTES) -> str:
        said = _json(self.alias, self._http.request("GET", _job_path(remote_id) + "/logs"))
        text = str(said.get("logs") or "")
        return text.encode()[-limit_bytes:].decode(errors="ignore")

    def close(self) -> None:
        self._http.close()


def _job_path(remote_id: str) -> str:
    return f"/api/jobs/{quote(remote_id, safe='')}"


def _json(alias: str, response: httpx.Response) -> dict[str, Any]:
    try:
        said = response.json()
    except json.JSONDecodeError:
        said = None
    if not isinstance(said, dict):
        raise MemberRefusedError(alias, f"{response.request.method} {response.request.url.path}"
                                        ": not a Ray Jobs API answer")
    return said
