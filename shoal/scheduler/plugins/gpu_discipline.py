"""The gpu-discipline plugin: GPU work brings the CPU to feed its GPUs, and CPU work never
strands a GPU (seed 002: "GPU is much more expensive than CPUs … a `TrainingJob` requires GPU
must require enough CPU resource for it").

Two rules, one knob each:

- `minCpuPerGpu` (default 1 CPU): every task group that asks GPUs must ask at least this much
  CPU per GPU per task. A job that does not is refused at submission, with the field at fault
  (`spec.taskGroups[i].resources.cpu`) and what it needs (`JobValid`); one already stored
  waits with that reason, so nothing stored is lost when an admin raises the minimum.
- `cpuReservedPerIdleGpu` (default: `minCpuPerGpu`; 0 turns it off): a CPU-only task (CPU,
  no GPU) may use a GPU node's CPU only down to this much per idle GPU there, so the node's
  idle GPUs can still be given to a GPU job. The rule lives in the node index
  (`shoal.core.nodes`: `ClusterState.set_cpu_reserve`), which answers every fit question of
  every action — allocate, backfill, elastic growth, preempt and reclaim placements — so no
  action can step around it. A task with GPUs may always use all of a node's CPU.

And CPU-only tasks go to nodes without GPUs first: the node index searches those first for
a CPU-only request in every profile (`CPU_ONLY` in `shoal.core.nodes`), and this plugin's
node score (`CPU_ONLY_NODE_SCORE`) outweighs the placement plugin's, so bin-packing does not
pull a CPU task onto a GPU node that happens to be fuller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from shoal.api.decisions import PendingKind, PendingReason
from shoal.api.resources import QuantityError, Resources, format_cpu, parse_cpu
from shoal.core.nodes import NodeState
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.registry import Arguments

if TYPE_CHECKING:
    from shoal.scheduler.session import Session

DEFAULT_MIN_CPU_PER_GPU = 1000
"""One CPU (in millicores) per GPU: enough to launch kernels and copy batches for one GPU;
the traces' replay gives 4 (`shoal.sim.trace.DEFAULT_CPU_PER_GPU`)."""

CPU_ONLY_NODE_SCORE = 10.0
"""A node without GPUs, for a CPU-only request: more than any placement score ([0, 1])."""

MAX_CPU_PER_GPU = 1_000_000
"""A thousand CPUs per GPU: anything above is a typing error, not a policy."""


def _cpu(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str | int | float):
        try:
            millicores = parse_cpu(value)
        except QuantityError as exc:
            raise ValueError(str(exc)) from None
        if millicores > MAX_CPU_PER_GPU:
            raise ValueError(f"at most {format_cpu(MAX_CPU_PER_GPU)} CPUs per GPU")
        return millicores
    return value


class GpuDisciplineArguments(Arguments):
    min_cpu_per_gpu: int = Field(
        default=DEFAULT_MIN_CPU_PER_GPU, ge=0, alias="minCpuPerGpu",
        description="CPU every task must ask per GPU it asks, as a CPU quantity (1, 500m); "
                    "0: no minimum")
    cpu_reserved_per_idle_gpu: int | None = Field(
        default=None, ge=0, alias="cpuReservedPerIdleGpu",
        description="CPU a CPU-only task leaves free on a node per idle GPU there, as a CPU "
                    "quantity; default: minCpuPerGpu; 0: no reserve")

    @field_validator("min_cpu_per_gpu", "cpu_reserved_per_idle_gpu", mode="before")
    @classmethod
    def _quantity(cls, value: Any) -> Any:
        return _cpu(value)


class GpuDiscipline:
    name = "gpu-discipline"

    def __init__(self, arguments: GpuDisciplineArguments) -> None:
        self.arguments = arguments
        self.min_cpu_per_gpu = arguments.min_cpu_per_gpu
        reserve = arguments.cpu_reserved_per_idle_gpu
        self.cpu_reserve = self.min_cpu_per_gpu if reserve is None else reserve

    def open_session(self, session: Session) -> None:
        session.cpu_reserve_per_idle_gpu = self.cpu_reserve

    def node_score(self, request: Resources, node: NodeState) -> float:
        if request.gpu or node.allocatable.gpu:
            return 0.0
        return CPU_ONLY_NODE_SCORE

    def job_valid(self, job: JobInfo) -> PendingReason | None:
        """The first task group asking GPUs with less CPU per task than they need."""
        least = self.min_cpu_per_gpu
        if not least:
            return None
        for index, group in enumerate(job.job.groups):
            request = group.resources
            need = request.gpu * least
            if request.gpu and request.cpu < need:
                return PendingReason(
                    PendingKind.UNSCHEDULABLE,
                    f"task group {group.name!r} asks {request.gpu} GPU"
                    f"{'s' if request.gpu != 1 else ''} with {format_cpu(request.cpu)} CPU "
                    f"per task; this cluster needs at least {format_cpu(least)} CPU per GPU "
                    f"(gpu-discipline minCpuPerGpu), so cpu: {format_cpu(need)} or more",
                    resource="cpu", predicate=self.name,
                    field=f"spec.taskGroups[{index}].resources.cpu")
        return None
