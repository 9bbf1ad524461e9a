"""Trace loaders: each public trace format (and Shoal's own) turned into a `shoal.sim.trace.Trace`,
plus the cluster a trace runs on and the mapping of trace queues onto virtual clusters.

One module per format, each documenting its column mapping:

- `itp`: Microsoft ITP CSV `job_id,submission_time,duration,num_gpu`;
- `philly`: Microsoft Philly CSV `timestamp,duration,num_gpus,gpu_time,cluster`;
- `alibaba`: Alibaba cluster-trace-gpu-v2023 (openb) pod and node lists, fractional GPUs;
- `native`: `shoal/v1` Job YAML with `metadata.arrivalTime` and `metadata.duration`;
- `cluster`: the cluster (nodes, virtual clusters) from YAML, a node list or `125x8`;
- `queues`: trace queue/user values → virtual clusters.

Every loader raises `TraceError` naming the file, line and column of a malformed row, and
sorts its jobs by submission time with the earliest at 0.0.
"""

from shoal.sim.loaders.alibaba import GPU_MILLI, QOS_PRIORITY, load_alibaba, load_alibaba_nodes
from shoal.sim.loaders.cluster import (
    ClusterDescription,
    load_cluster,
    parse_cluster_arg,
    synthetic_cluster,
)
from shoal.sim.loaders.itp import load_itp
from shoal.sim.loaders.native import load_native
from shoal.sim.loaders.philly import load_philly
from shoal.sim.loaders.queues import map_queues, queues_as_virtual_clusters

__all__ = [
    "GPU_MILLI",
    "QOS_PRIORITY",
    "ClusterDescription",
    "load_alibaba",
    "load_alibaba_nodes",
    "load_cluster",
    "load_itp",
    "load_native",
    "load_philly",
    "map_queues",
    "parse_cluster_arg",
    "queues_as_virtual_clusters",
    "synthetic_cluster",
]
