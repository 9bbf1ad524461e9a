"""The fairshare plugin: seed 002's `GpuPriorityCFS` score, which orders jobs by weighted
running time as CFS orders processes by virtual runtime.

A job's *weighted running time* (its score) is

    ( Σ over its running tasks  (now − task start) × resource score of the task
      + its earlier runs' service  (Job.attained_gpu_seconds × gpuWeight) ) ÷ priority weight

where a task's *resource score* is `gpuWeight × GPUs + cpuWeight × cores + memoryWeight ×
GiB` — GPU ≫ CPU ≫ memory by default, so the score reads as GPU-seconds — and the priority
weight is the job's priority class value (experiment 10, offline 100, normal 1000,
production 10000; at least 1). The seed multiplies by the priority, which would serve
high-priority jobs *last*; CFS divides by the weight, and so does Shoal (DESIGN.md §6): a
production job accrues score a thousand times slower than an experiment job.

The order key is the score a job will have after one more `quantum` seconds at its current
size: `score + rate × quantum`, where the rate is the resource score of what it holds now ÷
the priority weight. A job that just grew holds more and sorts further right at once, even
before its new tasks have run a second; that is what spreads the fairshare action's growth
over jobs instead of feeding the left-most one until it is full. A waiting job has rate 0:
its key is its earlier service, 0 for a new job. Ties fall to the next plugins' keys (the
priority plugin in a later tier of the `fairshare` profile), then to submission time.

The order moves with the clock alone (running jobs accrue score at different rates), so the
plugin is `time_dependent`. What other actions order, though, is waiting jobs, and a job
that holds nothing has a constant key: their order never changes by itself. Only a job that
both runs and waits — a default-scheduler job with tasks left to place — moves among them,
and no cheap formula says when its key crosses another's, so `next_change` asks for a cycle
one `quantum` on (CFS's scheduling period) while such a job exists, and says never
otherwise. Rebalancing between running jobs is the fairshare action's, which asks drivers
to come back itself (`Session.regrow_at`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from shoal.api.resources import Resources
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.registry import Arguments

if TYPE_CHECKING:
    from shoal.scheduler.session import Session

MIB_PER_GIB = 1024


class FairShareArguments(Arguments):
    gpu_weight: float = Field(
        1.0, alias="gpuWeight", gt=0, allow_inf_nan=False,
        description="resource score of one GPU; attained GPU-seconds count at this weight")
    cpu_weight: float = Field(
        0.01, alias="cpuWeight", ge=0, allow_inf_nan=False,
        description="resource score of one CPU core")
    memory_weight: float = Field(
        0.0001, alias="memoryWeight", ge=0, allow_inf_nan=False,
        description="resource score of one GiB of memory")
    quantum: float = Field(
        60.0, ge=0, allow_inf_nan=False,
        description="seconds of look-ahead in the order key (score + rate × quantum), and "
                    "the period of the cycles the plugin asks for while jobs run")


class FairShare:
    name = "fairshare"
    time_dependent = True
    """The order changes with the clock alone: drivers run cycles while jobs wait."""

    def __init__(self, arguments: FairShareArguments) -> None:
        self.gpu_weight = arguments.gpu_weight
        self.cpu_weight = arguments.cpu_weight
        self.memory_weight = arguments.memory_weight
        self.quantum = arguments.quantum
        self._session: Session | None = None
        self._keys: dict[str, float] = {}

    def open_session(self, session: Session) -> None:
        self._session = session
        self._keys = {}

    # ---- ordering -------------------------------------------------------------------------

    def job_order_key(self, job: JobInfo) -> tuple[Any, ...]:
        """Computed once per job per cycle, so other actions' order stays fixed as tasks
        come and go; the fairshare action re-keys with `key` itself."""
        value = self._keys.get(job.name)
        if value is None:
            value = self._keys[job.name] = self.key(job, self._now())
        return (value,)

    def preemption_key(self, job: JobInfo) -> tuple[Any, ...]:
        """Nothing: the score orders who starts and grows, and the fairshare action takes
        its own steps from the right-most; it gives the preempt and reclaim actions no right
        to evict and no victim order, so their victims go by class, then least work lost
        (`shoal.scheduler.victims`), as with las's class-only key."""
        del job
        return ()

    # ---- the score ------------------------------------------------------------------------

    def resource_score(self, request: Resources) -> float:
        """Σ weight × amount of one task's request (cores and GiB, not milli and MiB)."""
        return (self.gpu_weight * request.gpu + self.cpu_weight * request.cpu / 1000
                + self.memory_weight * request.memory / MIB_PER_GIB)

    def score(self, job: JobInfo, now: float) -> float:
        """Weighted running time as of `now` (module docstring)."""
        ran = 0.0
        for task in job.running:
            if task.started is not None and task.started < now:
                ran += (now - task.started) * self._task_score(job, task.ref.group)
        return (ran + job.job.attained_gpu_seconds * self.gpu_weight) / weight(job)

    def rate(self, job: JobInfo) -> float:
        """How fast the score grows while the job keeps what it holds now."""
        return sum(self._task_score(job, t.ref.group) for t in job.running) / weight(job)

    def key(self, job: JobInfo, now: float) -> float:
        """The score after one more quantum at the current size: the order key."""
        return self.score(job, now) + self.rate(job) * self.quantum

    def _task_score(self, job: JobInfo, group: str) -> float:
        return self.resource_score(job.job.group(group).resources)

    # ---- for drivers ----------------------------------------------------------------------

    def next_change(self, session: Session) -> float | None:
        """One quantum on while a job both runs and waits (module docstring); else None."""
        if any(job.running and job.pending for job in session.model.waiting.values()):
            return session.now + max(self.quantum, 1.0)
        return None

    def _now(self) -> float:
        if self._session is None:
            raise RuntimeError("the fairshare plugin orders jobs only within an open session")
        return self._session.now


def weight(job: JobInfo) -> int:
    """The priority weight the score is divided by: the class value, at least 1."""
    return max(job.priority, 1)
