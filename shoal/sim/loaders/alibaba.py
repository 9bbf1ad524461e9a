"""The Alibaba GPU cluster trace loader (alibaba/clusterdata `cluster-trace-gpu-v2023`, the
"openb" pod and node lists), with its fractional GPUs.

**Pods** (`openb_pod_list_*.csv`; each pod is one task, `replicas` 1). Column mapping:

- `name` → `name`: unique; letters, digits, '_' and '-';
- `cpu_milli` → `per_task.cpu`: millicores, whole, >= 0;
- `memory_mib` → `per_task.memory`: MiB, whole, >= 0;
- `num_gpu`, `gpu_milli` → `per_task.gpu` or the extra `gpu-milli` (see GPU sharing below):
  the GPUs the pod uses (whole, >= 0) and the thousandths of each it uses (0–1000; 0
  exactly when `num_gpu` is 0);
- `gpu_spec` (optional) → `node_selector`: one GPU model → `{gpu-type: <model>}`; several
  models separated by `|` → no selector, because a selector matches one value (the pod may
  then go to any GPU); empty (or `nan`) → no selector. A repeated model counts once;
- `qos` (optional) → `priority_class`: `LS` and `Guaranteed` → `production`, `Burstable` →
  `normal`, `BE` → `experiment`, empty → none; any other value is an error;
- `pod_phase`: not used (its `Pending` pods are the ones without `scheduled_time`);
- `creation_time` → `submit_time`: seconds, >= 0, shifted so that the earliest is 0.0;
- `scheduled_time`, `deletion_time` → `duration = deletion_time - scheduled_time`, the time
  the pod held its resources (its wait before `scheduled_time` is the simulator's to make).

A pod is *skipped*, and counted in `Trace.skipped` / `Trace.skip_reasons`, when it was never
scheduled (empty `scheduled_time`), has no `deletion_time`, or its duration is not positive.
The counts cover the whole file, also when `limit` keeps fewer jobs. In the published files
every pod with an empty `scheduled_time` is `Pending` (897 of 8,152), and `Running` pods end
at the trace's end, so their durations are censored. Failed pods did run, and are kept.

**GPU sharing.** In these files a fraction of a GPU (`gpu_milli` < 1000) occurs only with
`num_gpu` 1: pod `num_gpu 1, gpu_milli 460` uses 0.46 of one GPU. Two models:

- `"round-up"` (default): a pod that touches a GPU holds it whole, `gpu = num_gpu` (0.46 → 1);
  GPU sharing is lost, so the cluster looks fuller than it was.
- `"milli"`: the pod asks for no whole GPU but for `num_gpu × gpu_milli` of the extra resource
  `gpu-milli`, and `load_alibaba_nodes(..., gpu_sharing="milli")` gives each node
  `gpu × 1000` of it (besides its whole GPUs, which no pod then asks for). Several pods
  then share a GPU; a multi-GPU pod's share is pooled per node (8 × 1000 milli fits a node
  of 8 GPUs) and which devices it uses is not modelled.

**Nodes** (`openb_node_list_*.csv`), one `Node` each: `sn` → name, `cpu_milli` → cpu,
`memory_mib` → memory, `gpu` → gpu, `model` → the `gpu-type` label (none when empty or
`nan`). `G1`, `G2` and `G3` are GPU models Alibaba does not disclose.
"""

from __future__ import annotations

import os
from typing import Literal

from shoal.api import GPU_TYPE_LABEL, Node, Resources
from shoal.sim.loaders._common import check_limit, finish, gc_paused
from shoal.sim.loaders._csv import count, job_name, number, object_name, read_table
from shoal.sim.trace import Trace, TraceError, TraceJob

GpuSharing = Literal["milli", "round-up"]
#: The extra resource of the "milli" model: thousandths of a GPU.
GPU_MILLI = "gpu-milli"
#: Alibaba's QoS classes → Shoal's priority classes.
QOS_PRIORITY = {
    "LS": "production",
    "Guaranteed": "production",
    "Burstable": "normal",
    "BE": "experiment",
}
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time",
               "deletion_time", "scheduled_time")
POD_OPTIONAL = ("gpu_spec", "qos")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")

NEVER_SCHEDULED = "never scheduled (empty scheduled_time)"
NEVER_DELETED = "no deletion_time"
NOT_POSITIVE = "non-positive duration (deletion_time <= scheduled_time)"


@gc_paused
def load_alibaba(pods_path: str | os.PathLike[str], *, limit: int | None = None,
                 gpu_sharing: GpuSharing = "round-up") -> Trace:
    """Load an openb pod list; `limit` keeps the first N pods by creation time."""
    check_limit(limit)
    _check_sharing(gpu_sharing)
    table = read_table(pods_path, POD_COLUMNS, POD_OPTIONAL)
    source = table.source
    col = table.columns
    i_spec = table.index("gpu_spec")
    i_qos = table.index("qos")
    skipped = {NEVER_SCHEDULED: 0, NEVER_DELETED: 0, NOT_POSITIVE: 0}
    first_line: dict[str, int] = {}
    jobs: list[TraceJob] = []
    for line, row in table.rows:
        name = job_name(source, line, "name", row[col["name"]])
        if name in first_line:
            raise TraceError(source, line, "name",
                             f"pod {name!r} is already given on line {first_line[name]}")
        first_line[name] = line
        cpu = count(source, line, "cpu_milli", row[col["cpu_milli"]])
        memory = count(source, line, "memory_mib", row[col["memory_mib"]])
        num_gpu = count(source, line, "num_gpu", row[col["num_gpu"]])
        gpu_milli = count(source, line, "gpu_milli", row[col["gpu_milli"]], maximum=1000)
        if (num_gpu == 0) != (gpu_milli == 0):
            raise TraceError(source, line, "gpu_milli",
                             f"must be 0 exactly when num_gpu is 0, got {gpu_milli} with "
                             f"num_gpu {num_gpu}")
        created = number(source, line, "creation_time", row[col["creation_time"]])
        scheduled_text = row[col["scheduled_time"]].strip()
        deleted_text = row[col["deletion_time"]].strip()
        if not scheduled_text:
            skipped[NEVER_SCHEDULED] += 1
            continue
        if not deleted_text:
            skipped[NEVER_DELETED] += 1
            continue
        scheduled = number(source, line, "scheduled_time", scheduled_text)
        deleted = number(source, line, "deletion_time", deleted_text)
        if deleted <= scheduled:
            skipped[NOT_POSITIVE] += 1
            continue
        if gpu_sharing == "milli":
            per_task = Resources.of(cpu=cpu, memory=memory,
                                    extras={GPU_MILLI: num_gpu * gpu_milli})
        else:
            per_task = Resources(cpu=cpu, memory=memory, gpu=num_gpu)
        selector = {} if i_spec is None else _selector(row[i_spec])
        priority = None if i_qos is None else _priority(source, line, row[i_qos])
        jobs.append(TraceJob(name, created, deleted - scheduled, 1, per_task,
                             priority_class=priority, node_selector=selector))
    return finish(jobs, source, limit, {k: v for k, v in skipped.items() if v})


@gc_paused
def load_alibaba_nodes(nodes_path: str | os.PathLike[str], *,
                       gpu_sharing: GpuSharing = "round-up") -> tuple[Node, ...]:
    """Load an openb node list, in file order."""
    _check_sharing(gpu_sharing)
    table = read_table(nodes_path, NODE_COLUMNS)
    source = table.source
    i_sn, i_cpu, i_memory, i_gpu, i_model = (table.columns[c] for c in NODE_COLUMNS)
    first_line: dict[str, int] = {}
    nodes: list[Node] = []
    for line, row in table.rows:
        name = object_name(source, line, "sn", row[i_sn])
        if name in first_line:
            raise TraceError(source, line, "sn",
                             f"node {name!r} is already given on line {first_line[name]}")
        first_line[name] = line
        cpu = count(source, line, "cpu_milli", row[i_cpu])
        memory = count(source, line, "memory_mib", row[i_memory])
        gpu = count(source, line, "gpu", row[i_gpu])
        model = "" if _blank(row[i_model]) else row[i_model].strip()
        extras = {GPU_MILLI: gpu * 1000} if gpu_sharing == "milli" else {}
        capacity = Resources.of(cpu=cpu, memory=memory, gpu=gpu, extras=extras)
        nodes.append(Node(name=name, capacity=capacity,
                          labels={GPU_TYPE_LABEL: model} if model else {}))
    if not nodes:
        raise TraceError(source, None, None, "lists no nodes")
    return tuple(nodes)


def _check_sharing(gpu_sharing: str) -> None:
    if gpu_sharing not in ("milli", "round-up"):
        raise ValueError(f"gpu_sharing must be 'milli' or 'round-up', got {gpu_sharing!r}")


def _blank(text: str) -> bool:
    """Empty, or `nan` as pandas writes a missing value (the upstream README shows it)."""
    return text.strip().lower() in ("", "nan")


def _selector(spec: str) -> dict[str, str]:
    models = {model.strip() for model in spec.split("|") if not _blank(model)}
    return {GPU_TYPE_LABEL: models.pop()} if len(models) == 1 else {}


def _priority(source: str, line: int, qos: str) -> str | None:
    qos = qos.strip()
    if not qos:
        return None
    try:
        return QOS_PRIORITY[qos]
    except KeyError:
        raise TraceError(source, line, "qos", f"must be one of {', '.join(QOS_PRIORITY)} or "
                         f"empty, got {qos!r}") from None
