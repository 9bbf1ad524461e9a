"""The cluster a trace is replayed on: `ClusterDescription`, read from native `shoal/v1`
YAML, from an Alibaba node list, or made up from a shorthand such as `125x8`.

- `load_cluster(path)`: the Node documents (with `count` for identical nodes) and optional
  VirtualCluster and PriorityClass documents of a `shoal/v1` file, validated by the spec
  layer (`shoal.spec`); Job and SchedulerProfile documents in the file are validated too but
  not used, so a full example such as `examples/quickstart.yaml` also works as a cluster.
- `synthetic_cluster(nodes, gpus_per_node, …)`: identical nodes named `node-0` … `node-<n-1>`.
- `parse_cluster_arg(text)`: what a command line's `--cluster` takes: an existing file
  (`.csv` → an Alibaba node list, anything else → `load_cluster`) or the shorthand
  `<nodes>x<gpus>[:<gpu type>]`, e.g. `125x8` (125 nodes of 8 V100s) or `16x4:A100`.

`gpus_per_node` is what the gang shape rule of `shoal.sim.trace` needs: by default the most
common GPU count among the nodes that have GPUs (the larger on a tie; 0 when none has any).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from shoal.api import GPU_TYPE_LABEL, ZERO, Node, PriorityClass, Resources, VirtualCluster
from shoal.api.flavors import ResourceFlavor
from shoal.api.resources import total
from shoal.sim.loaders._yaml import document_lines, read_text, spec_error
from shoal.sim.loaders.alibaba import GpuSharing, load_alibaba_nodes
from shoal.sim.trace import TraceError
from shoal.spec import SpecError, load_text
from shoal.spec.limits import FILE_LIMITS

#: `125x8`, `125 x 8`, `16x4:A100` (nodes × GPUs per node, optional GPU type).
_SHORTHAND = re.compile(
    r"^\s*(\d+)\s*[xX×]\s*(\d+)\s*(?::\s*([A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)\s*)?$")
DEFAULT_GPU_TYPE = "V100"


@dataclass(frozen=True)
class ClusterDescription:
    """Nodes, the virtual clusters declared for them, and the gang shape's node size."""

    nodes: tuple[Node, ...]
    virtual_clusters: tuple[VirtualCluster, ...] = ()
    """As declared; the implicit `default` queue is not added here."""
    gpus_per_node: int = 0
    priority_classes: tuple[PriorityClass, ...] = ()
    """Declared ones only; the built-in classes always exist besides them."""
    source: str = "<synthetic>"
    resource_flavors: tuple[ResourceFlavor, ...] = ()
    """Declared resource flavors (issue 16)."""

    @staticmethod
    def of(nodes: Iterable[Node], virtual_clusters: Iterable[VirtualCluster] = (), *,
           gpus_per_node: int | None = None,
           priority_classes: Iterable[PriorityClass] = (),
           source: str = "<synthetic>",
           resource_flavors: Iterable[ResourceFlavor] = ()) -> ClusterDescription:
        """Build one; `gpus_per_node` defaults to the most common GPU count of the nodes."""
        node_tuple = tuple(nodes)
        if gpus_per_node is None:
            gpus_per_node = most_common_gpus(node_tuple)
        elif gpus_per_node < 1:
            raise ValueError(f"gpus_per_node must be at least 1, got {gpus_per_node}")
        return ClusterDescription(node_tuple, tuple(virtual_clusters), gpus_per_node,
                                  tuple(priority_classes), source, tuple(resource_flavors))

    @property
    def capacity(self) -> Resources:
        """The sum of the nodes' allocatable resources."""
        return total(n.allocatable_resources for n in self.nodes) if self.nodes else ZERO

    @property
    def gpus(self) -> int:
        return self.capacity.gpu

    def gpu_types(self) -> set[str]:
        return {n.labels[GPU_TYPE_LABEL] for n in self.nodes if GPU_TYPE_LABEL in n.labels}


def most_common_gpus(nodes: Iterable[Node]) -> int:
    """The most common GPU count among nodes with GPUs (the larger on a tie), 0 if none."""
    counts = Counter(n.capacity.gpu for n in nodes if n.capacity.gpu > 0)
    if not counts:
        return 0
    return max(counts.items(), key=lambda item: (item[1], item[0]))[0]


def load_cluster(path: str | os.PathLike[str], *,
                 gpus_per_node: int | None = None) -> ClusterDescription:
    """Load a `shoal/v1` cluster file; errors name the file, the line and the field."""
    source, text = read_text(path)
    try:
        bundle = load_text(text, source, limits=FILE_LIMITS)
    except SpecError as exc:
        raise spec_error(source, exc, document_lines(text)) from exc
    if not bundle.nodes:
        raise TraceError(source, None, None, "declares no Node; a cluster needs at least one")
    return ClusterDescription.of(bundle.nodes, bundle.virtual_clusters,
                                 gpus_per_node=gpus_per_node,
                                 priority_classes=bundle.priority_classes, source=source,
                                 resource_flavors=bundle.resource_flavors)


def synthetic_cluster(nodes: int, gpus_per_node: int = 8, cpu: int = 64000,
                      memory: int = 512 * 1024, gpu_type: str | None = DEFAULT_GPU_TYPE
                      ) -> ClusterDescription:
    """`nodes` identical nodes of `gpus_per_node` GPUs, `cpu` millicores and `memory` MiB,
    labelled `gpu-type: <gpu_type>` (no label when None)."""
    if nodes < 1:
        raise ValueError(f"a cluster needs at least one node, got {nodes}")
    if gpus_per_node < 1:
        raise ValueError(f"gpus_per_node must be at least 1, got {gpus_per_node}")
    capacity = Resources(cpu=cpu, memory=memory, gpu=gpus_per_node)
    labels = {GPU_TYPE_LABEL: gpu_type} if gpu_type else {}
    shown = f"{nodes}x{gpus_per_node}" + (f":{gpu_type}" if gpu_type else "")
    return ClusterDescription(
        tuple(Node(name=f"node-{i}", capacity=capacity, labels=labels) for i in range(nodes)),
        gpus_per_node=gpus_per_node, source=shown)


def parse_cluster_arg(text_or_path: str | os.PathLike[str], *,
                      gpu_sharing: GpuSharing = "round-up") -> ClusterDescription:
    """A cluster file (`.csv`: an Alibaba node list, with `gpu_sharing`; otherwise
    `shoal/v1` YAML) when the path exists, else the shorthand `<nodes>x<gpus>[:<type>]`."""
    text = os.fspath(text_or_path)
    if Path(text).is_file():
        if text.lower().endswith(".csv"):
            return ClusterDescription.of(load_alibaba_nodes(text, gpu_sharing=gpu_sharing),
                                         source=text)
        return load_cluster(text)
    match = _SHORTHAND.match(text)
    if match is None:
        raise TraceError(text, None, None,
                         "is neither an existing cluster file nor a shorthand like '125x8' "
                         "(nodes x GPUs per node, optionally ':A100' for the GPU type)")
    nodes, gpus = int(match[1]), int(match[2])
    if nodes < 1 or gpus < 1:
        raise TraceError(text, None, None, "a cluster shorthand needs at least one node of at "
                         "least one GPU")
    return synthetic_cluster(nodes, gpus, gpu_type=match[3] or DEFAULT_GPU_TYPE)
