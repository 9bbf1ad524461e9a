"""What the API's answers share (`shoal.server.models` for the cluster's objects and users,
`shoal.server.job_models` for jobs): the base of every answer model, resources as
Kubernetes-style quantities, and a virtual cluster's fixed-size nodes (a job's own virtual
cluster has them too).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from shoal.api import (
    Resources,
    VirtualCluster,
)

Quantities = dict[str, str | int]


class OutModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


def quantities(resources: Resources) -> Quantities:
    return resources.to_quantities()


class FixedSizeNodeOut(OutModel):
    resources: Quantities
    labels: dict[str, str]


class FixedSizeNodesOut(OutModel):
    nodes: list[FixedSizeNodeOut]
    scheduling_policy: str = Field(alias="schedulingPolicy")


def fixed_size_nodes_out(vc: VirtualCluster) -> list[FixedSizeNodesOut]:
    return [FixedSizeNodesOut(
        nodes=[FixedSizeNodeOut(resources=quantities(n.resources), labels=dict(n.labels))
               for n in group.nodes], scheduling_policy=group.policy.value)
        for group in vc.fixed_size_nodes]
