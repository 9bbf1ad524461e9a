"""The Python client's multi-cluster verbs (issue 19): the member clusters (admins: declare,
change, remove one), and submit / list / get / stop / logs of
multi-cluster jobs — a mixin of `ShoalClient`, with the frozen views it returns. Light on
purpose: no server, store or scheduler import (`shoal mc get` loads this and httpx only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from shoal.client.transport import Transport

if TYPE_CHECKING:
    from shoal.client.client import Spec

API = "/api/v1"
Json = dict[str, Any]


def _f(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class ClusterView:
    """A member cluster as the super scheduler reports it (never its credentials)."""

    alias: str
    uri: str
    kind: str
    gpu_type: str | None
    priority: int
    reachable: bool | None
    last_error: str
    retry_at: float | None
    declared: str = "file"
    """`file` (the clusters file: read-only through the API) or `api` (an admin declared
    it)."""
    raw: Json = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def from_json(cls, d: Json) -> ClusterView:
        return cls(str(d["alias"]), str(d["uri"]), str(d["kind"]), d.get("gpuType"),
                   int(d["priority"]), d.get("reachable"), str(d.get("lastError") or ""),
                   _f(d.get("retryAt")), str(d.get("declared") or "file"), d)


@dataclass(frozen=True)
class McCopyView:
    """One copy of a multi-cluster job on one member, and why it was kept or cancelled."""

    cluster: str
    round: int
    name: str
    remote_id: str | None
    state: str
    member_state: str
    lost: bool
    submitted_at: float | None
    running_since: float | None
    ended_at: float | None
    verdict: str | None
    why: str
    cancel_requested_at: float | None
    cancels_issued: int
    last_error: str

    @classmethod
    def from_json(cls, d: Json) -> McCopyView:
        return cls(str(d["cluster"]), int(d["round"]), str(d["name"]), d.get("remoteId"),
                   str(d["state"]), str(d.get("memberState") or ""), bool(d.get("lost")),
                   _f(d.get("submittedAt")), _f(d.get("runningSince")), _f(d.get("endedAt")),
                   d.get("verdict"), str(d.get("why") or ""), _f(d.get("cancelRequestedAt")),
                   int(d.get("cancelsIssued") or 0), str(d.get("lastError") or ""))


@dataclass(frozen=True)
class McJobView:
    """A multi-cluster job: its state, round, kept member and copies."""

    name: str
    owner: str
    policy: str
    state: str
    round: int
    kept: str | None
    reason: str
    submitted: float
    ended: float | None
    stop_requested: bool
    copies: tuple[McCopyView, ...]
    raw: Json = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def from_json(cls, d: Json) -> McJobView:
        return cls(str(d["name"]), str(d["owner"]), str(d["policy"]), str(d["state"]),
                   int(d["round"]), d.get("kept"), str(d.get("reason") or ""),
                   float(d["submitted"]), _f(d.get("ended")), bool(d.get("stopRequested")),
                   tuple(McCopyView.from_json(c) for c in d.get("copies") or ()), d)

    @property
    def final(self) -> bool:
        return self.ended is not None


class MultiClusterVerbs(Transport):
    """`ShoalClient`'s multi-cluster methods (it supplies `_get`, `_send`, `_json`,
    `_post_spec`)."""

    def member_clusters(self) -> list[ClusterView]:
        """The super scheduler's members, each with whether it answered lately."""
        return [ClusterView.from_json(d) for d in self._get(f"{API}/clusters")]

    def declare_cluster(self, document: Spec) -> ClusterView:
        """Declare a member (admins): a `kind: Cluster` document (text, file or mapping),
        its token, if any, in `spec.credentials.token` — the server stores it sealed and
        never returns it."""
        return ClusterView.from_json(self._post_spec(f"{API}/clusters", document))

    def change_cluster(self, alias: str, *, uri: str | None = None,
                       gpu_type: str | None = None, clear_gpu_type: bool = False,
                       priority: int | None = None, user: str | None = None,
                       token: str | None = None) -> ClusterView:
        """Change a member declared through the API (admins); what is left None is kept —
        the token too."""
        body: Json = {}
        if uri is not None:
            body["uri"] = uri
        if clear_gpu_type or gpu_type is not None:
            body["gpuType"] = None if clear_gpu_type else gpu_type
        if priority is not None:
            body["priority"] = priority
        credentials = {k: v for k, v in (("user", user), ("token", token)) if v is not None}
        if credentials:
            body["credentials"] = credentials
        return ClusterView.from_json(self._json(self._send(
            "PUT", f"{API}/clusters/{_q(alias)}", retry=True, json=body)))

    def remove_cluster(self, alias: str) -> None:
        """Remove a member declared through the API (admins); refused (409) while a job
        that has not ended uses it."""
        self._send("DELETE", f"{API}/clusters/{_q(alias)}", retry=True)

    def submit_multicluster(self, spec: Spec) -> McJobView:
        """Submit a `super-2` or `MultiClusterJob` document (text, file or mapping)."""
        return McJobView.from_json(self._post_spec(f"{API}/multi-cluster-jobs", spec))

    def multicluster_jobs(self) -> list[McJobView]:
        return [McJobView.from_json(d) for d in self._get(f"{API}/multi-cluster-jobs")]

    def multicluster_job(self, name: str) -> McJobView:
        return McJobView.from_json(self._get(f"{API}/multi-cluster-jobs/{_q(name)}"))

    def stop_multicluster(self, name: str) -> McJobView:
        return McJobView.from_json(self._json(self._send(
            "POST", f"{API}/multi-cluster-jobs/{_q(name)}/stop", retry=True)))

    def multicluster_logs(self, name: str, limit: int = 64 * 1024) -> str:
        """The tail of the kept copy's log, read through its member."""
        return self._send("GET", f"{API}/multi-cluster-jobs/{_q(name)}/logs", retry=True,
                          params={"limit": limit}).text


def _q(name: str) -> str:
    return quote(name, safe="")
