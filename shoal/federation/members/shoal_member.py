"""`ShoalMember`: another `shoal up` as a member cluster, over its REST API (`/api/v1`) with a
bearer token; the copy's id on the member is its job name.

It speaks JSON through `MemberHttp` rather than through `shoal.client.ShoalClient`, so that a
Shoal member fails a call exactly as every other member does (`MemberUnavailableError` /
`MemberRefusedError`), and the client's own retry does not stack on the dispatcher's backoff.

What is submitted:

- a `shoal` document (a `MultiClusterJob` specialised into a Shoal `Job`) goes as it is;
- an `openpai-v2` document becomes a Shoal `Job` built from the copy's roles
  (`openpai_job`): one task group per task role — the role's name lower-cased with `_` as
  `-` (a task group's name is a DNS label), `instances` as `replicas`, `resourcePerInstance`
  as `resources` (`cpu`, `memoryMB` as `<n>Mi`, `gpu`), the role's `commands` joined with
  newlines into one `/bin/sh -c` script (as OpenPAI joins them into its entrypoint), its env
  as `env`; gang-scheduled (`schedulerName: shoal`), as OpenPAI allocates a job's tasks
  together. A Shoal member runs processes, not containers: a role's `dockerImage` is not
  used, and the copy's secrets are not handed to its tasks.

The submission carries the copy's name as its `Idempotency-Key`, so a retry whose first
attempt reached the member returns the job stored then, never a second one.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx

from shoal.api.federation import CopyRequest, CopyState, MemberCluster, RoleRequest
from shoal.api.lifecycle import JobState
from shoal.federation.members.contract import (
    MAX_LOG_BYTES,
    MemberCredentials,
    MemberRefusedError,
    RemoteStatus,
)
from shoal.federation.members.http import DEFAULT_TIMEOUT_S, MemberHttp

API = "/api/v1"
JSON = "application/json"
EVENT_PAGE = 500
"""A job's oldest events, read when its start is no longer among its latest: its own Running
event follows its gang's binds, so it is on this page for a gang of fewer tasks (a larger
one reports no `started_at`)."""
MAX_REASON_CHARS = 300
"""The most of the member's reason for a waiting job carried in a status' detail."""
MAX_LOG_READ = 8 * 1024 * 1024
"""The most one read of the member's log route returns (its `MAX_READ`)."""
_STATES = {
    JobState.PENDING: CopyState.WAITING,
    JobState.RUNNING: CopyState.RUNNING,
    JobState.SUCCEEDED: CopyState.SUCCEEDED,
    JobState.FAILED: CopyState.FAILED,
    JobState.CANCELLED: CopyState.STOPPED,
}


class ShoalMember:
    """A member cluster that is another `shoal up`."""

    def __init__(self, member: MemberCluster, credentials: MemberCredentials, *,
                 timeout_s: float = DEFAULT_TIMEOUT_S,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.member = member
        headers = {"Accept": JSON}
        if credentials.token:
            headers["Authorization"] = f"Bearer {credentials.token}"
        self._http = MemberHttp(member.alias, member.uri, headers=headers,
                                timeout_s=timeout_s, transport=transport)

    def __repr__(self) -> str:
        return f"ShoalMember(alias={self.alias!r}, uri={self.member.uri!r})"

    @property
    def alias(self) -> str:
        return self.member.alias

    def close(self) -> None:
        self._http.close()

    def submit(self, request: CopyRequest) -> str:
        if request.document_kind == "shoal":
            body = request.document
            _check_name(self.alias, request)
        elif request.document_kind == "openpai-v2":
            body = json.dumps(openpai_job(self.alias, request))
        else:
            raise MemberRefusedError(self.alias, f"a Shoal member does not run a "
                                                 f"{request.document_kind[:40]!r} document")
        response = self._http.request(
            "POST", f"{API}/jobs", content=body.encode(),
            headers={"Content-Type": JSON, "Idempotency-Key": request.name[:255]})
        return str(_json(self.alias, response)["metadata"]["name"])

    def status(self, remote_id: str) -> RemoteStatus:
        path = _job(remote_id)
        try:
            status = _json(self.alias, self._http.request("GET", path))["status"]
            state = JobState(status["state"])
            counts: dict[str, int] = {str(k): int(v) for k, v in
                                      (status.get("taskCounts") or {}).items()}
            started = _running_since(status.get("events") or ())
            if started is None and state is not JobState.PENDING:
                # The job's latest events no longer reach back to its start: the oldest do.
                page = _json(self.alias, self._http.request(
                    "GET", f"{path}/events", params={"limit": EVENT_PAGE}))
                started = _running_since(page.get("items") or ())
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise MemberRefusedError(self.alias, f"GET {path}: not a Shoal job's status "
                                                 f"({type(exc).__name__})") from None
        detail = _detail(state, counts)
        reason = status.get("pendingReason")
        if state is JobState.PENDING and isinstance(reason, dict) and reason.get("message"):
            detail = f"waits: {str(reason['message'])[:MAX_REASON_CHARS]}"
        return RemoteStatus(state=_STATES[state], member_state=state.value,
                            started_at=started, detail=detail)

    def cancel(self, remote_id: str) -> None:
        # 404: no such job (never submitted, or deleted); 409: it has already ended.
        self._http.request("POST", f"{_job(remote_id)}/cancel",
                           ok_statuses=frozenset({404, 409}))

    def find(self, name: str) -> str | None:
        response = self._http.request("GET", _job(name), ok_statuses=frozenset({404}))
        if response.status_code == 404:
            return None
        return str(_json(self.alias, response)["metadata"]["name"])

    def logs(self, remote_id: str, *, limit_bytes: int = MAX_LOG_BYTES) -> str:
        """The tail of the job's first task's stdout. The member's log route reads forward
        from an offset and says nothing of a log's size, so the end is found first by
        one-byte probes (doubling, then halving: O(log size) requests, never the whole
        log read)."""
        limit = max(1, min(limit_bytes, MAX_LOG_READ))
        if not self._has_byte(remote_id, limit):
            return self._read(remote_id, 0, limit).decode("utf-8", "replace")
        low, high = limit, 2 * limit  # a byte at `low`; is there one at `high`?
        while self._has_byte(remote_id, high):
            low, high = high, 2 * high
        while high - low > 1:
            middle = (low + high) // 2
            if self._has_byte(remote_id, middle):
                low = middle
            else:
                high = middle
        return self._read(remote_id, high - limit, limit).decode("utf-8", "replace")

    def _has_byte(self, remote_id: str, offset: int) -> bool:
        return len(self._read(remote_id, offset, 1)) > 0

    def _read(self, remote_id: str, offset: int, limit: int) -> bytes:
        response = self._http.request("GET", f"{_job(remote_id)}/logs",
                                      params={"offset": offset, "limit": limit})
        return response.content


def openpai_job(alias: str, request: CopyRequest) -> dict[str, Any]:
    """The Shoal `Job` document that runs an OpenPAI copy's roles (the module's docstring
    says how each field maps); `MemberRefusedError` when two roles would share a task
    group name."""
    groups: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for role in request.roles:
        group = role.name.lower().replace("_", "-").strip("-") or "main"
        if group in names:
            raise MemberRefusedError(
                alias, f"taskRoles.{role.name[:63]}: is the Shoal task group {group!r}, as "
                       f"taskRoles.{names[group][:63]} is")
        names[group] = role.name
        groups.append(_group(group, role))
    if not groups:
        raise MemberRefusedError(alias, "taskRoles: the copy has no task role")
    return {"apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": request.name},
            "spec": {"schedulerName": "shoal", "taskGroups": groups}}


def _group(name: str, role: RoleRequest) -> dict[str, Any]:
    resources: dict[str, str | int] = {"cpu": role.cpu, "memory": f"{role.memory_mib}Mi"}
    if role.gpu:
        resources["gpu"] = role.gpu
    group: dict[str, Any] = {"name": name, "replicas": role.instances, "resources": resources,
                             "command": ["/bin/sh", "-c", "\n".join(role.commands)]}
    if role.env:
        group["env"] = dict(role.env)
    return group


def _check_name(alias: str, request: CopyRequest) -> None:
    """A Shoal document is the copy's own: named as the copy, or `find` could not find it."""
    try:
        document = json.loads(request.document)
    except ValueError:
        raise MemberRefusedError(alias, "the copy's document is not JSON") from None
    metadata = document.get("metadata") if isinstance(document, dict) else None
    if not isinstance(metadata, dict) or metadata.get("name") != request.name:
        raise MemberRefusedError(alias, f"metadata.name: the document must be named "
                                        f"{request.name!r}, the copy's name")


def _job(name: str) -> str:
    return f"{API}/jobs/{quote(name, safe='')}"


def _json(alias: str, response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise MemberRefusedError(alias, f"{response.request.method} {response.request.url.path}"
                                        ": the answer is not Shoal's JSON; is it a Shoal "
                                        "server?")
    return data


def _running_since(events: Any) -> datetime | None:
    """When the job (not one task) last entered Running, from its events."""
    started: float | None = None
    for event in events:
        if event.get("task") is None and event.get("target") == JobState.RUNNING.value:
            started = float(event["time"])
    return None if started is None else datetime.fromtimestamp(started, UTC)


def _detail(state: JobState, counts: dict[str, int]) -> str:
    """The task counts in words; for a running gang, how much of it runs: Shoal calls a job
    Running once its gang minimum is bound, before every process has started."""
    total = sum(counts.values())
    if not total:
        return ""
    parts = ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items()))
    running = counts.get("Running", 0)
    if state is JobState.RUNNING and running < total:
        return f"partially running: {running} of {total} tasks running ({parts})"
    return f"{total} task{'s' if total > 1 else ''}: {parts}"
