"""Inside a task: the cluster as the task's job sees it, and what the job does with its own
virtual cluster (seed 003's introspection and nested clusters).

Shoal gives every task `SHOAL_VIRTUAL_CLUSTER` (the virtual cluster it runs in) and, when it
runs under `shoal up`, `SHOAL_SERVER` and `SHOAL_TOKEN` (its job's token, valid until the
job ends: `shoal.control.job_scope`). From them:

- `current_cluster()` is the task's virtual cluster as if it were the whole cluster —
  Ray's `cluster_resources()`, `available_resources()` and `nodes()` are its `resources`,
  `available` and `nodes`. Nothing outside it is shown.
- `create_sub_cluster(name, ...)` creates a sub-cluster of the job's own virtual cluster and
  returns the name to submit work into (`spec.queue`); `client()` is a `ShoalClient` that
  calls the API as the job, e.g. to `submit` that work and `wait` for it.

    from shoal import runtime
    trial = runtime.create_sub_cluster("trial-1", min={"cpu": 2}, max={"cpu": 4})
    with runtime.client() as shoal:
        job = shoal.submit({..., "spec": {"queue": trial, ...}})
        shoal.wait(job.name)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from shoal.api.resources import Resources, parse_resources
from shoal.client import ShoalClient
from shoal.client.cluster_views import VirtualClusterStatusView

ENV_SERVER = "SHOAL_SERVER"
ENV_TOKEN = "SHOAL_TOKEN"
ENV_VIRTUAL_CLUSTER = "SHOAL_VIRTUAL_CLUSTER"
ENV_JOB = "SHOAL_JOB"

Quantities = Mapping[str, str | int | float]


class NotInATaskError(RuntimeError):
    """Called outside a task Shoal started under `shoal up` (a variable is missing)."""


@dataclass(frozen=True)
class VirtualNode:
    """A node of the task's cluster: a fixed-size virtual node, or its cluster's flexible
    part of a physical node (`fixed` False), on physical node `node`."""

    name: str
    node: str
    fixed: bool
    used: Resources
    total: Resources | None
    """A fixed-size node's size; None for a flexible part, which grows and shrinks."""
    labels: Mapping[str, str]


@dataclass(frozen=True)
class ClusterView:
    """The task's virtual cluster, as if it were the whole cluster."""

    name: str
    parent: str | None
    children: tuple[str, ...]
    resources: Resources
    """What it may use now: what it uses plus what it could still get (Ray's
    `cluster_resources()`)."""
    available: Resources
    """What it could still get now (Ray's `available_resources()`)."""
    used: Resources
    guaranteed: Resources
    ceiling: Mapping[str, int]
    """Its maximum; dimensions it does not limit are absent."""
    nodes: tuple[VirtualNode, ...]
    pending_jobs: int
    running_jobs: int
    running_tasks: int

    @staticmethod
    def from_status(status: VirtualClusterStatusView) -> ClusterView:
        used, available = parse_resources(status.used), parse_resources(status.available)
        nodes = [VirtualNode(str(v["name"]), str(v["node"]), True, parse_resources(v["used"]),
                             parse_resources(v["total"]), dict(v.get("labels") or {}))
                 for v in status.virtual_nodes]
        nodes += [VirtualNode(str(f["name"]), str(f["node"]), False,
                              parse_resources(f["used"]), None, {})
                  for f in status.flexible_nodes]
        return ClusterView(status.name, status.parent, tuple(status.children),
                           used + available, available, used,
                           parse_resources(status.guaranteed), dict(status.ceiling),
                           tuple(nodes), status.pending_jobs, status.running_jobs,
                           status.running_tasks)


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise NotInATaskError(f"{name} is not set: this runs outside a task that Shoal "
                              "started under `shoal up`")
    return value


def virtual_cluster() -> str:
    """The name of the virtual cluster this task runs in."""
    return _env(ENV_VIRTUAL_CLUSTER)


def job() -> str:
    """The name of this task's job."""
    return _env(ENV_JOB)


def client() -> ShoalClient:
    """A client of the Shoal server that started this task, calling as its job."""
    return ShoalClient(_env(ENV_SERVER), _env(ENV_TOKEN))


def current_cluster() -> ClusterView:
    """This task's virtual cluster now: its resources, what is available, its nodes."""
    with client() as shoal:
        return ClusterView.from_status(shoal.cluster())


def create_sub_cluster(name: str, *, min: Quantities | None = None,
                       max: Quantities | None = None, parent: str | None = None,
                       weight: int = 1, queueing_policy: str = "priority",
                       idle_timeout: float = 0) -> str:
    """Create sub-cluster `name` of this job's own virtual cluster — inside `parent`, another
    of its sub-clusters (by the name given here), if given — with a guaranteed `min` and a
    `max` (flexible resources, e.g. `{"cpu": 2, "gpu": 1}`). Returns its full name
    (`job:<job>/<name>`), which work submitted into it names as its `spec.queue`."""
    spec: dict[str, object] = {"weight": weight, "queueingPolicy": queueing_policy,
                               "flexibleIdleTimeout": idle_timeout}
    if min is not None:
        spec["flexibleResourceMin"] = dict(min)
    if max is not None:
        spec["flexibleResourceMax"] = dict(max)
    if parent is not None:
        spec["parent"] = parent
    document = {"apiVersion": "shoal/v1", "kind": "VirtualCluster",
                "metadata": {"name": name}, "spec": spec}
    with client() as shoal:
        (created,) = shoal.create_sub_clusters(job(), document)
    return created.name
