"""`OpenPaiMember`: an OpenPAI cluster as a member, through its REST server's job API v2
(microsoft/pai, `src/rest-server/src/routes/v2/job.js` and `controllers/v2/job.js`).

- submit: `POST /api/v2/jobs`, the specialised job protocol v2 as YAML (`text/yaml`),
  answered `202`; OpenPAI names the job `{user}~{name}` (the framework name), which is the
  copy's id here. `409 ConflictJobError` when that name is taken.
- status: `GET /api/v2/jobs/{user}~{name}`, `jobStatus.state` (derived by `convertState` in
  `src/rest-server/src/models/v2/utils/frameworkConverter.js`) mapped onto `CopyState`:
  WAITING → WAITING; RUNNING and STOPPING → RUNNING (a stopping copy still holds its
  resources until it has stopped); SUCCEEDED, FAILED, STOPPED as they are; UNKNOWN (a
  framework state the server does not know) → WAITING, so that the dispatcher never keeps
  it as a winner on a guess. `jobStatus.launchedTime` (ms) is when it started running
  (`convertFrameworkDetail` in `src/rest-server/src/models/v2/job/k8s.js`).
- cancel: `PUT /api/v2/jobs/{user}~{name}/executionType` with `{"value": "STOP"}` (202); a job
  OpenPAI does not know (404 NoJobError) is already gone.
- find: the `GET` of `{user}~{name}`; 404 → none.
- logs: OpenPAI's REST server does not serve a job's output. It lists where each task's
  log files are (`getLogListFromLogServer` in `src/rest-server/src/models/v2/job/log.js`):
  URLs on each node's log manager or in Azure Storage, each needing its own access.
  `logs` says so, and where to look, instead of pretending.

Every request carries `Authorization: Bearer <token>`; the credentials' `user` is the
submitting user OpenPAI's token belongs to, which the id needs.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx
import yaml

from shoal.api.federation import CopyRequest, CopyState, MemberCluster
from shoal.federation.members.contract import (
    MAX_LOG_BYTES,
    MemberCredentials,
    MemberRefusedError,
    RemoteStatus,
)
from shoal.federation.members.http import DEFAULT_TIMEOUT_S, MemberHttp

JOBS = "/api/v2/jobs"
_STATES = {
    "WAITING": CopyState.WAITING,
    "RUNNING": CopyState.RUNNING,
    "STOPPING": CopyState.RUNNING,
    "STOPPED": CopyState.STOPPED,
    "SUCCEEDED": CopyState.SUCCEEDED,
    "FAILED": CopyState.FAILED,
    "UNKNOWN": CopyState.WAITING,
}
_STARTED = frozenset({CopyState.RUNNING, CopyState.SUCCEEDED, CopyState.FAILED,
                      CopyState.STOPPED})


class OpenPaiMember:
    """A member cluster that is an OpenPAI REST server (`uri`: its `/rest-server` base)."""

    def __init__(self, member: MemberCluster, credentials: MemberCredentials, *,
                 timeout_s: float = DEFAULT_TIMEOUT_S,
                 transport: httpx.BaseTransport | None = None) -> None:
        if not credentials.user:
            raise ValueError(f"cluster {member.alias!r}: spec.credentials.user: an OpenPAI "
                             "member needs the user its jobs are submitted as")
        self.member = member
        self.user = credentials.user
        headers = {"Accept": "application/json"}
        if credentials.token:
            headers["Authorization"] = f"Bearer {credentials.token}"
        self._http = MemberHttp(member.alias, member.uri, headers=headers,
                                timeout_s=timeout_s, transport=transport)

    def __repr__(self) -> str:
        return f"OpenPaiMember(alias={self.alias!r}, uri={self.member.uri!r}, user={self.user!r})"

    @property
    def alias(self) -> str:
        return self.member.alias

    def close(self) -> None:
        self._http.close()

    def remote_id(self, name: str) -> str:
        """OpenPAI's framework name of the job `name` submitted by this member's user."""
        return f"{self.user}~{name}"

    def submit(self, request: CopyRequest) -> str:
        if request.document_kind != "openpai-v2":
            raise MemberRefusedError(self.alias, f"an OpenPAI member runs job protocol v2 "
                                                 f"documents, not {request.document_kind[:40]!r}")
        try:
            protocol = json.loads(request.document)
        except ValueError:
            raise MemberRefusedError(self.alias, "the copy's document is not JSON") from None
        if not isinstance(protocol, dict) or protocol.get("name") != request.name:
            raise MemberRefusedError(self.alias, f"name: the document must be named "
                                                 f"{request.name!r}, the copy's name")
        body = yaml.safe_dump(protocol, sort_keys=False, allow_unicode=True)
        self._http.request("POST", JOBS, content=body.encode(),
                           headers={"Content-Type": "text/yaml"})
        return self.remote_id(request.name)

    def status(self, remote_id: str) -> RemoteStatus:
        data = self._json(self._http.request("GET", _job(remote_id)))
        job_status = data.get("jobStatus")
        said = job_status.get("state") if isinstance(job_status, dict) else None
        if not isinstance(job_status, dict) or said not in _STATES:
            raise MemberRefusedError(
                self.alias, f"GET {_job(remote_id)}: no known jobStatus.state in the answer "
                            f"({str(said)[:40]})")
        state = _STATES[said]
        started = _millis(job_status.get("launchedTime")) if state in _STARTED else None
        detail = {"STOPPING": "stopping", "UNKNOWN": "OpenPAI does not know the state"}.get(
            said, "")
        exit_code = job_status.get("appExitCode")
        if state is CopyState.FAILED and exit_code is not None:
            detail = f"exit code {str(exit_code)[:20]}"
        return RemoteStatus(state=state, member_state=said, started_at=started, detail=detail)

    def cancel(self, remote_id: str) -> None:
        # STOP of a job that has ended changes nothing on OpenPAI; one it does not know
        # (404 NoJobError) is stopped already.
        self._http.request("PUT", f"{_job(remote_id)}/executionType", json={"value": "STOP"},
                           ok_statuses=frozenset({404}))

    def find(self, name: str) -> str | None:
        remote_id = self.remote_id(name)
        response = self._http.request("GET", _job(remote_id), ok_statuses=frozenset({404}))
        return None if response.status_code == 404 else remote_id

    def logs(self, remote_id: str, *, limit_bytes: int = MAX_LOG_BYTES) -> str:
        user, _, name = remote_id.partition("~")
        page = (f"{self.member.uri.rstrip('/').removesuffix('/rest-server')}/job-detail.html"
                f"?username={quote(user)}&jobName={quote(name)}")
        text = (f"OpenPAI's REST server does not serve a job's output: it lists where each "
                f"task's log files are (on each node's log manager or in Azure Storage), each "
                f"read with its own access. See the job's page on cluster {self.alias!r}: "
                f"{page}\n")
        return text.encode()[-max(1, limit_bytes):].decode("utf-8", "ignore")

    def _json(self, response: httpx.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise MemberRefusedError(self.alias, f"{response.request.method} "
                                                 f"{response.request.url.path}: the answer is "
                                                 "not OpenPAI's JSON")
        return data


def _job(remote_id: str) -> str:
    # `~` joins user and name in OpenPAI's own URLs; anything else is escaped.
    return f"{JOBS}/{quote(remote_id, safe='~')}"


def _millis(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return datetime.fromtimestamp(value / 1000, UTC)
