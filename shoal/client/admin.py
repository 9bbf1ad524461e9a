"""The Python client's admin verbs of issue 21: virtual clusters and priority classes
updated and deleted, users listed, updated and deleted, their tokens issued and revoked,
nodes cordoned, drained and uncordoned, a job's priority class changed, and the audit log —
a mixin of `ShoalClient`, with the audit log's views. Light on purpose: no server, store or
scheduler import.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

if TYPE_CHECKING:
    from shoal.client.client import Spec
    from shoal.client.cluster_views import (
        NodeView,
        PriorityClassView,
        UserView,
        VirtualClusterView,
    )
    from shoal.client.models import JobView

API = "/api/v1"
Json = dict[str, Any]


@dataclass(frozen=True)
class AuditEntryView:
    """One admin change: `actor` did `action` (`node.drain`) on `target`, `at` (ISO 8601)."""

    id: int
    at: str
    actor: str
    action: str
    target: str
    detail: str
    raw: Json = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def from_json(cls, d: Json) -> AuditEntryView:
        return cls(int(d["id"]), str(d["at"]), str(d["actor"]), str(d["action"]),
                   str(d["target"]), str(d.get("detail") or ""), d)


@dataclass(frozen=True)
class AuditPage:
    items: tuple[AuditEntryView, ...]
    next: int | None
    """`after` for the next (older) page; None: this was the last."""


class AdminVerbs:
    """`ShoalClient`'s admin methods (it supplies `_get`, `_send`, `_json`, `_post_spec`)."""

    def _get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        raise NotImplementedError

    def _send(self, method: str, path: str, *, retry: bool, stream: bool = False,
              timeout: httpx.Timeout | None = None, **kwargs: Any) -> httpx.Response:
        raise NotImplementedError

    def _json(self, response: httpx.Response) -> Any:
        raise NotImplementedError

    def _post_spec(self, path: str, spec: Spec, headers: Mapping[str, str] | None = None,
                   *, retry: bool = False) -> Any:
        raise NotImplementedError

    def _put_documents(self, path: str, spec: Spec) -> list[Any]:
        """PUT each document of `spec` to `path/<its metadata.name>`; the answers."""
        return [self._json(self._send("PUT", f"{path}/{_q(name)}", retry=True,
                                      content=json.dumps(doc).encode(),
                                      headers={"Content-Type": "application/json"}))
                for name, doc in _documents(spec)]

    # ---- virtual clusters and priority classes -------------------------------------------

    def update_virtual_clusters(self, spec: Spec) -> list[VirtualClusterView]:
        """Replace stored virtual clusters with the VirtualCluster documents of `spec`."""
        from shoal.client.cluster_views import VirtualClusterView
        return [VirtualClusterView.from_json(v)
                for v in self._put_documents(f"{API}/virtual-clusters", spec)]

    def delete_virtual_cluster(self, name: str, *, drain: bool = False
                               ) -> VirtualClusterView | None:
        """Delete a virtual cluster that holds nothing; with `drain`, close it and have it
        deleted once its last job has ended (the cluster as it is then)."""
        response = self._send("DELETE", f"{API}/virtual-clusters/{_q(name)}", retry=False,
                              params={"drain": "true"} if drain else None)
        if not drain:
            return None
        from shoal.client.cluster_views import VirtualClusterView
        return VirtualClusterView.from_json(self._json(response))

    def create_priority_classes(self, spec: Spec) -> list[PriorityClassView]:
        from shoal.client.cluster_views import PriorityClassView
        return [PriorityClassView.from_json(p)
                for p in self._post_spec(f"{API}/priority-classes", spec)]

    def update_priority_classes(self, spec: Spec) -> list[PriorityClassView]:
        from shoal.client.cluster_views import PriorityClassView
        return [PriorityClassView.from_json(p)
                for p in self._put_documents(f"{API}/priority-classes", spec)]

    def delete_priority_class(self, name: str) -> None:
        self._send("DELETE", f"{API}/priority-classes/{_q(name)}", retry=False)

    # ---- users ---------------------------------------------------------------------------

    def users(self) -> list[UserView]:
        from shoal.client.cluster_views import UserView
        return [UserView.from_json(u) for u in self._get(f"{API}/users")]

    def update_user(self, name: str, *, admin: bool | None = None,
                    queues: Collection[str] | None = None) -> UserView:
        """Change a user's admin flag and/or queues (replaced); None keeps it."""
        body: Json = {}
        if admin is not None:
            body["admin"] = admin
        if queues is not None:
            body["queues"] = list(queues)
        from shoal.client.cluster_views import UserView
        return UserView.from_json(self._json(self._send(
            "PATCH", f"{API}/users/{_q(name)}", retry=True, json=body)))

    def delete_user(self, name: str) -> None:
        """Delete a user: their tokens are revoked, their jobs kept."""
        self._send("DELETE", f"{API}/users/{_q(name)}", retry=False)

    def issue_token(self, name: str) -> str:
        """A new token for user `name` (shown only now)."""
        return str(self._json(self._send("POST", f"{API}/users/{_q(name)}/tokens",
                                         retry=False))["token"])

    def revoke_tokens(self, name: str) -> int:
        """Revoke every token of the user's own; how many."""
        return int(self._json(self._send("DELETE", f"{API}/users/{_q(name)}/tokens",
                                         retry=True))["revoked"])

    # ---- nodes and jobs ------------------------------------------------------------------

    def cordon(self, node: str) -> NodeView:
        return self._node(node, "cordon")

    def uncordon(self, node: str) -> NodeView:
        return self._node(node, "uncordon")

    def drain(self, node: str) -> NodeView:
        """Cordon the node and evict its tasks gracefully (once their protection ends)."""
        return self._node(node, "drain")

    def _node(self, node: str, verb: str) -> NodeView:
        from shoal.client.cluster_views import NodeView
        return NodeView.from_json(self._json(self._send(
            "POST", f"{API}/nodes/{_q(node)}/{verb}", retry=True)))

    def set_priority(self, job: str, priority_class: str) -> JobView:
        """Give a job that has not ended another priority class, from the next cycle."""
        from shoal.client.models import JobView
        return JobView.from_json(self._json(self._send(
            "POST", f"{API}/jobs/{_q(job)}/priority", retry=True,
            json={"priorityClass": priority_class})))

    # ---- the audit log -------------------------------------------------------------------

    def audit(self, *, limit: int = 100, after: int | None = None, actor: str | None = None,
              action: str | None = None) -> AuditPage:
        """One page of the audit log, newest first (`after`: the previous page's `next`)."""
        params = {k: v for k, v in (("limit", limit), ("after", after), ("actor", actor),
                                    ("action", action)) if v is not None}
        data = self._get(f"{API}/audit", params)
        return AuditPage(tuple(AuditEntryView.from_json(e) for e in data["items"]),
                         data.get("next"))


def _documents(spec: Spec) -> list[tuple[str, Json]]:
    """(metadata.name, document) of each document of `spec` (YAML or JSON)."""
    import yaml  # only here: loading it costs every `shoal` command's start

    from shoal.client.client import spec_text
    from shoal.client.errors import ShoalError
    out: list[tuple[str, Json]] = []
    for doc in yaml.safe_load_all(spec_text(spec)):
        if doc is None:
            continue
        name = doc.get("metadata", {}).get("name") if isinstance(doc, dict) else None
        if not isinstance(name, str) or not name:
            raise ShoalError("every document needs a metadata.name to say what it replaces")
        out.append((name, doc))
    return out


def _q(name: str) -> str:
    return quote(name, safe="")
