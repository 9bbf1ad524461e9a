"""The members and jobs of the multi-cluster what-if, from the Microsoft ITP traces: each
trace file a member (its jobs' home), sized from its own trace.

**Sizes.** A member has nodes of 8 GPUs, as many as the larger of: enough for its trace's
largest gang, and enough that the GPU-seconds its jobs offer over the replayed window fill
`utilisation` of it (offered GPU-seconds / window / `utilisation`, rounded up to whole
nodes). The ITP files give no cluster sizes; this rule keeps every member as busy as the
others on average, so what the policies change is when each is busy.

**GPU types, priorities and speeds.** The traces do not name GPU types either. The default
plan (`ITP_PLAN`) states one per cluster and gives a member the priority of its GPU
generation (newer is preferred, as the seed's users prefer the powerful cluster). Speeds are
1.0 unless a plan says otherwise: a copy's work is its trace duration × speed(home) /
speed(member) (`shoal.sim.multicluster`).

`split_trace` is the other input the issue names: one trace dealt over several members in
turn, each job's home the member it was dealt to.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from shoal.api.federation import ClusterKind, MemberCluster
from shoal.sim.inputs import with_trace_queues
from shoal.sim.loaders import parse_cluster_arg
from shoal.sim.loaders.itp import load_itp
from shoal.sim.multicluster import McJob, SimMember
from shoal.sim.trace import Trace

GPUS_PER_NODE = 8
DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class MemberPlan:
    """A member to build from a trace file."""

    alias: str
    trace: str
    """The file name, relative to the traces folder."""
    gpu_type: str
    priority: int
    speed: float = 1.0


ITP_PLAN = (
    MemberPlan("itp1", "cluster01.csv", "A100", 90),
    MemberPlan("itp2", "cluster02.csv", "V100", 60),
    MemberPlan("itp3", "cluster03.csv", "V100", 60),
    MemberPlan("itp4", "cluster04.csv", "P100", 30),
    MemberPlan("itp5", "cluster05.csv", "T4", 10),
)
"""ITP clusters 01–05 as five members; GPU types are stated, not from the trace."""


@dataclass(frozen=True)
class McInputs:
    jobs: tuple[McJob, ...]
    members: tuple[SimMember, ...]
    nodes: tuple[tuple[str, int], ...]
    """(alias, nodes of 8 GPUs) of each member, as sized."""


def nodes_for(trace: Trace, window: float, utilisation: float) -> int:
    """Nodes of 8 GPUs for a member whose jobs are `trace` (module text: sizes)."""
    if not 0 < utilisation <= 1:
        raise ValueError(f"utilisation: must be in (0, 1], not {utilisation}")
    largest = max((j.gpus for j in trace.jobs), default=0)
    offered = sum(j.gpus * j.duration for j in trace.jobs)
    busy = offered / window / utilisation if window > 0 else 0.0
    return max(1, math.ceil(largest / GPUS_PER_NODE), math.ceil(busy / GPUS_PER_NODE))


def itp_inputs(folder: str | Path, *, days: float, utilisation: float = 0.85,
               plan: Sequence[MemberPlan] = ITP_PLAN, jobs_per_member: int | None = None
               ) -> McInputs:
    """The jobs each trace submits in its first `days` days (at most `jobs_per_member`),
    and one member per trace sized for them."""
    if not (math.isfinite(days) and days > 0):
        raise ValueError(f"days: must be a positive number, not {days}")
    window = days * DAY
    jobs: list[McJob] = []
    members: list[SimMember] = []
    nodes: list[tuple[str, int]] = []
    for p in plan:
        loaded = load_itp(Path(folder) / p.trace, gpus_per_node=GPUS_PER_NODE)
        kept = [j for j in loaded.jobs if j.submit_time < window][:jobs_per_member]
        trace = Trace(tuple(replace(j, name=f"{p.alias}-{j.name}") for j in kept),
                      loaded.source)
        size = nodes_for(trace, window, utilisation)
        nodes.append((p.alias, size))
        members.append(_member(p, size, trace))
        jobs += (McJob(j, p.alias) for j in trace.jobs)
    return McInputs(tuple(jobs), tuple(members), tuple(nodes))


def split_itp(path: str | Path, *, days: float, utilisation: float = 0.85,
              plan: Sequence[MemberPlan] = ITP_PLAN, limit: int | None = None) -> McInputs:
    """The jobs one ITP file submits in its first `days` days (at most `limit`), dealt over
    the plan's members (`split_trace`)."""
    if not (math.isfinite(days) and days > 0):
        raise ValueError(f"days: must be a positive number, not {days}")
    loaded = load_itp(path, gpus_per_node=GPUS_PER_NODE)
    kept = [j for j in loaded.jobs if j.submit_time < days * DAY][:limit]
    return split_trace(Trace(tuple(kept), loaded.source), plan, utilisation=utilisation)


def split_trace(trace: Trace, plan: Sequence[MemberPlan], *, utilisation: float = 0.85
                ) -> McInputs:
    """One trace dealt over the plan's members in turn (the `trace` of each plan entry is
    not read); each member is sized for the jobs dealt to it."""
    if not plan:
        raise ValueError("plan: needs at least one member")
    dealt: list[list[McJob]] = [[] for _ in plan]
    for i, job in enumerate(trace.jobs):
        dealt[i % len(plan)].append(McJob(job, plan[i % len(plan)].alias))
    span = max((j.submit_time for j in trace.jobs), default=0.0) or DAY
    members, nodes = [], []
    for p, mine in zip(plan, dealt, strict=True):
        part = Trace(tuple(j.job for j in mine), trace.source)
        size = nodes_for(part, span, utilisation)
        nodes.append((p.alias, size))
        members.append(_member(p, size, part))
    return McInputs(tuple(j for d in dealt for j in d), tuple(members), tuple(nodes))


def _member(p: MemberPlan, size: int, trace: Trace) -> SimMember:
    description = with_trace_queues(parse_cluster_arg(f"{size}x{GPUS_PER_NODE}:{p.gpu_type}"),
                                    trace)
    cluster = MemberCluster(p.alias, f"sim://{p.alias}", ClusterKind.SHOAL,
                            priority=p.priority, gpu_type=p.gpu_type)
    return SimMember(cluster, description, p.speed)
