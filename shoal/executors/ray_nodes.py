"""The Ray engine's node inventory: what Ray says of its nodes, as Shoal's `NodeHealth`.

Pure: it reads the records `ray.nodes()` returns (and the ids of the nodes Ray is draining)
and imports nothing of Ray, so the Ray engine (`shoal.executors.ray_engine`) polls Ray once
and this module turns the answer into Shoal's words, cheaply (the control loop asks every
few seconds).

- **Name.** A node is named for Shoal by its Ray node label `shoal.io/node` (`NODE_LABEL`:
  `ray start --labels='{"shoal.io/node": "gpu-07"}'`), else by its Ray node id. A name that
  has an alive node is that node (a machine restarted under the same label leaves a dead
  record behind it).
- **Health.** Alive nodes are ready; a node Ray is draining is not ready ("draining": its
  tasks still run, nothing new goes there); a dead node is not ready ("dead: " and Ray's
  death message).
- **Address.** `NodeManagerAddress`, the IP other machines reach it at: rank 0's node's is
  a job's MASTER_ADDR.
- **Capacity.** Ray's `CPU` in millicores, `memory` (bytes) in MiB rounded down, `GPU` as
  whole GPUs, and every custom resource (`ray start --resources='{"rdma": 2}'`) as an extra
  of that name (whole units, rounded down). Ray's own bookkeeping resources are not
  capacity: `node:<ip>`, `node:__internal_head__`, `object_store_memory`, and
  `accelerator_type:<model>`, which is a label instead (below). A name Shoal cannot use as
  a resource name is skipped.
- **Labels.** Ray's node labels pass through, for `nodeSelector` (`team: nlp`), except
  Ray's own `ray.io/*` ones (the node id and the like: Shoal places by node name, never by
  a Ray id) and `shoal.io/node` (it is the name). The GPU model Ray detected, its
  `accelerator_type:<model>` resource, becomes the `gpu-type` label, normalised as the
  local inventory normalises nvidia-smi's names (`shoal.executors.inventory`); a label
  `gpu-type` set on the node itself wins over it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from shoal.api.objects import GPU_TYPE_LABEL, Node
from shoal.api.resources import Resources
from shoal.executors.contract import NodeHealth
from shoal.executors.inventory import normalise_gpu_model

#: The Ray node label that names a node for Shoal.
NODE_LABEL = "shoal.io/node"
#: Ray's resource that says which GPU model a node has: `accelerator_type:A100`.
ACCELERATOR_PREFIX = "accelerator_type:"
_RAY_LABEL_PREFIX = "ray.io/"
_CORE = {"CPU", "GPU", "memory"}
_NOT_CAPACITY_PREFIXES = ("node:", ACCELERATOR_PREFIX)
_NOT_CAPACITY = {"object_store_memory"}
_EXTRA_NAME = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9_.\-/]*[a-zA-Z0-9])?$")
_MIB = 2**20


@dataclass(frozen=True, slots=True)
class Inventory:
    """Ray's nodes as Shoal sees them, and the Ray node id of each alive one by name."""

    health: tuple[NodeHealth, ...]
    alive: Mapping[str, str]


def node_name(record: Mapping[str, Any]) -> str:
    """A node's Shoal name: its `shoal.io/node` label, else its Ray node id."""
    labels = record.get("Labels") or {}
    return str(labels.get(NODE_LABEL) or record["NodeID"])


def node_of(record: Mapping[str, Any]) -> Node:
    """What a Ray node offers, as a Shoal `Node` (see the module docstring)."""
    resources: Mapping[str, Any] = record.get("Resources") or {}
    extras: dict[str, int] = {}
    models: list[str] = []
    for key, amount in resources.items():
        name = str(key)
        if name.startswith(ACCELERATOR_PREFIX):
            models.append(normalise_gpu_model(name.removeprefix(ACCELERATOR_PREFIX)))
        elif name in _CORE or name in _NOT_CAPACITY \
                or name.startswith(_NOT_CAPACITY_PREFIXES) or not _EXTRA_NAME.match(name):
            continue
        elif _whole(amount) > 0:
            extras[name] = _whole(amount)
    capacity = Resources.of(cpu=max(0, round(_number(resources.get("CPU", 0)) * 1000)),
                            memory=_whole(resources.get("memory", 0)) // _MIB,
                            gpu=_whole(resources.get("GPU", 0)), extras=extras)
    labels = {str(k): str(v) for k, v in (record.get("Labels") or {}).items()
              if not str(k).startswith(_RAY_LABEL_PREFIX) and k != NODE_LABEL}
    if models and GPU_TYPE_LABEL not in labels:
        labels[GPU_TYPE_LABEL] = "+".join(sorted(set(models)))
    return Node(node_name(record), capacity, labels)


#: Why a node Ray still lists as alive is not ready: it refused work pinned to it.
UNPLACEABLE = "gone: Ray can place nothing on it any more (not yet reported dead)"


def inventory(records: Iterable[Mapping[str, Any]], draining: Collection[str] = (),
              unplaceable: Collection[str] = ()) -> Inventory:
    """Ray's node records (`ray.nodes()`), the ids of the nodes it drains and of those
    that refused work pinned to them, as Shoal's node health, sorted by name; a name with
    an alive node is that node."""
    found: dict[str, NodeHealth] = {}
    alive: dict[str, str] = {}
    for record in records:
        name, node_id = node_name(record), str(record["NodeID"])
        address = str(record.get("NodeManagerAddress") or "")
        if record.get("Alive"):
            alive[name] = node_id
            ready, reason = ((False, "draining") if node_id in draining
                             else (False, UNPLACEABLE) if node_id in unplaceable
                             else (True, ""))
            found[name] = NodeHealth(name, ready=ready, reason=reason, address=address,
                                     node=node_of(record))
        elif name not in alive:
            why = str(record.get("DeathReasonMessage") or "")
            found[name] = NodeHealth(name, ready=False, reason=f"dead: {why}" if why else "dead",
                                     address=address, node=node_of(record))
    return Inventory(tuple(found[name] for name in sorted(found)), alive)


def _number(amount: Any) -> float:
    """A Ray resource amount (a float); 0 when unreadable."""
    try:
        value = float(amount)
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) else 0.0


def _whole(amount: Any) -> int:
    """A Ray resource amount in whole units, rounded down (never negative)."""
    return max(0, int(_number(amount)))
